"""The fuzzer's table (tests/test_fuzz_commands.py runs it): for each command, the
flags a draw may change and the values it may give them (by kind: numbers at their
range edges, hparams, paths that collide with inputs, runs and a user's files,
damaged inputs), the outputs it may write, and the drawn values no command may
accept with exit 0."""
from __future__ import annotations

import dataclasses
import os
import re
from typing import Callable

from cli_helpers import COMMON, USR_DIR
from t2t_lite.bin import (t2t_attention, t2t_avg_all, t2t_bleu, t2t_datagen, t2t_decoder,
                          t2t_exporter, t2t_parse_eval, t2t_trainer)
from t2t_lite.decoding.file_decoding import RECORD_SUFFIX, Shard

RUN_ARGS = [f"--t2t_usr_dir={USR_DIR}", "--output_dir={run}"]

# Values by kind. Sizes that would allocate gigabytes or loop for hours are left
# out: they are valid values, and the fuzzer checks guards, not the machine.
INTS = ["0", "-1", "1", "3", "1000000000000", "nan", "inf", "", "two", "1.5", "-0", "1e3"]
FLOATS = ["0", "-1", "0.5", "1e999", "nan", "inf", "-inf", "", "x", "1e-300"]
HPARAM_VALUES = ["0", "-1", "1", "3", "1.5", "0.99", "nan", "inf", "-inf", "1e999", "",
                 "true", "[1,2]", "[]", "abc", "dot_product_relative", "none", "linear_warmup"]
HPARAM_KEYS = ["hidden_size", "num_heads", "filter_size", "num_hidden_layers",
               "layer_prepostprocess_dropout", "attention_dropout", "relu_dropout",
               "label_smoothing", "learning_rate", "learning_rate_warmup_steps",
               "batch_size", "max_length", "optimizer", "dtype", "word_dropout",
               "clip_grad_norm", "optimizer_adam_beta1", "optimizer_adam_epsilon",
               "gradient_accumulation_steps", "length_bucket_step", "self_attention_type",
               "max_relative_position", "position_embedding", "learning_rate_schedule",
               "moving_average_decay", "sentencepiece_alpha", "sentencepiece_nbest_size",
               "guided_alignment_weight", "nope"]
DECODE_KEYS = ["beam_size", "alpha", "extra_length", "batch_size", "batch_type",
               "read_window_lines", "parallel_batches", "return_beams",
               "write_beam_scores", "max_input_length", "length_bucket", "stop_rule", "beams",
               "sampling_method", "sampling_temp", "sampling_keep_top_k",
               "sampling_keep_top_p", "num_samples", "sampling_seed"]
DECODE_VALUES = ["0", "-1", "1", "2", "1.5", "nan", "inf", "-inf", "1e999", "", "true",
                 "beam_finished", "random", "argmax", "0.5", "tokens", "sentences",
                 "abc"]
# Paths (relative to the draw's workspace; "" stays empty).
INPUTS = ["files/in.txt", "files/absent.txt", "files/a_dir", "files/empty.txt",
          "files/bom.txt", "files/nul.txt", "files/crlf.txt", "files/latin1.txt",
          "files/plain.gz", "files/deep.trees", "files/pairs.tsv", "files/gold.trees",
          "files/test.trees",
          "run/hparams.json", "run/checkpoint", "files/prev.decoded", ""]
OUTPUTS = ["files/new_out.txt", "files/in.txt", "files/ref.txt", "files/prev.decoded",
           "files/notes.txt", "files/a_dir", "run/hparams.json", "run/checkpoint",
           "run/new.txt", "files/notes.txt/child", "user_folder/x.txt", "files/pairs.tsv",
           "data/vocab.tiny_reverse_binary.txt", ""]
FOLDERS = ["new_dir", "run", "other_run", "avg", "user_folder", "empty_dir", "files/notes.txt",
           "data", "run/sub", "attention", "no_index_run", "missing_ckpt_run",
           "truncated_run", ""]
