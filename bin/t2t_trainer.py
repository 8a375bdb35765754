"""t2t-trainer: train a registered model on a registered problem.

Resumes from the latest checkpoint in --output_dir; uses every local GPU
(MirroredStrategy), the cluster in TF_CONFIG (MultiWorkerMirroredStrategy), or
the CPU.
"""
from __future__ import annotations

import argparse
import json
from typing import Sequence

from t2t_lite.bin import common


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="t2t-trainer", description=__doc__)
    common.add_registry_flags(p, required=False)
    p.add_argument("--tmp_dir", help="raw downloads for --generate_data")
    p.add_argument("--generate_data", action="store_true",
                   help="write the problem's vocabulary and shards first (skips done work)")
    p.add_argument("--train_steps", type=int, default=250000)
    p.add_argument("--train_minutes", type=float, default=0.0,
                   help="stop after this many minutes of training (0 = no limit)")
    p.add_argument("--eval_every_steps", type=int, default=1000,
                   help="evaluate on the dev split every N steps (and at the end)")
    p.add_argument("--eval_batches", type=int, default=0,
                   help="dev batches per evaluation; 0 = the whole dev split")
    p.add_argument("--decode_eval_every_steps", type=int, default=0,
                   help="decode the first --decode_eval_examples dev examples as t2t-decoder "
                        "would and print their BLEU (F1 for parsing) this often; 0 = never")
    p.add_argument("--decode_eval_examples", type=int, default=100)
    p.add_argument("--decode_eval_hparams", default="",
                   help="decode settings for it, as t2t-decoder's --decode_hparams")
    p.add_argument("--save_checkpoints_steps", type=int, default=1000)
    p.add_argument("--save_checkpoints_minutes", type=float, default=10.0)
    p.add_argument("--keep_checkpoint_max", type=int, default=20)
    p.add_argument("--log_every_steps", type=int, default=100)
    p.add_argument("--seed", type=int, default=1234)
    return p


def train(argv: Sequence[str] | None) -> int:
    args = parser().parse_args(argv)
    if common.load_registrations(args):
        return 0
    for flag in ("data_dir", "output_dir"):
        if not getattr(args, flag):
            raise ValueError(f"--{flag} is required")
    from t2t_lite import experiment as experiment_lib
    from t2t_lite import registry
    from t2t_lite.training.distribute import make_strategy
    from t2t_lite.training.trainer import TrainOptions, Trainer

    if args.generate_data:
        if not args.problem:
            raise ValueError("--problem is required with --generate_data")
        registry.problems[args.problem]().generate_data(
            args.data_dir, args.tmp_dir or args.data_dir)
    experiment = experiment_lib.resolve(args.problem, args.model, args.hparams_set,
                                        args.hparams, args.data_dir, args.output_dir)
    options = TrainOptions(
        train_steps=args.train_steps, train_minutes=args.train_minutes,
        eval_every_steps=args.eval_every_steps,
        eval_batches=args.eval_batches, save_checkpoints_steps=args.save_checkpoints_steps,
        save_checkpoints_minutes=args.save_checkpoints_minutes,
        keep_checkpoint_max=args.keep_checkpoint_max,
        log_every_steps=args.log_every_steps, seed=args.seed,
        decode_eval_every_steps=args.decode_eval_every_steps)
    dev_scorer = None
    if args.decode_eval_every_steps:
        from t2t_lite.decoding.dev_eval import DevDecodeScorer
        dev_scorer = DevDecodeScorer(experiment.problem, experiment.data_dir,
                                     num_examples=args.decode_eval_examples,
                                     decode_overrides=args.decode_eval_hparams)
    trainer = Trainer(experiment, options, make_strategy(), dev_scorer)
    metrics = trainer.train()
    print(json.dumps({"step": trainer.step, **metrics, **trainer.run_summary()}))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    return common.run_main("t2t-trainer", train, argv)


if __name__ == "__main__":
    raise SystemExit(main())
