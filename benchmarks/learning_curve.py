"""The score of single checkpoints against training minutes: the table users need to
pick a training budget.

    python benchmarks/learning_curve.py --output_dir=runs/wu_ende/train \\
        --source=runs/wu_ende/eval/translate_ende_multi30k.test.en \\
        --reference=runs/wu_ende/eval/translate_ende_multi30k.test.de --points=8

The columns are report lines of the problem's metric (--score_lines): BLEU's
four by default, the metric's headline (EVALB F1 for parsing) otherwise.

Decodes every checkpoint of ``--steps`` (default: ``--points`` checkpoints spread
evenly, the last included) in one process, as ``t2t-decoder --checkpoint_path``
would (``build_decoding``), and prints a Markdown table. A checkpoint's minute is its file's time less
that of ``output_dir/hparams.json``, which the trainer writes as it starts (so
the minutes include evaluation and checkpointing, as the training figures do).
"""
from __future__ import annotations

import argparse
import os
import sys

from sweep_decode import NUMBER, headline

from t2t_lite.bin import common, trained_run

BLEU_LINES = ("tokenized BLEU (lowercased)", "tokenized BLEU (paper)", "sacreBLEU (lowercased)",
              "sacreBLEU (cased)")


def checkpoints(output_dir: str) -> dict[int, str]:
    """step -> checkpoint prefix, of every checkpoint the dir's index lists."""
    import tensorflow as tf

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


def step_list(text: str) -> list[int]:
    try:
        return [int(step) for step in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a comma-separated list of steps")


def main(argv: list[str] | None = None) -> None:
    parser = common.CommandParser(description=__doc__.split("\n")[0])
    common.add_registry_flags(parser)  # --output_dir: the training folder
    parser.add_argument("--source", required=True)
    parser.add_argument("--reference", required=True)
    parser.add_argument("--points", type=common.at_least(1), default=8)
    parser.add_argument("--steps", type=step_list, default=[],
                        help="comma-separated steps (default: spread)")
    parser.add_argument("--decode_hparams", default="batch_size=64",
                        help="as t2t-decoder's: the problem's own settings (a parser's beam "
                             "21, alpha 0.3) unless named here")
    parser.add_argument("--score_lines", default=None,
                        help="comma-separated report lines to tabulate (default: BLEU's "
                             "four for translation, the metric's headline otherwise)")
    parser.add_argument("--decodes_dir", default="",
                        help="where each checkpoint's decode goes (default: OUTPUT_DIR.curve; "
                             "no command writes inside a run folder)")
    args = parser.parse_args(argv)
    # The heavy imports wait until the flags are read (TensorFlow starts quietly).
    from t2t_lite.decoding import file_decoding
    from t2t_lite.metrics.scoring import score_decodes
    from t2t_lite.training.checkpoints import restore_model

    if trained_run.start(args):
        return
    run = trained_run.open_run(args, "learning_curve", trained_run.input_files(
        ("--source", args.source), ("--reference", args.reference)))
    model = run.experiment.build_model()
    # One search for every checkpoint: each is restored into the same model's variables.
    decoding = run.decoding(model, run.decode_settings(args.decode_hparams))
    decodes_dir = args.decodes_dir or args.output_dir.rstrip("/") + ".curve"
    by_step = checkpoints(args.output_dir)
    steps = args.steps or spread(sorted(by_step), args.points)
    missing = sorted(set(steps) - set(by_step))
    if missing:
        raise SystemExit(f"--steps: no checkpoint of step {', '.join(map(str, missing))} in "
                         f"{args.output_dir}; it has steps {', '.join(map(str, sorted(by_step)))}")
    start = os.path.getmtime(os.path.join(args.output_dir, "hparams.json"))
    if args.score_lines is not None:
        labels = args.score_lines.split(",")
    else:
        labels = list(BLEU_LINES) if run.experiment.problem.eval_metric == "bleu" else [""]
    for index, step in enumerate(steps):
        path = by_step[step]
        minutes = (os.path.getmtime(path + ".index") - start) / 60.0
        restore_model(model, args.output_dir, path)
        decoded = f"{os.path.join(decodes_dir, os.path.basename(path))}.decoded"
        with run.paths.output_file("--decodes_dir", decoded, new_folder=True) as output_path:
            outputs, references = file_decoding.decode_from_file(
                args.source, output_path, decoding, reference_path=args.reference)
        report = score_decodes(run.experiment.problem, outputs, references)
        if index == 0:  # the headline's name is the text before its figure ("F1")
            headers = [label or NUMBER.split(report[0])[0].strip() for label in labels]
            print("| step | minutes | " + " | ".join(headers) + " |")
            print("| --- | --- |" + " --- |" * len(headers))
        scores = [f"{headline(report, label):.2f}" for label in labels]
        print(f"| {step} | {minutes:.0f} | " + " | ".join(scores) + " |", flush=True)


if __name__ == "__main__":
    sys.exit(common.run_main("learning_curve.py", main))
