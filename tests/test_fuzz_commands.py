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

Violations are collected rather than raised at the first one, so one run counts
every failure (``-s`` prints them). Profiles (``--hypothesis-profile``): ``ci``
(the default; derandomized, about a minute) and ``long``.
"""
from __future__ import annotations

import contextlib
import dataclasses
import io
import os
import re
import shutil
import tempfile
from typing import Callable

import pytest
import tensorflow as tf
from hypothesis import given, settings
from hypothesis import strategies as st

from cli_helpers import COMMON, USR_DIR, digest_tree, train_tiny, with_flags
from fuzz_cases import (CHECKPOINTS, COMMANDS, DECODE_KEYS, DECODE_VALUES, FOLDERS,
                        HPARAM_KEYS, HPARAM_VALUES, INPUTS, OUTPUTS, RUN_ARGS, Command,
                        given_twice, must_refuse)
from t2t_lite.bin import t2t_attention, t2t_avg_all, t2t_datagen, t2t_decoder, t2t_trainer
from t2t_lite.output_paths import MANIFEST


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
    return {flag: os.path.join(root, value) if value in paths else value
            for flag, value in flag_values.items()}


def argv_of(command: Command, root: str, drawn: dict[str, str], twice: bool = False
            ) -> list[str]:
    """The valid invocation with the drawn flags in place of its own, or (``twice``)
    after its own: a flag given twice, as a script that appends to a command line does."""
    kept = [arg for arg in command.valid if twice or arg.split("=", 1)[0] not in drawn]
    argv = [re.sub(r"\{([^}]+)\}", lambda m: os.path.join(root, m.group(1)), arg)
            for arg in kept]
    return argv + [f"{flag}={value}" for flag, value in _resolve(root, drawn).items()]


def build_workspace(root) -> str:
    """The template every draw copies: see the module docstring."""
    data_dir, run_dir = train_tiny(root)
    os.rename(run_dir, root / "run")
    files = root / "files"
    files.mkdir()
    (files / "in.txt").write_text("0 1 1\n1 0\n")
    (files / "ref.txt").write_text("1 1 0\n0 1\n")
    (files / "notes.txt").write_text("a user's own notes\n")
    (files / "empty.txt").write_text("")
    (files / "bom.txt").write_bytes(b"\xef\xbb\xbf0 1 1\n1 0\n")
    (files / "nul.txt").write_bytes(b"0 1\x00 1\n1 0\n")
    (files / "crlf.txt").write_bytes(b"0 1 1\r\n1 0\r\n")
    (files / "latin1.txt").write_bytes(b"0 1\ncaf\xe9\n")
    (files / "plain.gz").write_text("not gzip at all\n")
    (files / "deep.trees").write_text("(S " * 5000 + "(NN a)" + ")" * 5000 + "\n")
    (files / "pairs.tsv").write_text("0 1\t1 0\n1 1\t1 1\n")
    (files / "gold.trees").write_text("(S (NP (DT The) (NN dog)) (VP (VBZ barks)))\n")
    (files / "test.trees").write_text("(S (NP (DT The)) (VP (NN dog) (VBZ barks)))\n")
    (files / "a_dir").mkdir()
    (root / "user_folder").mkdir()
    (root / "user_folder" / "thesis.tex").write_text("\\documentclass{article}\n")
    # A user's files named as t2t-datagen names its eval files.
    (root / "user_folder" / "tiny_reverse_binary.test.inputs").write_text("my inputs\n")
    (root / "user_folder" / "tiny_reverse_binary.dev.targets").write_text("my targets\n")
    (root / "empty_dir").mkdir()
    run = str(root / "run")
    assert t2t_decoder.main(RUN_ARGS[:1] + [f"--output_dir={run}",
                                            f"--decode_from_file={files / 'in.txt'}",
                                            f"--decode_to_file={files / 'prev.decoded'}"]) == 0
    assert t2t_avg_all.main([f"--model_dir={run}", f"--output_dir={root / 'avg'}",
                             "--n=2"]) == 0
    assert t2t_attention.main(RUN_ARGS[:1] + [f"--output_dir={run}", "--input=0 1",
                                              "--target=1 0", f"--to={root / 'attention'}",
                                              "--dpi=20"]) == 0
    # A run of another problem with the same shapes and vocabulary.
    assert t2t_datagen.main(["--problem=tiny_copy_binary", f"--t2t_usr_dir={USR_DIR}",
                             f"--data_dir={root / 'copy_data'}"]) == 0
    assert t2t_trainer.main(with_flags(COMMON, "--problem=tiny_copy_binary",
                                       f"--data_dir={root / 'copy_data'}",
                                       f"--output_dir={root / 'copy_run'}", "--train_steps=2",
                                       "--schedule=train")) == 0
    # Another run: same files, another problem.
    shutil.copytree(run, root / "other_run")
    record = (root / "other_run" / "hparams.json").read_text()
    (root / "other_run" / "hparams.json").write_text(
        record.replace('"tiny_reverse_binary"', '"algorithmic_identity_binary40"'))
    # Damaged runs: no index; an index naming a missing checkpoint; a truncated one.
    shutil.copytree(run, root / "no_index_run")
    os.remove(root / "no_index_run" / "checkpoint")
    shutil.copytree(run, root / "missing_ckpt_run")
    for suffix in (".index", ".data-00000-of-00001"):
        os.remove(root / "missing_ckpt_run" / f"ckpt-4{suffix}")
    shutil.copytree(run, root / "truncated_run")
    data = root / "truncated_run" / "ckpt-4.data-00000-of-00001"
    data.write_bytes(data.read_bytes()[:100])
    return str(root)


@dataclasses.dataclass
class Outcome:
    code: object
    err: str
    escaped: BaseException | None


def run_in_process(main: Callable, argv: list[str]) -> Outcome:
    out, err = io.StringIO(), io.StringIO()
    escaped = None
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as exit_info:
            code = exit_info.code
        except Exception as error:  # noqa: BLE001 - a traceback is what we look for
            code, escaped = None, error
    return Outcome(code, err.getvalue(), escaped)


def complete(command: Command, root: str, drawn: dict[str, str], argv: list[str]) -> str:
    """Why an exit-0 output is incomplete, or ''."""
    flags = dict(arg.split("=", 1) for arg in argv if "=" in arg)
    if command.name == "t2t-decoder" and "--decode_from_file" in flags:
        output = flags.get("--decode_to_file") or flags["--decode_from_file"] + ".decoded"
        with open(flags["--decode_from_file"], "rb") as f:
            wanted = len(f.read().decode("utf-8-sig").splitlines())
        with open(output, "rb") as f:
            got = len(f.read().splitlines())
        return "" if got == wanted else f"{got} output lines for {wanted} inputs"
    folder = {"t2t-avg-all": "--output_dir", "t2t-trainer": "--output_dir"}.get(command.name)
    if folder and not tf.train.latest_checkpoint(flags[folder]):
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
        before = digest_tree(workspace)
        # In the workspace, so that a path that means "here" (an empty one did) can
        # only damage the draw's copy, where it is seen.
        cwd = os.getcwd()
        os.chdir(workspace)
        try:
            outcome = run_in_process(command.main, argv)
        finally:
            os.chdir(cwd)
        after = digest_tree(workspace)
        declared = [os.path.normpath(p) for p in command.outputs(drawn) if p]
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
        shared = [os.path.normpath(p) for p in command.adds_to(drawn)]
        problems += [f"wrote {path}" for path in sorted(set(after) - set(before))
                     if not declared_output(path)
                     and not any(path.startswith(folder + os.sep) for folder in shared)]
        flags = [arg.partition("=")[::2] for arg in argv]
        refused = must_refuse(command, drawn) + [
            f"{flag} given twice" for flag in given_twice(flags)]
        if outcome.code == 0 and refused:
            problems.append(f"exit 0 with {', '.join(refused)}")
        if outcome.code == 0 and outcome.escaped is None:
            why = complete(command, workspace, drawn, argv)
            if why:
                problems.append(f"exit 0 but {why}")
        shown = f"{drawn} after its own flags" if twice else drawn
        return [f"{command.name} {shown}: {'; '.join(problems)}"] if problems else []
    finally:
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="session")
def template(tmp_path_factory):
    return build_workspace(tmp_path_factory.mktemp("fuzz_template"))


@pytest.mark.parametrize("command", COMMANDS, ids=[c.name for c in COMMANDS])
def test_whatever_is_typed_exits_0_or_2_and_loses_nothing(template, command, monkeypatch):
    # A valid draw trains for real, but a few steps at most.
    capped = t2t_trainer.train_options
    monkeypatch.setattr(t2t_trainer, "train_options", lambda args: dataclasses.replace(
        capped(args), train_steps=min(capped(args).train_steps, 6)))
    violations: list[str] = []
    scale = settings.default.max_examples / 100

    @settings(max_examples=max(1, int(command.examples * scale)))
    # One draw in five gives the drawn flags after the valid ones, not in their place.
    @given(invocations(command), st.sampled_from([False, False, False, False, True]))
    def draw(drawn, twice):
        violations.extend(check(command, template, drawn, twice))

    draw()
    print(f"\n{command.name}: {len(violations)} failing draws")
    for line in violations:
        print("  " + line)
    assert not violations, "\n".join(violations[:20])
