"""Property-based fuzzing of every command (issue 24): whatever a user types, a
command exits 0 or 2, never shows a traceback, leaves every file it did not
declare as its output byte for byte as it was, and an exit 0 leaves its output
complete.

Each draw starts from a fresh copy of one workspace (a trained tiny run, its
data, an averaged copy, earlier outputs of the decoder and of t2t-attention, and
a user's files), takes a command's valid flags and replaces one to three of them
(or, one draw in five, gives them again after its own: a flag given twice with two
values must be refused, since only the last would count) with values drawn for that
flag's kind: numbers at their range edges (0, -1,
huge, NaN, inf, empty, wrong type), hparams strings with such values, paths
that collide with the command's own inputs, with files of a run, with a folder
of unrelated files, and damaged inputs (truncated, BOM, NUL, CRLF, a directory
in place of a file, an index that disagrees with the checkpoints). The commands
run in-process. A valid draw really works; only the trainer's steps are capped
so that a valid run stays a few seconds long.

The table (the flags each command's draws may change, their values, the outputs
each may write, what must be refused) is tests/fuzz_cases.py.

Issue 61's families are drawn too: paths through links, ".." after a link, a literal
~ and missing folders (among the random draws, and each with every path flag that
names an output or a run). Runs that move: tests/test_fuzz_moved_runs.py.

Violations are collected rather than raised at the first one, so one run counts
every failure (``-s`` prints them). Profiles (``--hypothesis-profile``): ``ci``
(the default; derandomized, about a minute) and ``long``.
"""
from __future__ import annotations

import dataclasses
import os
import re
import shutil
import tempfile

import pytest
import tensorflow as tf
from hypothesis import given, settings
from hypothesis import strategies as st

from cli_helpers import digest_tree
from fuzz_cases import (BARE, CHECKPOINTS, COMMANDS, DECODE_KEYS, DECODE_VALUES, FOLDERS,
                        HPARAM_KEYS, HPARAM_VALUES, INPUTS, LINK_FOLDERS, LINK_OUTPUTS, OUTPUTS,
                        Command, given_twice, must_refuse, path_family, resolve_links)
from fuzz_runner import report_violations, run_in_process, template_digest, untrue_error
from t2t_lite.bin import t2t_trainer
from t2t_lite.decoding.file_decoding import RECORD_SUFFIX, Shard
from t2t_lite.output_manifest import MANIFEST


def _hparams_string(draw, keys: list[str], values: list[str]) -> str:
    pairs = draw(st.lists(st.tuples(st.sampled_from(keys), st.sampled_from(values)),
                          min_size=1, max_size=2))
    return ",".join(f"{key}={value}" for key, value in pairs)


@st.composite
def invocations(draw, command: Command) -> dict[str, str]:
    """1-3 of ``command``'s flags with drawn values (workspace paths unresolved)."""
    names = draw(st.lists(st.sampled_from(sorted(command.flags)), min_size=1, max_size=3,
                          unique=True))
    chosen = {}
    for name in names:
        value = draw(st.sampled_from(command.flags[name]))
        if value == "hparams":
            value = _hparams_string(draw, HPARAM_KEYS, HPARAM_VALUES)
        elif value == "decode":
            value = _hparams_string(draw, DECODE_KEYS, DECODE_VALUES)
        chosen[name] = value
    return chosen


PATH_KINDS = (INPUTS, OUTPUTS, FOLDERS, CHECKPOINTS)


def _resolve(root: str, flag_values: dict[str, str]) -> dict[str, str]:
    paths = {value for kind in PATH_KINDS for value in kind if value}
    # A ~ stays as typed: the shell left it unexpanded (HOME is the workspace's home/).
    return {flag: os.path.join(root, value) if value in paths and not value.startswith("~")
            else value for flag, value in flag_values.items()}


def argv_of(command: Command, root: str, drawn: dict[str, str], twice: bool = False
            ) -> list[str]:
    """The valid invocation with the drawn flags in place of its own, or (``twice``)
    after its own: a flag given twice, as a script that appends to a command line does."""
    kept = [arg for arg in command.valid if twice or arg.split("=", 1)[0] not in drawn]
    argv = [re.sub(r"\{([^}]+)\}", lambda m: os.path.join(root, m.group(1)), arg)
            for arg in kept]
    return argv + [flag if value is BARE else f"{flag}={value}"
                   for flag, value in _resolve(root, drawn).items()]


def complete(command: Command, root: str, drawn: dict[str, str], argv: list[str]) -> str:
    """Why an exit-0 output is incomplete, or ''."""
    flags = dict(arg.split("=", 1) for arg in argv if "=" in arg)
    if command.name == "t2t-decoder" and "--decode_from_file" in flags:
        output = flags.get("--decode_to_file") or flags["--decode_from_file"] + ".decoded"
        shards, worker = flags.get("--decode_shards", "1"), flags.get("--worker_id", "0")
        if shards != "1":  # a part (exit 0: the flags were good), with its record
            part = Shard(int(worker), int(shards)).part_path(os.path.join(root, output))
            return "" if os.path.isfile(part + RECORD_SUFFIX) else f"no part {part}"
        with open(flags["--decode_from_file"], "rb") as f:
            wanted = len(f.read().decode("utf-8-sig").splitlines())
        if not os.path.isfile(os.path.join(root, output)):  # a relative path: the draw's
            return f"no file {output}"
        with open(os.path.join(root, output), "rb") as f:
            got = len(f.read().splitlines())
        return "" if got == wanted else f"{got} output lines for {wanted} inputs"
    folder = {"t2t-avg-all": "--output_dir", "t2t-trainer": "--output_dir"}.get(command.name)
    # realpath: TensorFlow takes a ".." off the text, the OS after following a link.
    if folder and not tf.train.latest_checkpoint(os.path.realpath(flags[folder])):
        return f"no checkpoint in {flags[folder]}"
    if command.name == "t2t-exporter":
        made = "model.bin" if flags.get("--format") == "ctranslate2" else "saved_model.pb"
        if not os.path.isfile(os.path.join(flags["--export_dir"], made)):
            return f"no {made}"
    return ""