# Paths that are not what they look like (issue 61): links (links/in.txt -> files/in.txt,
# links/dangling.txt -> files/gone.txt that is not there, links/up -> files/a_dir,
# links/run -> run, links/dangling_dir -> nowhere), ".." after a link (the OS takes it
# from the link's target: links/up/../notes.txt is files/notes.txt), a literal ~ (HOME
# is the workspace's home/ in a draw) and a folder that does not exist.
LINK_OUTPUTS = ["links/in.txt", "links/dangling.txt", "links/up/../notes.txt", "~/out.txt",
                "no_dir/out.txt", "links/run/new.txt"]
LINK_FOLDERS = ["links/run", "links/dangling_dir", "links/up/../a_dir", "~/new_dir"]
OUTPUTS += LINK_OUTPUTS
FOLDERS += LINK_FOLDERS
# Where the OS takes the links that lead somewhere usable (a draw's outputs are these).
RESOLVED = {"links/run": "run", "links/up/../a_dir": "files/a_dir",
            "links/dangling.txt": "files/gone.txt"}
# Inputs no command may accept with exit 0.
DAMAGED = {"files/absent.txt", "files/a_dir", "files/nul.txt", "files/latin1.txt",
           "files/plain.gz",
           "copy_run/ckpt-2",  # a checkpoint of another problem (same shapes and vocabulary)
           # As outputs: an input, a user's file, a run's, a literal ~, no folder.
           *(set(LINK_OUTPUTS) | set(LINK_FOLDERS)) - set(RESOLVED)}
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
# --data_options: wrong for the run's problem (it takes none) unless empty; valid, bad and
# out-of-range ones for translate_files (whose vocabulary cannot fit a tiny corpus) and
# for parsing_files (trees of one line; labelled closers, XX tags, a form it lacks).
TREES = "train=files/gold.trees,dev=files/gold.trees"
DATA_OPTIONS = ["", "vocab_size=3", "vocab_size=0", "nope=1", "train_pairs=files/pairs.tsv",
                "train_pairs=files/pairs.tsv,dev_pairs=files/pairs.tsv,vocab_size=300",
                "train_pairs=files/in.txt,dev_pairs=files/in.txt", "train=[1,2]",
                "train_pairs=files/pairs.tsv,train2_pairs=files/pairs.tsv,train2_tag=<BT>,"
                "train2_weight=3,dev_pairs=files/pairs.tsv,vocab_size=300",
                "train_pairs=files/pairs.tsv,train2_weight=nan,train3_tag=<unk>",
                "train_pairs=files/pairs.tsv,train_alignments=files/in.txt,"
                "dev_pairs=files/pairs.tsv,vocab_size=300",
                f"{TREES},closers=labelled", f"{TREES},linearization=xx,closers=labelled",
                f"{TREES},closers=nope", "train=files/in.txt,dev=files/gold.trees"]
FILES_PROBLEMS = ("translate_files", "parsing_files")  # the problems data options are for
BARE = None  # a flag drawn with this value is typed without one: a switch (--raw_weights)
SWITCH = [BARE, "true"]  # typed bare, or with a value a switch refuses
CHECKPOINTS = ["run/ckpt-4", "run/ckpt-99", "truncated_run/ckpt-4", "files/notes.txt",
               "run", "copy_run/ckpt-2", ""]
# What t2t-trainer --warm_start_from may start a new run from: a run, an average, one
# checkpoint, another problem's checkpoint of the same vocabulary; then runs that are
# damaged or incomplete, checkpoints that are not there, a user's files, nothing.
GOOD_WARM_STARTS = ["run", "avg", "run/ckpt-4", "copy_run/ckpt-2"]
WARM_STARTS = GOOD_WARM_STARTS + ["run/ckpt-99", "truncated_run", "truncated_run/ckpt-4",
                                  "missing_ckpt_run", "no_index_run", "files/notes.txt",
                                  "user_folder", "new_dir", ""]


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


NEW = ("new_dir", "empty_dir", "files/a_dir")  # a folder that does not exist yet, empty ones
RUNS = ("run", "no_index_run", "missing_ckpt_run", "truncated_run")  # one run, damaged


