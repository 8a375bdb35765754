"""The README's main job, judged as a user would: train it, then reverse fresh random
strings with beam search and count the exact reversals, by length.

    python benchmarks/reverse_main_job.py                       # the README's command
    python benchmarks/reverse_main_job.py --hparams='learning_rate=1.0,...' --root=runs/x

Trains with ``t2t-trainer`` (the wall time printed includes data generation, as
the README command's does), decodes ``--per_length`` fresh strings of every
length 1..40 (their own seed, not the splits'; past ~16 symbols almost all are
strings training never saw) with
``t2t-decoder`` (beam 4, alpha 0.6) under each of ``--stop_rules`` and prints a
JSON line and a Markdown table (a row per stop rule):

    python benchmarks/reverse_main_job.py --stop_rules=exact,beam_finished
"""
from __future__ import annotations

import json
import os
import subprocess
import time

from t2t_lite.bin import common

PROBLEM = "algorithmic_reverse_binary40"
README_HPARAMS = ("learning_rate=0.5,learning_rate_warmup_steps=400,length_bucket_step=0,"
                  "max_length=41,layer_prepostprocess_dropout=0.0,label_smoothing=0.0")


def run(command: list[str]) -> None:
    print("$", " ".join(command), flush=True)
    subprocess.run(command, check=True)


def main() -> int:
    parser = common.CommandParser(description=__doc__.split("\n")[0])
    parser.add_argument("--hparams_set", default="transformer_tiny")
    parser.add_argument("--hparams", default=README_HPARAMS)
    parser.add_argument("--train_steps", type=common.at_least(1), default=3000)
    parser.add_argument("--root", default="runs/reverse_main_job")
    parser.add_argument("--per_length", type=common.at_least(1), default=10)
    parser.add_argument("--seed", type=common.between(0, 2**32 - 1), default=2026,
                        help="the fresh strings' seed")
    parser.add_argument("--train_seed", type=common.between(0, 2**32 - 1), default=1234,
                        help="t2t-trainer's --seed (1234, its default, is the README's run)")
    parser.add_argument("--stop_rules", default="exact",
                        help="decode with each of these, comma-separated "
                             "(t2t-decoder's stop_rule values)")
    args = parser.parse_args()
    # Loaded once the flags are read: they import TensorFlow, which parse_args starts
    # quietly.
    from t2t_lite.decoding.search_options import STOP_RULES
    from t2t_lite.problems.algorithmic import fresh_binary_strings, reversal_accuracy_by_length
    stop_rules = args.stop_rules.split(",")
    unknown = [rule for rule in stop_rules if rule not in STOP_RULES]
    if unknown or not args.stop_rules:
        parser.error(f"--stop_rules={args.stop_rules}: the rules are {', '.join(STOP_RULES)}")
    data_dir, output_dir = os.path.join(args.root, "data"), os.path.join(args.root, "train")
    # It writes data/, train/, fresh.txt and fresh.RULE.decoded there: only into a
    # folder of its own.
    if os.path.isdir(args.root) and os.listdir(args.root):
        parser.error(f"--root={args.root} is not empty (an earlier run, or your files): "
                     "give a new --root")
    started = time.monotonic()
    run(["t2t-trainer", f"--problem={PROBLEM}", "--model=transformer",
         f"--hparams_set={args.hparams_set}", f"--hparams={args.hparams}",
         f"--train_steps={args.train_steps}", f"--data_dir={data_dir}",
         f"--output_dir={output_dir}", f"--seed={args.train_seed}", "--generate_data"])
    train_minutes = (time.monotonic() - started) / 60.0
    inputs = fresh_binary_strings(args.per_length, args.seed)
    source = os.path.join(args.root, "fresh.txt")
    with open(source, "w", encoding="utf-8") as f:
        f.writelines(line + "\n" for line in inputs)
    decodes = {}
    for stop_rule in stop_rules:
        decoded_path = os.path.join(args.root, f"fresh.{stop_rule}.decoded")
        started = time.monotonic()
        run(["t2t-decoder", f"--output_dir={output_dir}",
             f"--decode_hparams=beam_size=4,alpha=0.6,extra_length=10,stop_rule={stop_rule}",
             f"--decode_from_file={source}", f"--decode_to_file={decoded_path}"])
        decode_seconds = time.monotonic() - started
        with open(decoded_path, encoding="utf-8") as f:
            counts = reversal_accuracy_by_length(inputs, f.read().splitlines())
        right = sum(right for right, _ in counts.values())
        decodes[stop_rule] = {
            "accuracy": round(100.0 * right / len(inputs), 2),
            "decode_seconds": round(decode_seconds, 1),
            "by_length": {key: f"{right}/{total}" for key, (right, total) in counts.items()}}
    result = {"hparams_set": args.hparams_set, "hparams": args.hparams,
              "train_steps": args.train_steps, "train_seed": args.train_seed,
              "train_minutes": round(train_minutes, 1), "decodes": decodes}
    print(json.dumps(result))
    buckets = list(next(iter(decodes.values()))["by_length"])
    print("| hparams | steps | minutes | stop rule | accuracy | " + " | ".join(buckets) + " |")
    for stop_rule, decode in decodes.items():
        print(f"| `{args.hparams_set}` {args.hparams} | {args.train_steps} | "
              f"{train_minutes:.1f} | {stop_rule} | {decode['accuracy']}% | "
              + " | ".join(decode["by_length"].values()) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
