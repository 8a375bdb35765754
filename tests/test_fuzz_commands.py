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
names an output or a run), and runs that move (issue 85: the run and its data each
renamed, copied, linked to, moved under another parent or moved with a link left
behind, or other data; typed relative or absolute from the workspace, a folder in it
or one outside it; with or without --data_dir and with training hparams changed; each
draw runs every command that reads a run: the trainer's resume, the decoder,
t2t-avg-all, the exporter and t2t-attention).

Violations are collected rather than raised at the first one, so one run counts
every failure (``-s`` prints them). Profiles (``--hypothesis-profile``): ``ci``
(the default; derandomized, about a minute) and ``long``.
"""
from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import logging
import os
import re
import shutil
import tempfile
from typing import Callable

import pytest
import tensorflow as tf
from hypothesis import example, given, settings
from hypothesis import strategies as st

from cli_helpers import COMMON, USR_DIR, Said, digest_tree, train_tiny, with_flags
from fuzz_cases import (CHECKPOINTS, COMMANDS, DATA_MOVES, DECODE_KEYS, DECODE_VALUES,
                        FOLDERS, HPARAM_KEYS, HPARAM_VALUES, INPUTS, LINK_FOLDERS,
                        LINK_OUTPUTS, MOVE_CWDS, MOVES, OUTPUTS, RESUME_HPARAMS, RUN_ARGS,
                        RUN_COMMANDS, Command, given_twice, moved_path, moved_run_refusal,
                        must_refuse, path_family, resolve_links)
from message_truth import untrue
from t2t_lite.bin import (t2t_attention, t2t_avg_all, t2t_datagen, t2t_decoder,
                          t2t_exporter, t2t_trainer)
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
    (root / "home").mkdir()  # HOME in a draw: a ~ that is expanded stays in the workspace
    links = root / "links"
    links.mkdir()
    for name, target in (("in.txt", "../files/in.txt"), ("dangling.txt", "../files/gone.txt"),
                         ("up", "../files/a_dir"), ("run", "../run"),
                         ("dangling_dir", "../nowhere")):
        os.symlink(target, links / name)
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
    # A run trained with relative paths in a folder that is gone since (no path a
    # checkpoint or input state saved may lead anywhere: issue 85's traceback hid behind
    # shards still at the old path), and data of the same vocabulary, other train shards.
    origin = root / "origin"
    shutil.copytree(root / "data", origin / "data")
    cwd = os.getcwd()
    os.chdir(origin)
    try:
        assert t2t_trainer.main(COMMON + ["--data_dir=data", "--output_dir=rel_run",
                                          "--train_steps=2", "--schedule=train"]) == 0
    finally:
        os.chdir(cwd)
    os.rename(origin / "rel_run", root / "rel_run")
    shutil.rmtree(origin)
    shutil.copytree(root / "data", root / "other_data")
    for shard in (root / "other_data").glob("*-train-*"):
        records = list(tf.data.TFRecordDataset(str(shard)).as_numpy_iterator())
        with tf.io.TFRecordWriter(str(shard)) as writer:
            for record in records[::-1]:
                writer.write(record)
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


def untrue_error(outcome: Outcome, argv: list[str], cwd: str) -> list[str]:
    """What a refusal's line claims that is false (tests/message_truth.py)."""
    if outcome.code != 2:
        return []
    errors = [line for line in outcome.err.splitlines() if ": error: " in line]
    return [f"untrue line ({claim}): {errors[-1][:200]}"
            for claim in (untrue(errors[-1], argv, cwd) if errors else [])]


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
        before = digest_tree(workspace)
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


@pytest.fixture(scope="session")
def template(tmp_path_factory):
    return build_workspace(tmp_path_factory.mktemp("fuzz_template"))


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
    print(f"\n{command.name}: {len(violations)} failing draws; paths through links, .., ~ "
          f"or no folder: {family[0]} draws, {family[1]} failing")
    for line in violations:
        print("  " + line)
    assert not violations, "\n".join(violations[:20])


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


# Runs that move (issues 61 and 85): see fuzz_cases.MOVES. Each draw moves the run (trained
# with relative paths in a folder that is gone since) and its data, then runs every command
# that reads a run on the moved paths: each works (the trainer's resume exact: the same
# step on, the input where it was) or refuses in one line naming the flag to give.
MOVE_DRAWS = 2  # per ci run (x10 under --hypothesis-profile=long), and the example below