def decoder_outputs(drawn: dict[str, str]) -> list[str]:
    target = drawn.get("--decode_to_file", "files/new_out.txt")
    if not target:  # the default: next to the file read
        source = drawn.get("--score_file") or drawn.get("--decode_from_file", "files/in.txt")
        suffix = ".scores" if "--score_file" in drawn else ".decoded"
        target = source + suffix if source.startswith("files/") else ""
    outputs = []
    for path in (target, drawn.get("--decode_alignments", "")):
        if path not in ("files/new_out.txt", "user_folder/x.txt", "files/prev.decoded",
                        "files/in.txt.decoded", "files/pairs.tsv.scores", "files/gone.txt"):
            continue
        shards, worker = drawn.get("--decode_shards", "1"), drawn.get("--worker_id", "0")
        if shards.isdigit() and worker.isdigit() and int(shards) > max(int(worker), 1):
            part = Shard(int(worker), int(shards)).part_path(path)  # and its record
            outputs += [path, part, part + RECORD_SUFFIX]
        else:
            outputs.append(path)
    return outputs


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
        "--decode_reference": INPUTS, "--decode_prefixes": INPUTS,
        "--decode_alignments": OUTPUTS, "--prefix_after_tab": SWITCH,
        "--decode_constraints": INPUTS, "--constraints_after_tab": SWITCH,
        "--vocabulary_map": INPUTS, "--decode_hparams": ["decode"],
        "--checkpoint_path": CHECKPOINTS, "--score_file": INPUTS, "--hparams": ["hparams"],
        "--ensemble": FOLDERS, "--decode_shards": INTS, "--worker_id": INTS,
        "--raw_weights": SWITCH, "--problem": PROBLEMS,
        "--model": MODELS, "--hparams_set": SETS, "--data_dir": FOLDERS},
        RUN_ARGS + ["--decode_from_file={files/in.txt}", "--decode_to_file={files/new_out.txt}"],
        decoder_outputs, 30),
    Command("t2t-trainer", t2t_trainer.main, {
        "--output_dir": FOLDERS, "--data_dir": FOLDERS, "--hparams": ["hparams"],
        "--train_steps": INTS, "--eval_every_steps": INTS, "--save_checkpoints_steps": INTS,
        "--keep_checkpoint_max": INTS, "--train_minutes": FLOATS, "--log_every_steps": INTS,
        "--eval_batches": INTS, "--save_checkpoints_minutes": FLOATS, "--seed": INTS,
        "--num_concurrent_processes": ["2", "0", ""], "--model": MODELS, "--hparams_set": SETS, "--warm_start_from": WARM_STARTS,
        "--schedule": ["train", "evaluate", "continuous_train_and_eval", "nope", ""],
        "--best_checkpoint_metric": ["loss", "sequence_accuracy", "bleu", "ter", "evalb", "nope",
                                 ""],
        "--patience": INTS, "--min_improvement": FLOATS,
        "--data_options": DATA_OPTIONS},
        COMMON + ["--data_dir={data}", "--output_dir={run}", "--train_steps=6",
                  "--schedule=train", "--log_every_steps=1"], trainer_outputs, 10),
    Command("t2t-avg-all", t2t_avg_all.main, {
        "--model_dir": FOLDERS, "--output_dir": FOLDERS, "--n": INTS,
        "--checkpoint_path": CHECKPOINTS},
        ["--model_dir={run}", "--output_dir={new_dir}", "--n=2"], avg_outputs, 25),
    Command("t2t-exporter", t2t_exporter.main, {
        "--output_dir": FOLDERS, "--export_dir": FOLDERS, "--checkpoint_path": CHECKPOINTS,
        "--decode_hparams": ["decode"], "--format": ["saved_model", "ctranslate2", "onnx", ""],
        "--raw_weights": SWITCH, "--problem": PROBLEMS, "--model": MODELS, "--hparams_set": SETS},
        RUN_ARGS + ["--export_dir={new_dir}"], exporter_outputs, 8),
    Command("t2t-attention", t2t_attention.main, {
        "--output_dir": FOLDERS, "--to": FOLDERS, "--input": ["0 1", "", " ", "\x00"],
        "--dpi": INTS, "--checkpoint_path": CHECKPOINTS, "--raw_weights": SWITCH,
        "--problem": PROBLEMS,
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
        ["--gold={files/gold.trees}", "--test={files/test.trees}"], lambda f: [], 25),
    Command("t2t-datagen", t2t_datagen.main, {
        "--data_dir": FOLDERS, "--tmp_dir": FOLDERS,
        # Fewer folders than FOLDERS, so that a user's folder is drawn often.
        "--eval_files_dir": ["new_dir", "user_folder", "run", "data", "files/notes.txt", ""],
        "--problem": ["tiny_reverse_binary", *FILES_PROBLEMS, "nope", ""],
        "--eval_split": ["dev", "val", ""], "--data_options": DATA_OPTIONS,
        "--num_concurrent_processes": ["1", "2", "0", "-1", "x", ""]},
        ["--problem=tiny_reverse_binary", f"--t2t_usr_dir={USR_DIR}", "--data_dir={data}",
         "--eval_files_dir={new_dir}"],
        lambda drawn: [], 20, adds_to=datagen_folders),
]


