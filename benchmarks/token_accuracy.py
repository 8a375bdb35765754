"""Teacher-forced accuracy on a split, by kind of target token: where a model's
next-token predictions fail, before any search.

    python benchmarks/token_accuracy.py --output_dir=runs/lstm_full/avg --split=dev

For a parser (a problem scored by EVALB) the kinds are read from the
vocabulary: an opening bracket with its label ("(NP"), a closing bracket (")"),
and everything else (words, or the "XX" of an unlexicalised tree); any other
problem has one kind, so that a "(" of a translation is not counted as a label.
Prints one Markdown row per kind: tokens, share of the split, accuracy.
"""
from __future__ import annotations

import argparse
import collections

import t2t_lite  # noqa: F401  (before TensorFlow: the kernels t2t-decoder runs)
import numpy as np

from t2t_lite.bin import common, trained_run
from t2t_lite.contracts.reserved_ids import PAD_ID
from t2t_lite.data.pipeline import batch_examples
from t2t_lite.training.checkpoints import restore_model


def tree_token_kind(token: str) -> str:
    if token == ")":
        return "closing bracket"
    return "opening bracket + label" if token.startswith("(") else "word or other"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    common.add_registry_flags(parser)  # --output_dir: a training or averaged folder
    parser.add_argument("--split", default="dev")
    args = parser.parse_args()
    if trained_run.start(args):
        return
    run = trained_run.open_run(args, "token_accuracy")
    experiment = run.experiment
    model = experiment.build_model()
    restore_model(model, args.output_dir)
    encoder = experiment.problem.feature_encoders(experiment.data_dir)["targets"]
    is_parser = experiment.problem.eval_metric == "evalb"
    kinds = [tree_token_kind(encoder.decode([i])) if is_parser else "token"
             for i in range(encoder.vocab_size)]
    batches = batch_examples(experiment.problem.dataset(args.split, experiment.data_dir),
                             experiment.hparams.batch_size, experiment.hparams.max_length,
                             training=False)
    right, total = collections.Counter(), collections.Counter()
    for batch in batches:
        predicted = np.argmax(model(batch, training=False).numpy(), axis=-1)
        targets = batch["targets"].numpy()
        for target, guess in zip(targets[targets != PAD_ID], predicted[targets != PAD_ID]):
            total[kinds[target]] += 1
            right[kinds[target]] += int(target == guess)
    count = sum(total.values())
    print(f"| token kind ({args.split}) | tokens | share | teacher-forced accuracy |")
    print("| --- | --- | --- | --- |")
    for kind in sorted(total, key=total.get, reverse=True):
        print(f"| {kind} | {total[kind]:,} | {total[kind] / count:.1%} | "
              f"{right[kind] / total[kind]:.1%} |")
    print(f"| all | {count:,} | 100% | {sum(right.values()) / count:.1%} |")


if __name__ == "__main__":
    main()
