"""t2t-avg-all: average the last N checkpoints of a training directory.

    t2t-avg-all --model_dir=train/base --output_dir=train/base_avg --n=5

writes output_dir/ckpt-<newest N> (found by tf.train.latest_checkpoint) and
copies hparams.json, so t2t-decoder can use output_dir like model_dir.
"""
from __future__ import annotations

import argparse
import glob
import os
import sys
from typing import Sequence

from t2t_lite import disk_space, output_paths
from t2t_lite.bin import common


def _parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = common.CommandParser(prog="t2t-avg-all", description=__doc__.split("\n")[0])
    parser.add_argument("--model_dir", required=True,
                        help="training directory with ckpt-N checkpoints")
    parser.add_argument("--output_dir", required=True,
                        help="where the averaged checkpoint goes (not model_dir)")
    parser.add_argument("--n", type=common.at_least(1), default=5,
                        help="how many of the newest checkpoints to average (paper: 5 for "
                             "base, 20 for big); fewer are averaged, with a warning, if "
                             "fewer exist")
    parser.add_argument("--checkpoint_path",
                        help="the newest checkpoint to average (default: the latest); "
                             "the n averaged end with it")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    return common.run_main("t2t-avg-all", average, argv)


def average(argv: Sequence[str] | None) -> int:
    args = _parse_args(argv)
    # Imported after the flags: it imports TensorFlow, which must start quietly.
    import tensorflow as tf

    from t2t_lite.training import averaging
    paths = output_paths.Paths("t2t-avg-all")
    args.model_dir = paths.input_folder("--model_dir", args.model_dir, must_exist=True)
    # An earlier average of the same model dir is this command's own, to replace.
    with paths.output_folder("--output_dir", args.output_dir, replaces_own=True,
                             model_dir=output_paths.real(args.model_dir)) as staging, \
            common.writing(f"while averaging {args.model_dir}", "--output_dir", args.output_dir):
        newest = args.checkpoint_path or tf.train.latest_checkpoint(args.model_dir)
        if newest:  # the average holds each tensor of a checkpoint once, as each source
            disk_space.require_free("--output_dir", args.output_dir, disk_space.files_size(
                glob.glob(glob.escape(newest) + ".data-*")), "the average")
        result = averaging.average_last_checkpoints(args.model_dir, staging, args.n,
                                                    args.checkpoint_path)
    print(f"averaged {len(result.sources)} checkpoints "
          f"({', '.join(result.sources)}) into "
          f"{os.path.join(args.output_dir, os.path.basename(result.path))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
