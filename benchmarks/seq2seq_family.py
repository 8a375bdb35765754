"""The Transformer against the RNN models it replaced, for the same wall-clock budget.

Each row trains with ``t2t-trainer`` for ``--minutes`` on this machine (alone:
the budget is wall clock), averages the last ``--average`` checkpoints
(written every ``--save_minutes``) with ``t2t-avg-all``, decodes the eval split
with ``t2t-decoder`` (the problem's decode settings; beam 4, alpha 0.6 for
translation) and scores it: BLEU (lowercased and cased sacreBLEU, and BLEU by
source length) for translation, EVALB F1 for parsing. Every step is the
command a user would run; their outputs land in ``--root/<row>/``.

    python benchmarks/seq2seq_family.py                     # Multi30k En->De, 30 min a row
    python benchmarks/seq2seq_family.py --suite=parsing     # the treebank sample
    python benchmarks/seq2seq_family.py --rows=transformer,luong_dot --minutes=5
    python benchmarks/seq2seq_family.py --rows=luong_local_m --train_steps=5212

``--train_steps`` gives a row a step budget instead of a wall-clock one, to add a
row measured on another machine to a table whose rows ran for ``--minutes`` (a
step budget compares the models, where minutes on two CPUs would not).

Prints a Markdown table, also written to ``--root/table.md`` (with the raw
figures in ``results.json``). A row whose results are already in
``results.json`` is not run again, so an interrupted run picks up where it was.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import re
import subprocess
import sys
import time

from t2t_lite import output_paths
from t2t_lite.bin import common


@dataclasses.dataclass(frozen=True)
class Row:
    name: str
    model: str
    hparams_set: str
    hparams: str = ""


TRANSLATION_ROWS = [
    Row("transformer", "transformer", "transformer_multi30k"),
    Row("seq2seq_reversed", "lstm_seq2seq", "lstm_seq2seq_multi30k", "reverse_source=true"),
    Row("seq2seq", "lstm_seq2seq", "lstm_seq2seq_multi30k", "reverse_source=false"),
    Row("bahdanau", "lstm_seq2seq_attention_bahdanau", "lstm_bahdanau_multi30k"),
    Row("luong_dot", "lstm_seq2seq_attention_luong", "lstm_luong_multi30k",
        "attention_score=dot"),
    Row("luong_general", "lstm_seq2seq_attention_luong", "lstm_luong_multi30k",
        "attention_score=general"),
    Row("luong_concat", "lstm_seq2seq_attention_luong", "lstm_luong_multi30k",
        "attention_score=concat"),
    Row("luong_local_m", "lstm_seq2seq_attention_luong", "lstm_luong_multi30k",
        "attention_score=general,attention_scope=local_m"),
    Row("luong_local_p", "lstm_seq2seq_attention_luong", "lstm_luong_multi30k",
        "attention_score=general,attention_scope=local_p"),
]
PARSING_ROWS = [
    Row("transformer", "transformer", "transformer_parsing_small"),
    Row("lstm_attention", "lstm_seq2seq_attention_luong", "lstm_attention_parsing"),
]
SUITES = {
    "translation": ("translate_ende_multi30k", "test", "../shared/data/multi30k",
                    "beam_size=4,alpha=0.6,batch_size=64", TRANSLATION_ROWS),
    "parsing": ("parsing_english_ptb_sample_lexical", "dev", "../shared/data/ptb_sample",
                "batch_size=32", PARSING_ROWS),
}
LENGTH_BUCKETS = "8,11,14,19"


def run(command: list[str], log_path: str) -> str:
    """Runs a t2t-* command, appending its output to ``log_path``; returns stdout."""
    with open(log_path, "a") as log:
        log.write("$ " + " ".join(command) + "\n")
        log.flush()
        result = subprocess.run(command, stdout=subprocess.PIPE, stderr=log, text=True)
        log.write(result.stdout)
    if result.returncode:
        sys.exit(f"failed ({result.returncode}): {' '.join(command)}; see {log_path}")
    return result.stdout


def figure(pattern: str, text: str) -> float:
    match = re.search(pattern, text)
    if not match:
        raise ValueError(f"no {pattern!r} in the output")
    return float(match.group(1))


def run_row(row: Row, args: argparse.Namespace, problem: str, split: str, decode: str,
            eval_files: tuple[str, str]) -> dict:
    out = os.path.join(args.root, row.name)
    os.makedirs(out, exist_ok=True)
    log = os.path.join(out, "log.txt")
    source, reference = eval_files
    if args.train_steps:  # checkpoints at the same fractions of the run as by minutes
        every = max(1, round(args.train_steps * args.save_minutes / args.minutes))
        budget = [f"--train_steps={args.train_steps}", f"--save_checkpoints_steps={every}"]
    else:
        budget = ["--train_steps=100000000", f"--train_minutes={args.minutes}",
                  "--save_checkpoints_steps=100000000",
                  f"--save_checkpoints_minutes={args.save_minutes}"]
    threads = ([f"--intra_op_parallelism_threads={args.op_threads}",
                f"--inter_op_parallelism_threads={args.op_threads}"] if args.op_threads else [])
    training_started = time.monotonic()
    trained = run(["t2t-trainer", f"--problem={problem}", f"--model={row.model}",
                   f"--hparams_set={row.hparams_set}", f"--hparams={row.hparams}",
                   f"--data_dir={args.root}/data", f"--output_dir={out}/train",
                   *budget, "--keep_checkpoint_max=100", "--eval_every_steps=1000",
                   "--eval_batches=20", *threads], log)
    # A resumed row (its run was interrupted) counts the minutes since it resumed.
    train_minutes = (time.monotonic() - training_started) / 60
    summary = json.loads(trained.strip().splitlines()[-1])
    run(["t2t-avg-all", f"--model_dir={out}/train", f"--output_dir={out}/avg",
         f"--n={args.average}"], log)
    started = time.monotonic()
    decoded = run(["t2t-decoder", f"--output_dir={out}/avg", f"--decode_hparams={decode}",
                   f"--decode_from_file={source}", f"--decode_to_file={out}/decoded",
                   f"--decode_reference={reference}"], log)
    result = {"row": dataclasses.asdict(row), "steps": summary["step"],
              "train_minutes": train_minutes,
              "dev_loss": summary["loss"], "parameters": summary["parameters"],
              "train_target_tokens_per_s": summary["train_target_tokens_per_s"],
              "decode_seconds": time.monotonic() - started}
    if problem.startswith("parsing"):
        f1_all, f1_short = re.findall(r"Bracketing FMeasure\s+=\s+([0-9.]+)", decoded)[:2]
        result["f1"], result["f1_40"] = float(f1_all), float(f1_short)
        return result
    scored = run(["t2t-bleu", f"--translation={out}/decoded", f"--reference={reference}",
                  f"--source={source}", f"--length_buckets={LENGTH_BUCKETS}",
                  f"--language={problem.split('_')[1][2:]}"], log)
    result["bleu_lowercased"] = figure(r"sacreBLEU \(lowercased\):\s+([0-9.]+)", scored)
    result["bleu_cased"] = figure(r"sacreBLEU \(cased\):\s+([0-9.]+)", scored)
    result["bleu_by_length"] = {m.group(1): float(m.group(2)) for m in re.finditer(
        r"source\s+(\S+) words:.*lowercased\)\s+([0-9.]+)", scored)}
    return result


def table(results: list[dict], minutes: float) -> str:
    parsing = "f1" in results[0]
    score_header = "dev F1 (all / <= 40 words)" if parsing else "BLEU lc / cased"
    buckets = [] if parsing else list(results[0]["bleu_by_length"])
    lines = [f"| model | hparams | {score_header} | "
             + "".join(f"BLEU, {b} words | " for b in buckets)
             + "parameters | train tokens/s | training | decode s |",
             "|" + " --- |" * (7 + len(buckets))]
    for r in results:
        row = r["row"]
        setting = f"`{row['hparams_set']}`" + (f" `{row['hparams']}`" if row["hparams"] else "")
        score = (f"{r['f1']:.1f} / {r['f1_40']:.1f}" if parsing
                 else f"{r['bleu_lowercased']:.1f} / {r['bleu_cased']:.1f}")
        lines.append(f"| `{row['model']}` | {setting} | {score} | "
                     + "".join(f"{r['bleu_by_length'].get(b, float('nan')):.1f} | "
                               for b in buckets)
                     + f"{r['parameters'] / 1e6:.1f}M | {r['train_target_tokens_per_s']:,.0f} | "
                     f"{r['steps']:,} steps, {r.get('train_minutes', minutes):.0f} min | "
                     f"{r['decode_seconds']:.0f} |")
    return "\n".join(lines)


def main() -> None:
    parser = common.FlagParser(description=__doc__.split("\n")[0])
    parser.add_argument("--suite", choices=sorted(SUITES), default="translation")
    parser.add_argument("--rows", default="", help="comma-separated row names (default: all)")
    parser.add_argument("--minutes", type=common.positive_float, default=30.0)
    parser.add_argument("--save_minutes", type=common.positive_float, default=2.0)
    parser.add_argument("--average", type=common.at_least(1), default=5)
    parser.add_argument("--train_steps", type=common.at_least(1), default=None,
                        help="train each row this many steps instead of --minutes, "
                        "a checkpoint every save_minutes/minutes of them")
    parser.add_argument("--op_threads", type=common.at_least(1), default=None,
                        help="TensorFlow op threads for training (default: its own)")
    parser.add_argument("--root", default="")
    args = parser.parse_args()
    problem, split, raw_dir, decode, rows = SUITES[args.suite]
    if args.rows:
        wanted = args.rows.split(",")
        unknown = set(wanted) - {r.name for r in rows}
        if unknown:
            sys.exit(f"unknown rows {sorted(unknown)}; the {args.suite} rows are "
                     f"{', '.join(r.name for r in rows)}")
        rows = [r for r in rows if r.name in wanted]
    try:
        args.root = output_paths.Paths("seq2seq_family").work_folder(
            "--root", args.root or f"runs/family_{args.suite}")
    except output_paths.OutputPathError as error:
        sys.exit(f"seq2seq_family: error: {error}")
    made = run(["t2t-datagen", f"--problem={problem}", f"--data_dir={args.root}/data",
                f"--tmp_dir={raw_dir}", f"--eval_files_dir={args.root}/eval",
                f"--eval_split={split}"], os.path.join(args.root, "datagen.txt"))
    eval_files = tuple(re.search(r"^eval files: (\S+) (\S+)", made, re.M).groups())
    results_path = os.path.join(args.root, "results.json")
    done = json.load(open(results_path)) if os.path.exists(results_path) else {}
    for row in rows:
        if row.name not in done:
            done[row.name] = run_row(row, args, problem, split, decode, eval_files)
            with open(results_path, "w") as f:
                json.dump(done, f, indent=2)
    text = table([done[r.name] for r in rows], args.minutes)
    with open(os.path.join(args.root, "table.md"), "w") as f:
        f.write(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