def move_folder(ws: str, name: str, how: str) -> str:
    """Moves ``ws/name`` ``how`` (fuzz_cases.MOVES); its path in ``ws`` now."""
    new = moved_path(name, how)
    source, target = os.path.join(ws, name), os.path.join(ws, new)
    elsewhere = os.path.join("elsewhere", "deeper", name)  # under another parent
    if how in ("reparent", "linked_back"):
        os.makedirs(os.path.join(ws, "elsewhere", "deeper"), exist_ok=True)
    if how in ("rename", "reparent"):
        os.rename(source, target)
    elif how == "copy":
        shutil.copytree(source, target, symlinks=True)
    elif how == "link":  # links/NAME -> ../NAME
        os.symlink(os.path.join("..", name), target)
    elif how == "linked_back":  # NAME -> elsewhere/deeper/NAME
        os.rename(source, os.path.join(ws, elsewhere))
        os.symlink(elsewhere, source)
    return new


def moved_argv(command: str, path: Callable[[str], str], run: str, data: str | None,
               hparams: str, export_format: str) -> list[str]:
    """``command``'s invocation on ``run`` (and ``data``: None leaves --data_dir out), its
    outputs in the workspace's new folder out/; ``path`` types a workspace path."""
    data_flag = [f"--data_dir={path(data)}"] if data else []
    usr = f"--t2t_usr_dir={USR_DIR}"
    return {
        "t2t-trainer": [usr, f"--output_dir={path(run)}", "--train_steps=4",
                        "--schedule=train"] + ([f"--hparams={hparams}"] if hparams else []),
        "t2t-decoder": [usr, f"--output_dir={path(run)}",
                        f"--decode_from_file={path('files/in.txt')}",
                        f"--decode_to_file={path('out/decoded.txt')}"],
        "t2t-avg-all": [f"--model_dir={path(run)}", f"--output_dir={path('out/avg')}", "--n=2"],
        "t2t-exporter": [usr, f"--output_dir={path(run)}", f"--export_dir={path('out/export')}",
                         f"--format={export_format}"],
        "t2t-attention": [usr, f"--output_dir={path(run)}", "--input=0 1 1", "--target=1 1 0",
                          f"--to={path('out/attention')}", "--dpi=20"],
    }[command] + (data_flag if command != "t2t-avg-all" else [])


MAINS = {"t2t-trainer": t2t_trainer.main, "t2t-decoder": t2t_decoder.main,
         "t2t-avg-all": t2t_avg_all.main, "t2t-exporter": t2t_exporter.main,
         "t2t-attention": t2t_attention.main}
# What a command's exit 0 leaves (a workspace path), beside its files in out/.
MADE = {"t2t-decoder": "out/decoded.txt", "t2t-avg-all": "out/avg/checkpoint",
        "t2t-attention": "out/attention/index.html"}
EXPORTED = {"saved_model": "out/export/saved_model.pb", "ctranslate2": "out/export/model.bin"}
# Mostly CTranslate2's (0.3 s; a SavedModel takes 5 s to trace): both read the run alike.
EXPORT_FORMATS = ["ctranslate2", "ctranslate2", "ctranslate2", "saved_model"]