def resolve_links(drawn: dict[str, str]) -> dict[str, str]:
    """The drawn values with each link path as the OS resolves it (``RESOLVED``)."""
    return {flag: RESOLVED.get(value, value) for flag, value in drawn.items()}


def path_family(drawn: dict[str, str]) -> bool:
    """The draw gives a path of issue 61's family (links, .., ~, no folder)."""
    return bool(set(drawn.values()) & (set(LINK_OUTPUTS) | set(LINK_FOLDERS)))


def _pairs(hparams: str) -> list[tuple[str, str]]:
    """The (key, value) pairs of an hparams string; a list value keeps its commas."""
    return re.findall(r"([^=,]+)=(\[[^\]]*\]|[^,]*)", hparams)


def given_twice(pairs: list[tuple[str, str]]) -> list[str]:
    """The names ``pairs`` give two values (flags or hparams: only the last would count)."""
    values: dict[str, set[str]] = {}
    for name, value in pairs:
        values.setdefault(name, set()).add(value)
    return [name for name, seen in values.items() if len(seen) > 1]


RUN_READERS = ("t2t-decoder", "t2t-exporter", "t2t-attention")
RUN_NAMES = {"--problem": "tiny_reverse_binary", "--model": "transformer",
             "--hparams_set": "my_very_small_transformer"}


# Each command's scored file and its reference, with the valid invocation's values.
SCORED = {"t2t-bleu": (("--translation", "files/in.txt"), ("--reference", "files/ref.txt")),
          "t2t-parse-eval": (("--test", "files/test.trees"), ("--gold", "files/gold.trees"))}
# Decode hparams (as drawn) that change what a command leaves unused.
EXPORT_UNUSED = {("return_beams", "true"), ("write_beam_scores", "true"),
                 ("batch_size", "1"), ("batch_size", "2")}


def _refused_combinations(name: str, drawn: dict[str, str]) -> list[str]:
    """Drawn flags that are valid alone but do nothing (or nothing honest) together."""
    refused = []
    if name in SCORED:  # a file scored against itself
        (flag, own), (reference_flag, own_reference) = SCORED[name]
        scored = drawn.get(flag, own)
        if scored and scored == drawn.get(reference_flag, own_reference):
            refused.append(f"{flag} that is {reference_flag}")
    if name == "t2t-trainer":  # flags the schedule leaves without effect
        schedule = drawn.get("--schedule", "train")
        if "--eval_every_steps" in drawn and schedule in ("train", "evaluate"):
            refused.append("--eval_every_steps without evaluations while training")
        if "--eval_batches" in drawn and schedule == "train":
            refused.append("--eval_batches with --schedule=train")
        if "--warm_start_from" in drawn and (schedule == "evaluate" or drawn.get(
                "--output_dir", "run") not in NEW):  # a run with checkpoints resumes
            refused.append("--warm_start_from without a new run to start")
        # The best by the dev loss needs evaluations while training; by a decode
        # metric (the problem's: sequence_accuracy), --decode_eval_every_steps.
        metric = drawn.get("--best_checkpoint_metric")
        if metric is not None and not (metric == "loss"
                                       and schedule == "continuous_train_and_eval"):
            refused.append("--best_checkpoint_metric where it is not measured")
        for flag in ("--patience", "--min_improvement"):
            if flag in drawn and metric is None:
                refused.append(f"{flag} without --best_checkpoint_metric")
    if drawn.get("--data_options") and (name == "t2t-trainer" or drawn.get(
            "--problem", "tiny_reverse_binary") not in FILES_PROBLEMS):
        refused.append("--data_options where they do nothing")  # no --generate_data, or
        # a problem that takes none
    if name == "t2t-exporter" and set(_pairs(drawn.get("--decode_hparams", ""))) & EXPORT_UNUSED:
        refused.append("--decode_hparams the export does not use")
    if (name == "t2t-decoder" and drawn.get("--ensemble") == drawn.get("--output_dir", "run")
            == "run" and "--checkpoint_path" not in drawn):
        refused.append("--ensemble of the run with itself")
    return refused


