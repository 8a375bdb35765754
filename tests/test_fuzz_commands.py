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

Violations are collected rather than raised at the first one, so one run counts
every failure (``-s`` prints them). Profiles (``--hypothesis-profile``): ``ci``
(the default; derandomized, about a minute) and ``long``.
"""
from __future__ import annotations

import contextlib
import dataclasses
import hashlib
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

from cli_helpers import COMMON, USR_DIR, train_tiny, with_flags
from t2t_lite.output_paths import MANIFEST
from t2t_lite.bin import (t2t_attention, t2t_avg_all, t2t_bleu, t2t_datagen, t2t_decoder,
                          t2t_exporter, t2t_parse_eval, t2t_trainer)

RUN_ARGS = [f"--t2t_usr_dir={USR_DIR}", "--output_dir={run}"]

# Values by kind. Sizes that would allocate gigabytes or loop for hours are left
# out: they are valid values, and the fuzzer checks guards, not the machine.
INTS = ["0", "-1", "1", "3", "1000000000000", "nan", "inf", "", "two", "1.5", "-0", "1e3"]
FLOATS = ["0", "-1", "0.5", "1e999", "nan", "inf", "-inf", "", "x", "1e-300"]
HPARAM_VALUES = ["0", "-1", "1", "3", "1.5", "0.99", "nan", "inf", "-inf", "1e999", "",
                 "true", "[1,2]", "[]", "abc"]
HPARAM_KEYS = ["hidden_size", "num_heads", "filter_size", "num_hidden_layers",
               "layer_prepostprocess_dropout", "attention_dropout", "relu_dropout",
               "label_smoothing", "learning_rate", "learning_rate_warmup_steps",
               "batch_size", "max_length", "optimizer", "dtype", "word_dropout",
               "clip_grad_norm", "optimizer_adam_beta1", "optimizer_adam_epsilon",
               "gradient_accumulation_steps", "length_bucket_step", "nope"]
DECODE_KEYS = ["beam_size", "alpha", "extra_length", "batch_size", "return_beams",
               "write_beam_scores", "max_input_length", "length_bucket", "stop_rule", "beams"]
DECODE_VALUES = ["0", "-1", "1", "2", "1.5", "nan", "inf", "-inf", "1e999", "", "true",
                 "beam_finished",
                 "abc"]
# Paths (relative to the draw's workspace; "" stays empty).
INPUTS = ["files/in.txt", "files/absent.txt", "files/a_dir", "files/empty.txt",
          "files/bom.txt", "files/nul.txt", "files/crlf.txt", "files/latin1.txt",
          "files/plain.gz", "files/deep.trees", "files/pairs.tsv", "files/gold.trees",
          "run/hparams.json", "run/checkpoint", "files/prev.decoded", ""]
OUTPUTS = ["files/new_out.txt", "files/in.txt", "files/ref.txt", "files/prev.decoded",
           "files/notes.txt", "files/a_dir", "run/hparams.json", "run/checkpoint",
           "run/new.txt", "files/notes.txt/child", "user_folder/x.txt", "files/pairs.tsv",
           "data/vocab.tiny_reverse_binary.txt", ""]
FOLDERS = ["new_dir", "run", "other_run", "avg", "user_folder", "empty_dir", "files/notes.txt",
           "data", "run/sub", "attention", "no_index_run", "missing_ckpt_run",
           "truncated_run", ""]
# Inputs no command may accept with exit 0.
DAMAGED = {"files/absent.txt", "files/a_dir", "files/nul.txt", "files/latin1.txt",
           "files/plain.gz",
           "copy_run/ckpt-2"}  # a checkpoint of another problem (same shapes and vocabulary)
# Values no flag or hparam of the drawn ones accepts (--seed takes any finite int).
REFUSED = {"nan", "inf", "-inf", "1e999", "-1", "", "two", "x", "abc", "[1,2]", "[]"}
# Models and hparams sets: a pair whose set is not made for its model must be refused
# (the set's keys the model does not read would be ignored).
# The run's problem, one with the same shapes and vocabulary size, none.
PROBLEMS = ["tiny_reverse_binary", "tiny_copy_binary", "nope", ""]
MODELS = ["transformer", "lstm_seq2seq", "lstm_seq2seq_attention_luong", "nope"]
SETS = ["my_very_small_transformer", "lstm_luong_multi30k", "lstm_seq2seq_multi30k", "nope"]
MADE_FOR = {("transformer", "my_very_small_transformer"),
            ("lstm_seq2seq_attention_luong", "lstm_luong_multi30k"),
            ("lstm_seq2seq", "lstm_seq2seq_multi30k")}
CHECKPOINTS = ["run/ckpt-4", "run/ckpt-99", "truncated_run/ckpt-4", "files/notes.txt",
               "run", "copy_run/ckpt-2", ""]


@dataclasses.dataclass
class Command:
    name: str
    main: Callable
    flags: dict[str, list[str]]  # flag -> the values a draw may give it
    valid: list[str]             # a working invocation ("{run}" etc. are workspace paths)
    # The outputs a draw may legitimately write (new, or the command's own earlier
    # output), as workspace paths; anything else must be left as it was.
    outputs: Callable[[dict[str, str]], list[str]]
    examples: int                # draws in the ci profile
    # Folders the command may add new files to, changing none that are there (a
    # data dir holds many problems' files, as in tensor2tensor).
    adds_to: Callable[[dict[str, str]], list[str]] = lambda drawn: []


NEW = ("new_dir", "empty_dir")  # a folder that does not exist yet, an empty one
RUNS = ("run", "no_index_run", "missing_ckpt_run", "truncated_run")  # one run, damaged


def decoder_outputs(drawn: dict[str, str]) -> list[str]:
    target = drawn.get("--decode_to_file", "files/new_out.txt")
    if not target:  # the default: next to the file read
        source = drawn.get("--score_file") or drawn.get("--decode_from_file", "files/in.txt")
        suffix = ".scores" if "--score_file" in drawn else ".decoded"
        target = source + suffix if source.startswith("files/") else ""
    return [target] if target in ("files/new_out.txt", "user_folder/x.txt",
                                  "files/prev.decoded", "files/in.txt.decoded",
                                  "files/pairs.tsv.scores") else []


def trainer_outputs(drawn: dict[str, str]) -> list[str]:
    # Its own run, damaged or not, is the trainer's to resume (or to refuse).
    output_dir = drawn.get("--output_dir", "run")
    return [output_dir] if output_dir in (*RUNS, *NEW) else []


def avg_outputs(drawn: dict[str, str]) -> list[str]:
    output_dir = drawn.get("--output_dir", "new_dir")
    own = output_dir == "avg" and drawn.get("--model_dir", "run") == "run"
    return [output_dir] if output_dir in NEW or own else []


def exporter_outputs(drawn: dict[str, str]) -> list[str]:
    export_dir = drawn.get("--export_dir", "new_dir")
    inside_its_run = export_dir == "run/sub" and drawn.get("--output_dir", "run") == "run"
    return [export_dir] if export_dir in NEW or inside_its_run else []


def attention_outputs(drawn: dict[str, str]) -> list[str]:
    folder = drawn.get("--to", "new_dir")
    return [folder] if folder in (*NEW, "attention") else []


def datagen_folders(drawn: dict[str, str]) -> list[str]:
    """Its data, download and eval-file folders, unless they are (inside) a run."""
    folders = {"--data_dir": "data", "--eval_files_dir": "new_dir", **drawn}
    return [folders[flag] for flag in ("--data_dir", "--tmp_dir", "--eval_files_dir")
            if folders.get(flag) and folders[flag] not in (*RUNS, "other_run", "avg",
                                                           "run/sub")]


COMMANDS = [
    Command("t2t-decoder", t2t_decoder.main, {
        "--output_dir": FOLDERS, "--decode_from_file": INPUTS, "--decode_to_file": OUTPUTS,
        "--decode_reference": INPUTS, "--decode_hparams": ["decode"],
        "--checkpoint_path": CHECKPOINTS, "--score_file": INPUTS, "--hparams": ["hparams"],
        "--ensemble": FOLDERS, "--decode_shards": INTS, "--problem": PROBLEMS,
        "--model": MODELS, "--hparams_set": SETS, "--data_dir": FOLDERS},
        RUN_ARGS + ["--decode_from_file={files/in.txt}", "--decode_to_file={files/new_out.txt}"],
        decoder_outputs, 30),
    Command("t2t-trainer", t2t_trainer.main, {
        "--output_dir": FOLDERS, "--data_dir": FOLDERS, "--hparams": ["hparams"],
        "--train_steps": INTS, "--eval_every_steps": INTS, "--save_checkpoints_steps": INTS,
        "--keep_checkpoint_max": INTS, "--train_minutes": FLOATS, "--log_every_steps": INTS,
        "--eval_batches": INTS, "--save_checkpoints_minutes": FLOATS, "--seed": INTS,
        "--model": MODELS, "--hparams_set": SETS,
        "--schedule": ["train", "evaluate", "continuous_train_and_eval", "nope", ""]},
        COMMON + ["--data_dir={data}", "--output_dir={run}", "--train_steps=6",
                  "--schedule=train", "--log_every_steps=1"], trainer_outputs, 10),
    Command("t2t-avg-all", t2t_avg_all.main, {
        "--model_dir": FOLDERS, "--output_dir": FOLDERS, "--n": INTS,
        "--checkpoint_path": CHECKPOINTS},
        ["--model_dir={run}", "--output_dir={new_dir}", "--n=2"], avg_outputs, 25),
    Command("t2t-exporter", t2t_exporter.main, {
        "--output_dir": FOLDERS, "--export_dir": FOLDERS, "--checkpoint_path": CHECKPOINTS,
        "--decode_hparams": ["decode"], "--format": ["saved_model", "ctranslate2", "onnx", ""],
        "--problem": PROBLEMS, "--model": MODELS, "--hparams_set": SETS},
        RUN_ARGS + ["--export_dir={new_dir}"], exporter_outputs, 8),
    Command("t2t-attention", t2t_attention.main, {
        "--output_dir": FOLDERS, "--to": FOLDERS, "--input": ["0 1", "", " ", "\x00"],
        "--dpi": INTS, "--checkpoint_path": CHECKPOINTS, "--problem": PROBLEMS,
        "--model": MODELS, "--hparams_set": SETS},
        RUN_ARGS + ["--input=0 1 1", "--target=1 1 0", "--to={new_dir}", "--dpi=20"],
        attention_outputs, 6),
    Command("t2t-bleu", t2t_bleu.main, {
        "--translation": INPUTS, "--reference": INPUTS, "--source": INPUTS,
        "--length_buckets": ["10,20", "", "x", "-1", "nan", "5,5", "1e999"],
        "--language": ["de", "fr", "en", "xx", ""]},
        ["--translation={files/in.txt}", "--reference={files/ref.txt}"], lambda f: [], 25),
    Command("t2t-parse-eval", t2t_parse_eval.main, {
        "--gold": INPUTS, "--test": INPUTS, "--max_length": INTS},
        ["--gold={files/gold.trees}", "--test={files/gold.trees}"], lambda f: [], 25),
    Command("t2t-datagen", t2t_datagen.main, {
        "--data_dir": FOLDERS, "--tmp_dir": FOLDERS,
        # Fewer folders than FOLDERS, so that a user's folder is drawn often.
        "--eval_files_dir": ["new_dir", "user_folder", "run", "data", "files/notes.txt", ""],
        "--problem": ["tiny_reverse_binary", "nope", ""], "--eval_split": ["dev", "val", ""]},
        ["--problem=tiny_reverse_binary", f"--t2t_usr_dir={USR_DIR}", "--data_dir={data}",
         "--eval_files_dir={new_dir}"],
        lambda drawn: [], 20, adds_to=datagen_folders),
]


def _hparams_string(draw, keys: list[str], values: list[str]) -> str:
    pairs = draw(st.lists(st.tuples(st.sampled_from(keys), st.sampled_from(values)),
                          min_size=1, max_size=2))
    return ",".join(f"{key}={value}" for key, value in pairs)


def _pairs(hparams: str) -> list[tuple[str, str]]:
    """The (key, value) pairs of an hparams string; a list value keeps its commas."""
    return re.findall(r"([^=,]+)=(\[[^\]]*\]|[^,]*)", hparams)


def _a_key_twice(hparams: str) -> bool:
    """Whether ``hparams`` gives one key two values (only the last would count)."""
    values: dict[str, set[str]] = {}
    for key, raw in _pairs(hparams):
        values.setdefault(key, set()).add(raw)
    return any(len(raws) > 1 for raws in values.values())


RUN_READERS = ("t2t-decoder", "t2t-exporter", "t2t-attention")
RUN_NAMES = {"--problem": "tiny_reverse_binary", "--model": "transformer",
             "--hparams_set": "my_very_small_transformer"}


def must_refuse(command: Command, drawn: dict[str, str]) -> list[str]:
    """The drawn flags whose values no command may accept."""
    refused = []
    for flag, value in drawn.items():
        kind = command.flags[flag]
        if (kind is INTS or kind is FLOATS) and value in REFUSED - ({"-1"} if flag == "--seed" else set()):
            refused.append(flag)
        elif flag.endswith("hparams") and any(
                key in ("nope", "beams") or raw in REFUSED for key, raw in _pairs(value)):
            refused.append(flag)
        elif flag.endswith("hparams") and _a_key_twice(value):
            refused.append(f"{flag} giving a key twice")
        elif value in DAMAGED:
            refused.append(flag)
    newest = drawn.get("--checkpoint_path")
    if (command.name == "t2t-avg-all" and newest
            and os.path.dirname(newest) != drawn.get("--model_dir", "run")):
        refused.append("--checkpoint_path of another run")  # an average of two runs
    if command.name in RUN_READERS:  # a name the run was not trained with
        refused += [f"{flag} of another run" for flag, own in RUN_NAMES.items()
                    if drawn.get(flag, own) not in (own, "")]
    if "--model" in drawn or "--hparams_set" in drawn:
        pair = (drawn.get("--model", "transformer"),
                drawn.get("--hparams_set", "my_very_small_transformer"))
        if pair not in MADE_FOR:
            refused.append("--model with --hparams_set")
    return refused


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


def digest_tree(root: str) -> dict[str, str]:
    found = {}
    for folder, _, names in os.walk(root):
        for name in names:
            path = os.path.join(folder, name)
            with open(path, "rb") as f:
                found[os.path.relpath(path, root)] = hashlib.sha256(f.read()).hexdigest()
    return found


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


def given_twice(argv: list[str]) -> list[str]:
    """The flags ``argv`` gives twice with different values (only the last would count)."""
    values: dict[str, set[str]] = {}
    for arg in argv:
        name, _, value = arg.partition("=")
        values.setdefault(name, set()).add(value)
    return [f"{name} given twice" for name, seen in values.items() if len(seen) > 1]


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
        refused = must_refuse(command, drawn) + given_twice(argv)
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


@pytest.fixture(scope="module")
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