def check_moved_run(template: str, run_move: str, data_move: str, relative: bool, cwd: str,
                    data_given: bool, hparams: str, export_format: str) -> list[str]:
    """The violations of one draw: each command in RUN_COMMANDS on the moved run."""
    root = tempfile.mkdtemp(prefix="fuzz_move_")
    try:
        ws = os.path.join(root, "ws")
        shutil.copytree(template, ws, symlinks=True)
        os.makedirs(os.path.join(root, "outside"))
        os.makedirs(os.path.join(ws, "out"))
        # As if trained here: hparams.json names the workspace's data (it was trained in a
        # folder that is gone, so no saved path may lead anywhere).
        record_path = os.path.join(ws, "rel_run", "hparams.json")
        with open(record_path) as f:
            record = json.load(f)
        record["data_dir"] = os.path.join(ws, "data")
        with open(record_path, "w") as f:
            json.dump(record, f)
        run = move_folder(ws, "rel_run", run_move)
        data = move_folder(ws, "data", data_move) if data_move != "other" else "other_data"
        real_run = os.path.relpath(os.path.realpath(os.path.join(ws, run)),
                                   os.path.realpath(ws))
        here = os.path.join(ws, cwd)

        def path(name: str) -> str:
            full = os.path.join(ws, name)
            return os.path.relpath(full, here) if relative else full

        problems = []
        for command in ("t2t-decoder", "t2t-avg-all", "t2t-exporter", "t2t-attention",
                        "t2t-trainer"):  # the readers on the run as it moved, then a resume
            argv = moved_argv(command, path, run, data if data_given else None, hparams,
                              export_format)
            made = {**MADE, "t2t-exporter": EXPORTED[export_format]}.get(command)
            before = digest_tree(ws)
            previous, said = os.getcwd(), Said()
            os.chdir(here)
            logger = logging.getLogger()
            level = logger.level
            logger.addHandler(said)
            logger.setLevel(logging.INFO)  # the trainer says where its input continues
            try:
                outcome = run_in_process(MAINS[command], argv)
            finally:
                os.chdir(previous)
                logger.removeHandler(said)
                logger.setLevel(level)
            after = digest_tree(ws)
            changed = sorted(p for p in set(before) | set(after)
                             if before.get(p) != after.get(p)
                             and os.path.basename(p) != MANIFEST)
            found = []
            lines = outcome.err.strip().splitlines()
            if outcome.escaped is not None or "Traceback" in outcome.err:
                found.append(f"traceback: {outcome.escaped or outcome.err[-300:]}")
            elif outcome.code not in (0, 2):
                found.append(f"exit {outcome.code}")
            must_name = moved_run_refusal(command, data_move, data_given, hparams)
            if outcome.code == 0 and must_name:
                found.append("exit 0, though it must be refused")
            if outcome.code == 2 and not must_name:
                found.append(f"refused: {lines[-1:]}")
            if outcome.code == 2 and must_name and not (lines and must_name in lines[-1]):
                found.append(f"refused without naming {must_name}: {lines[-1:]}")
            if outcome.code == 2 and lines and "t2t-datagen" in lines[-1]:
                found.append(f"moved data to make again: {lines[-1:]}")  # it is all there
            if outcome.code == 2 and changed:
                found.append(f"refused but changed {changed[:3]}")
            found += untrue_error(outcome, argv, here)
            if os.listdir(os.path.join(root, "outside")):
                found.append(f"wrote {os.listdir(os.path.join(root, 'outside'))} in the "
                             "working folder")
            own = real_run if command == "t2t-trainer" else "out"
            if outcome.code == 0 and [p for p in changed if not p.startswith(own + os.sep)]:
                found.append(f"changed outside {own}: "
                             f"{[p for p in changed if not p.startswith(own + os.sep)][:3]}")
            if outcome.code == 0 and made and not os.path.isfile(os.path.join(ws, made)):
                found.append(f"exit 0 but no {made}")
            if outcome.code == 0 and command == "t2t-trainer":
                with open(os.path.join(ws, real_run, "hparams.json")) as f:
                    named = json.load(f)["data_dir"]
                if os.path.realpath(named) != os.path.realpath(os.path.join(ws, data)):
                    found.append(f"hparams.json names {named}, not {data}")
                latest = tf.train.latest_checkpoint(os.path.join(ws, real_run)) or ""
                if not latest.endswith("ckpt-4"):
                    found.append(f"no checkpoint of step 4 ({latest or 'none'})")
                if "the input continues where step 2 left it" not in said.lines:
                    found.append("the input did not continue: "
                                 f"{[line for line in said.lines if 'input' in line][:2]}")
            if found:
                problems.append(f"{command}: {'; '.join(found)}")
        shown = (f"run {run_move} ({run}), data {data_move} ({data}), "
                 f"{'relative' if relative else 'absolute'} paths from {cwd or '.'}, "
                 f"{'with' if data_given else 'without'} --data_dir"
                 + (f", --hparams={hparams}" if hparams else "") + f", {export_format}")
        print(f"  {shown}: {len(problems)} of {len(RUN_COMMANDS)} commands failing")
        return [f"{shown}: {line}" for line in problems]
    finally:
        shutil.rmtree(root, ignore_errors=True)


@pytest.mark.slow  # a handful of draws of five commands each
def test_moved_runs_work_or_are_refused_in_one_line(template):
    violations: list[str] = []
    draws = [0]
    print()

    @settings(max_examples=max(1, int(MOVE_DRAWS * settings.default.max_examples / 100)))
    @given(st.sampled_from(MOVES), st.sampled_from(DATA_MOVES), st.booleans(),
           st.sampled_from(MOVE_CWDS), st.sampled_from([True, True, True, False]),
           st.sampled_from(RESUME_HPARAMS), st.sampled_from(EXPORT_FORMATS))
    # Issue 85's report: the data renamed, the new --data_dir given.
    @example("stay", "rename", False, "", True, "", "saved_model")
    # The data moved under another parent and no --data_dir: the readers ask for it (1 s).
    @example("link", "reparent", True, "../outside", False, "", "ctranslate2")
    def draw(run_move, data_move, relative, cwd, data_given, hparams, export_format):
        draws[0] += 1
        violations.extend(check_moved_run(template, run_move, data_move, relative, cwd,
                                          data_given, hparams, export_format))

    draw()
    print(f"runs that move: {draws[0]} draws of {len(RUN_COMMANDS)} commands, "
          f"{len(violations)} failing")
    for line in violations:
        print("  " + line)
    assert not violations, "\n".join(violations[:20])