def must_refuse(command: Command, drawn: dict[str, str]) -> list[str]:
    """The drawn flags whose values no command may accept."""
    refused = []
    for flag, value in drawn.items():
        kind = command.flags[flag]
        if kind is WARM_STARTS:  # another problem's checkpoint is a source like any
            if value not in GOOD_WARM_STARTS:
                refused.append(flag)
        elif (kind is INTS or kind is FLOATS) and value in REFUSED - ({"-1"} if flag == "--seed" else set()):
            refused.append(flag)
        elif flag.endswith("hparams") and any(
                key in ("nope", "beams") or raw in REFUSED for key, raw in _pairs(value)):
            refused.append(flag)
        elif flag.endswith("hparams") and given_twice(_pairs(value)):
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
    refused += _refused_combinations(command.name, resolve_links(drawn))
    if "--model" in drawn or "--hparams_set" in drawn:
        pair = (drawn.get("--model", "transformer"),
                drawn.get("--hparams_set", "my_very_small_transformer"))
        if pair not in MADE_FOR:
            refused.append("--model with --hparams_set")
    return refused


# Runs that move (issues 61 and 85): a trained run and its data dir each stay, are
# renamed, copied, linked to, moved under another parent, or moved there with a link
# left where they were ("linked_back"); the command is given the new path (relative or
# absolute, from the workspace, a folder in it or one outside it). Every command that
# reads a run is run on each draw.
MOVES = ("stay", "rename", "copy", "link", "reparent", "linked_back")
DATA_MOVES = (*MOVES, "other")  # other: the same vocabulary, other train shards
LEFT_IN_PLACE = {"stay", "copy", "link", "linked_back", "other"}  # its old path still leads to it
MOVE_CWDS = ("", "files", "../outside")  # the working folder, from the workspace
RUN_COMMANDS = ("t2t-trainer", "t2t-decoder", "t2t-avg-all", "t2t-exporter", "t2t-attention")
READS_DATA = {"t2t-decoder", "t2t-exporter", "t2t-attention"}  # the vocabulary (and the trainer)
RESUME_HPARAMS = ["", "batch_size=1024", "learning_rate=0.5", "optimizer=sgd",
                  "dtype=mixed_float16", "dtype=mixed_bfloat16", "moving_average_decay=0.5"]
REFUSED_ON_RESUME = {"optimizer=sgd", "dtype=mixed_float16"}


def moved_path(name: str, how: str) -> str:
    """Where folder ``name`` of the workspace is after it moved ``how`` (the path the
    command is given)."""
    return {"stay": name, "rename": f"{name}_renamed", "copy": f"{name}_copy",
            "link": f"links/{name}", "reparent": f"elsewhere/deeper/{name}",
            "linked_back": name, "other": "other_data"}[how]


def moved_run_refusal(command: str, data_move: str, data_given: bool, hparams: str) -> str:
    """The flag the one-line refusal of ``command`` must name when it must refuse the draw
    (exit 2), or '' when it must work."""
    if command == "t2t-trainer":
        if not data_given:
            return "--data_dir"  # a resume needs the data
        if data_move == "other":
            return "--data_dir"  # hparams.json would name data the run did not train on
        if hparams in REFUSED_ON_RESUME:
            return "--hparams"  # the checkpoints hold the optimizer's or loss scale's state
        return ""
    if command in READS_DATA and not data_given and data_move not in LEFT_IN_PLACE:
        return "--data_dir"  # hparams.json names where the data was
    return ""