def check(command: Command, template: str, drawn: dict[str, str], twice: bool = False
          ) -> list[str]:
    """The violations of one draw."""
    root = tempfile.mkdtemp(prefix="fuzz_")
    try:
        workspace = os.path.join(root, "ws")
        shutil.copytree(template, workspace, symlinks=True)
        argv = argv_of(command, workspace, drawn, twice)
        before = template_digest(template)  # the fresh copy's, byte for byte
        # In the workspace, so that a path that means "here" (an empty one did) can
        # only damage the draw's copy, where it is seen.
        cwd, home = os.getcwd(), os.environ.get("HOME")
        os.chdir(workspace)
        os.environ["HOME"] = os.path.join(workspace, "home")
        try:
            outcome = run_in_process(command.main, argv)
        finally:
            os.chdir(cwd)
            if home is None:
                del os.environ["HOME"]
            else:
                os.environ["HOME"] = home
        after = digest_tree(workspace)
        resolved = resolve_links(drawn)
        declared = [os.path.normpath(p) for p in command.outputs(resolved) if p]
        problems = []
        if outcome.escaped is not None:
            problems.append(f"traceback: {type(outcome.escaped).__name__}: "
                            f"{str(outcome.escaped)[:200]}")
        elif outcome.code not in (0, 2):
            problems.append(f"exit {outcome.code}")
        if "Traceback" in outcome.err:
            problems.append("a traceback on stderr")
        def declared_output(path: str) -> bool:
            # Each folder's record of what the commands wrote in it is theirs to keep.
            return os.path.basename(path) == MANIFEST or any(
                path == d or path.startswith(d + os.sep) for d in declared)

        for path, digest in before.items():
            if not declared_output(path) and after.get(path) != digest:
                problems.append(f"{'removed' if path not in after else 'changed'} {path}")
        shared = [os.path.normpath(p) for p in command.adds_to(resolved)]
        problems += [f"wrote {path}" for path in sorted(set(after) - set(before))
                     if not declared_output(path)
                     and not any(path.startswith(folder + os.sep) for folder in shared)]
        flags = [arg.partition("=")[::2] for arg in argv]
        refused = must_refuse(command, drawn) + [
            f"{flag} given twice" for flag in given_twice(flags)]
        if outcome.code == 0 and refused:
            problems.append(f"exit 0 with {', '.join(refused)}")
        problems += untrue_error(outcome, argv, workspace)
        if outcome.code == 0 and outcome.escaped is None:
            why = complete(command, workspace, drawn, argv)
            if why:
                problems.append(f"exit 0 but {why}")
        shown = f"{drawn} after its own flags" if twice else drawn
        return [f"{command.name} {shown}: {'; '.join(problems)}"] if problems else []
    finally:
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def template(fuzz_template):
    return fuzz_template




@pytest.fixture
def few_steps(monkeypatch):
    """A valid draw trains for real, but a few steps at most."""
    capped = t2t_trainer.train_options
    monkeypatch.setattr(t2t_trainer, "train_options", lambda args, *rest: dataclasses.replace(
        capped(args, *rest), train_steps=min(capped(args, *rest).train_steps, 6)))


@pytest.mark.parametrize("command", COMMANDS, ids=[c.name for c in COMMANDS])
def test_whatever_is_typed_exits_0_or_2_and_loses_nothing(template, command, few_steps):
    violations: list[str] = []
    family = [0, 0]  # draws of issue 61's paths (links, .., ~, no folder), failing ones
    scale = settings.default.max_examples / 100

    @settings(max_examples=max(1, int(command.examples * scale)))
    # One draw in five gives the drawn flags after the valid ones, not in their place.
    @given(invocations(command), st.sampled_from([False, False, False, False, True]))
    def draw(drawn, twice):
        found = check(command, template, drawn, twice)
        violations.extend(found)
        if path_family(drawn):
            family[0] += 1
            family[1] += bool(found)

    draw()
    report_violations(violations, f"\n{command.name}: {len(violations)} failing draws; paths "
                                  f"through links, .., ~ or no folder: {family[0]} draws, "
                                  f"{family[1]} failing")


# Every path flag that names an output or a run, with each path of issue 61's family.
PATH_FLAGS = [("t2t-decoder", "--decode_to_file"), ("t2t-decoder", "--output_dir"),
              ("t2t-decoder", "--ensemble"), ("t2t-trainer", "--output_dir"),
              ("t2t-trainer", "--data_dir"), ("t2t-avg-all", "--output_dir"),
              ("t2t-avg-all", "--model_dir"), ("t2t-exporter", "--export_dir"),
              ("t2t-attention", "--to"), ("t2t-datagen", "--data_dir"),
              ("t2t-datagen", "--eval_files_dir")]


@pytest.mark.parametrize("name,flag", PATH_FLAGS, ids=[" ".join(pair) for pair in PATH_FLAGS])
def test_paths_through_links_dot_dot_tilde_and_missing_folders(template, name, flag,
                                                              few_steps):
    command = next(command for command in COMMANDS if command.name == name)
    values = LINK_OUTPUTS if flag == "--decode_to_file" else LINK_FOLDERS
    violations = [line for value in values for line in check(command, template, {flag: value})]
    print(f"\n{name} {flag}: {len(values)} draws, {len(violations)} failing")
    for line in violations:
        print("  " + line)
    assert not violations, "\n".join(violations)
