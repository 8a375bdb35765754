"""BLEU of single checkpoints against training minutes: the table users need to pick
a training budget.

    python benchmarks/learning_curve.py --output_dir=runs/wu_ende/train \\
        --source=runs/wu_ende/eval/translate_ende_multi30k.test.en \\
        --reference=runs/wu_ende/eval/translate_ende_multi30k.test.de --points=8

Decodes every checkpoint of ``--steps`` (default: ``--points`` checkpoints spread
evenly, the last included) with ``t2t-decoder --checkpoint_path``, one process
each, and prints a Markdown table. A checkpoint's minute is its file's time less
that of ``output_dir/hparams.json``, which the trainer writes as it starts (so
the minutes include evaluation and checkpointing, as the training figures do).
"""
from __future__ import annotations

import argparse
import os
import re
import subprocess

import tensorflow as tf

from t2t_lite.bin import common

SCORE_LINE = re.compile(r"^(sacreBLEU \(cased\)|sacreBLEU \(lowercased\)|tokenized BLEU "
                        r"\(paper\)|tokenized BLEU \(lowercased\)):\s+([0-9.]+)", re.M)


def checkpoints(output_dir: str) -> dict[int, str]:
    """step -> checkpoint prefix, of every checkpoint the dir's index lists."""
    state = tf.train.get_checkpoint_state(output_dir)
    if state is None:
        raise SystemExit(f"no checkpoint in {output_dir}")
    paths = state.all_model_checkpoint_paths
    return {int(path.rsplit("-", 1)[1]): path for path in paths}


def spread(steps: list[int], points: int) -> list[int]:
    """``points`` of ``steps`` (sorted) evenly spaced, the last one included."""
    if points >= len(steps):
        return steps
    return sorted({steps[round(i * (len(steps) - 1) / (points - 1))] for i in range(points)})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--output_dir", required=True)
    parser.add_argument("--source", required=True)
    parser.add_argument("--reference", required=True)
    parser.add_argument("--points", type=common.at_least(1), default=8)
    parser.add_argument("--steps", default="", help="comma-separated steps (default: spread)")
    parser.add_argument("--decode_hparams", default="beam_size=4,alpha=0.6,batch_size=64")
    parser.add_argument("--decodes_dir", default="",
                        help="where each checkpoint's decode goes (default: OUTPUT_DIR.curve; "
                             "no command writes inside a run folder)")
    args = parser.parse_args()
    decodes_dir = args.decodes_dir or args.output_dir.rstrip("/") + ".curve"
    by_step = checkpoints(args.output_dir)
    steps = ([int(s) for s in args.steps.split(",")] if args.steps
             else spread(sorted(by_step), args.points))
    start = os.path.getmtime(os.path.join(args.output_dir, "hparams.json"))
    print("| step | minutes | tokenized BLEU lowercased | tokenized BLEU cased "
          "| sacreBLEU lowercased | sacreBLEU cased |")
    print("| --- | --- | --- | --- | --- | --- |")
    for step in steps:
        path = by_step[step]
        minutes = (os.path.getmtime(path + ".index") - start) / 60.0
        output = subprocess.run(
            ["t2t-decoder", f"--output_dir={args.output_dir}", f"--checkpoint_path={path}",
             f"--decode_hparams={args.decode_hparams}", f"--decode_from_file={args.source}",
             f"--decode_to_file={os.path.join(decodes_dir, os.path.basename(path))}.decoded",
             f"--decode_reference={args.reference}"],
            check=True, capture_output=True, text=True).stdout
        scores = dict(SCORE_LINE.findall(output))
        print(f"| {step} | {minutes:.0f} | {scores['tokenized BLEU (lowercased)']} | "
              f"{scores['tokenized BLEU (paper)']} | "
              f"{scores['sacreBLEU (lowercased)']} | {scores['sacreBLEU (cased)']} |", flush=True)


if __name__ == "__main__":
    main()
