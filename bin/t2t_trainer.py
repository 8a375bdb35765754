"""t2t-trainer: train a registered model on a registered problem.

Resumes from the latest checkpoint in --output_dir; uses every local GPU
(MirroredStrategy), the cluster in TF_CONFIG (MultiWorkerMirroredStrategy), or
the CPU.
"""
from __future__ import annotations

import argparse
import dataclasses
import glob
import json
import os
from typing import Any, Sequence

from t2t_lite import disk_space, interrupts
from t2t_lite.bin import common


def parser() -> argparse.ArgumentParser:
    p = common.CommandParser(prog="t2t-trainer", description=__doc__)
    common.add_registry_flags(p, required=False)
    p.add_argument("--tmp_dir", help="raw downloads for --generate_data")
    p.add_argument("--generate_data", action="store_true",
                   help="write the problem's vocabulary and shards first (skips done work)")
    common.add_data_options_flag(p)
    common.add_encode_processes_flag(p)
    p.add_argument("--train_steps", type=common.at_least(1), default=250000)
    p.add_argument("--train_minutes", type=common.non_negative_float, default=0.0,
                   help="stop after this many minutes of training in all the run's "
                        "attempts, as --train_steps counts its steps: a resumed run trains "
                        "the minutes left (0 = no limit)")
    p.add_argument("--eval_every_steps", "--local_eval_frequency", type=common.at_least(1),
                   default=1000,
                   help="evaluate on the dev split every N steps (and at the end)")
    p.add_argument("--eval_batches", "--eval_steps", type=common.at_least(0), default=0,
                   help="dev batches per evaluation; 0 = the whole dev split")
    p.add_argument("--eval_early_stopping_steps", type=common.at_least(0), default=0,
                   help="stop when the dev loss has not improved for this many steps "
                        "(checked at each evaluation); 0 = never. Keeps the best by the dev "
                        "loss as --best_checkpoint_metric=loss does")
    p.add_argument("--best_checkpoint_metric",
                   help="keep the checkpoint of the best dev evaluation by this metric in "
                        "OUTPUT_DIR/best (a run folder for t2t-decoder, t2t-exporter, "
                        "t2t-avg-all; OUTPUT_DIR/best.json says why it won): loss (the dev "
                        "loss, every --eval_every_steps) or a decode metric: the problem's "
                        "own (bleu, evalb, sequence_accuracy) or a score of any text (bleu, "
                        "chrf; ter, where lower is better), every --decode_eval_every_steps")
    p.add_argument("--patience", type=common.at_least(0), default=0,
                   help="stop after this many evaluations of --best_checkpoint_metric "
                        "without improvement; 0 = never")
    p.add_argument("--min_improvement", type=common.non_negative_float, default=0.0,
                   help="an evaluation improves on the best when it is better by more "
                        "than this (0: any better value; a tie keeps the first)")
    p.add_argument("--schedule", default="train_and_evaluate", choices=SCHEDULES,
                   help="train_and_evaluate (or continuous_train_and_eval, tensor2tensor's "
                        "name): train, evaluating on the way; train: no evaluation; "
                        "evaluate: evaluate the latest checkpoint once")
    p.add_argument("--decode_eval_every_steps", type=common.at_least(0), default=0,
                   help="decode the first --decode_eval_examples dev examples as t2t-decoder "
                        "would and print their BLEU (F1 for parsing) this often; 0 = never")
    p.add_argument("--decode_eval_examples", type=common.at_least(1), default=100)
    p.add_argument("--decode_eval_hparams", default="",
                   help="decode settings for it, as t2t-decoder's --decode_hparams")
    p.add_argument("--save_checkpoints_steps", type=common.at_least(1), default=1000)
    p.add_argument("--save_checkpoints_minutes", type=common.positive_float, default=10.0)
    p.add_argument("--save_checkpoints_secs", type=common.positive_float,
                   help="tensor2tensor's spelling of --save_checkpoints_minutes, in seconds")
    p.add_argument("--keep_checkpoint_max", type=common.at_least(1), default=20)
    p.add_argument("--keep_checkpoint_every_n_hours", type=common.non_negative_float,
                   default=0.0,
                   help="also keep one checkpoint per this many hours of training, beyond "
                        "--keep_checkpoint_max; 0 = no")
    p.add_argument("--log_every_steps", type=common.at_least(1), default=100)
    p.add_argument("--seed", "--random_seed", type=common.between(0, 2**32 - 1), default=1234,
                   help="seeds weights, dropout and the data order (NumPy's range)")
    p.add_argument("--warm_start_from", metavar="RUN_OR_CHECKPOINT",
                   help="fine-tune: start from the weights of a run folder (its latest "
                        "checkpoint), a t2t-avg-all folder or one checkpoint (RUN/ckpt-N), "
                        "with the step, optimizer state and learning-rate schedule afresh "
                        "(the same model, architecture and vocabulary; the problem and "
                        "training hparams may differ); ignored once --output_dir holds "
                        "checkpoints, which the run resumes from")
    p.add_argument("--export_saved_model", action="store_true",
                   help="after training, export the model as t2t-exporter would, to "
                        "OUTPUT_DIR/export/STEP (the problem's decode settings)")
    common.refuse_flag(p, "--worker_gpu", "every local GPU is used (MirroredStrategy); "
                       "choose them with CUDA_VISIBLE_DEVICES")
    common.refuse_flag(p, "--worker_replicas", "workers come from TF_CONFIG "
                       "(MultiWorkerMirroredStrategy); see docs/CLUSTER.md",
                       harmless=("1",))
    common.refuse_flag(p, "--ps_replicas", "there are no parameter servers: workers "
                       "all-reduce (MultiWorkerMirroredStrategy from TF_CONFIG)",
                       harmless=("0",))
    common.refuse_flag(p, "--use_tpu", "t2t-lite trains on CPUs and GPUs",
                       harmless=("false", "0"))
    _declare_when_flags_act(p)
    return p


def _declare_when_flags_act(p: common.CommandParser) -> None:
    """Flags that a schedule or a missing flag leaves without effect, refused when typed."""
    def trains(args: argparse.Namespace) -> bool:
        return args.schedule != "evaluate"

    for flag in ("--decode_eval_hparams", "--decode_eval_examples"):
        p.acts_only(flag, "with --decode_eval_every_steps=N (N > 0) while training",
                    lambda args: args.decode_eval_every_steps > 0 and trains(args))
    for flag in ("--eval_every_steps", "--eval_early_stopping_steps"):
        p.acts_only(flag, "when --schedule trains and evaluates (train_and_evaluate)",
                    lambda args: args.schedule not in ("train", "evaluate"))
    p.acts_only("--eval_batches", "when --schedule evaluates (not --schedule=train)",
                lambda args: args.schedule != "train")
    for flag in ("--decode_eval_every_steps", "--export_saved_model", "--warm_start_from"):
        p.acts_only(flag, "when --schedule trains (not --schedule=evaluate)", trains)
    for flag in ("--tmp_dir", "--data_options", "--num_concurrent_processes"):
        p.acts_only(flag, "with --generate_data (later commands read the data options "
                    "recorded in --data_dir)", lambda args: args.generate_data)
    p.acts_only("--best_checkpoint_metric", "when --schedule trains (not --schedule=evaluate)",
                trains)
    p.acts_only("--patience", "with --best_checkpoint_metric",
                lambda args: args.best_checkpoint_metric is not None)
    p.acts_only("--min_improvement", "with --best_checkpoint_metric or "
                "--eval_early_stopping_steps", lambda args: keeps_best(args))


def keeps_best(args: argparse.Namespace) -> bool:
    return args.best_checkpoint_metric is not None or args.eval_early_stopping_steps > 0


def keep_best_options(args: argparse.Namespace, problem: Any) -> Any:
    """The trainer's ``KeepBestOptions`` from the flags (None: no best kept), refused
    in one line where the metric is not measured."""
    from t2t_lite.metrics.scoring import TEXT_METRICS, lower_is_better
    from t2t_lite.training.best_checkpoint import LOSS, KeepBestOptions

    if not keeps_best(args) or args.schedule == "evaluate":
        return None
    metric = LOSS if args.best_checkpoint_metric is None else args.best_checkpoint_metric
    flag = f"--best_checkpoint_metric={metric}"
    if metric not in (LOSS, problem.eval_metric, *TEXT_METRICS):
        others = ", ".join(name for name in TEXT_METRICS if name != problem.eval_metric)
        raise ValueError(f"{flag}: choose {LOSS} (the dev loss), {problem.eval_metric} (the "
                         f"decode metric of {problem.name}) or a score of any text: {others}")
    if metric == LOSS and args.schedule == "train":
        raise ValueError(f"{flag} needs the dev evaluations of --schedule=train_and_evaluate; "
                         "--schedule=train makes none")
    if metric != LOSS and not args.decode_eval_every_steps:
        raise ValueError(f"{flag} is measured by decoding the dev sample: give "
                         "--decode_eval_every_steps=N")
    if args.eval_early_stopping_steps and metric != LOSS:
        raise ValueError(f"--eval_early_stopping_steps stops on the dev loss, not on {metric}: "
                         f"give --patience=N (evaluations of {metric}) instead")
    if args.eval_early_stopping_steps and args.patience:
        raise ValueError("--patience and --eval_early_stopping_steps are two patiences for one "
                         "metric: give one")
    return KeepBestOptions(metric, args.patience, args.eval_early_stopping_steps,
                           args.min_improvement,
                           lower_is_better=metric != LOSS and lower_is_better(metric))


# Decode hparams of file decoding that the dev score has no use for.
DEV_DECODE_UNUSED = dict.fromkeys(("return_beams", "write_beam_scores", "num_samples"),
                                  "the dev score is of each input's best output")


# tensor2tensor's schedules that t2t-lite runs; continuous_train_and_eval was its default.
SCHEDULES = ("train_and_evaluate", "continuous_train_and_eval", "train", "evaluate")


def train_options(args: argparse.Namespace, keep_best: Any = None) -> Any:
    """The trainer's ``TrainOptions`` from the flags (tensor2tensor's spellings mapped),
    with ``keep_best`` (``keep_best_options``); the warm start, checked against the
    run, is set apart."""
    from t2t_lite.training.train_options import TrainOptions

    minutes = args.save_checkpoints_minutes
    if args.save_checkpoints_secs is not None:
        minutes = args.save_checkpoints_secs / 60.0
    return TrainOptions(
        train_steps=args.train_steps, train_minutes=args.train_minutes,
        eval_every_steps=args.eval_every_steps,
        eval_batches=args.eval_batches, save_checkpoints_steps=args.save_checkpoints_steps,
        save_checkpoints_minutes=minutes,
        keep_checkpoint_max=args.keep_checkpoint_max,
        keep_checkpoint_every_n_hours=args.keep_checkpoint_every_n_hours,
        log_every_steps=args.log_every_steps, seed=args.seed,
        decode_eval_every_steps=args.decode_eval_every_steps,
        evaluate=args.schedule != "train", keep_best=keep_best)


def _declare_warm_start(paths: Any, source: str) -> None:
    """The warm start's source as an input: a folder read whole, or a checkpoint's files."""
    if os.path.isdir(source) or not source.strip():
        paths.input_folder("--warm_start_from", source)  # refuses an empty path
    else:
        paths.read_also("--warm_start_from", *glob.glob(glob.escape(source) + ".*"))


def train(argv: Sequence[str] | None) -> int:
    args = parser().parse_args(argv)
    if common.load_registrations(args):
        return 0
    for flag in ("data_dir", "output_dir"):
        if not getattr(args, flag):
            raise ValueError(f"--{flag} is required")
    from t2t_lite import experiment as experiment_lib
    from t2t_lite import output_paths, registry
    from t2t_lite.training.checkpoint_state import checkpoints_on_disk
    from t2t_lite.training.distribute import make_strategy, read_tf_config
    from t2t_lite.training.trainer import Trainer

    read_tf_config()  # a mistake in it stops the run before anything is written
    paths = output_paths.Paths("t2t-trainer")
    if args.warm_start_from is not None:
        _declare_warm_start(paths, args.warm_start_from)
    if args.generate_data:
        if not args.problem:
            raise ValueError("--problem is required with --generate_data")
        keep_best_options(args, registry.problems[args.problem]())  # refused before the data
        for flag in ("data_dir", "tmp_dir"):
            if getattr(args, flag):
                setattr(args, flag, paths.shared_folder(f"--{flag}", getattr(args, flag)))
        paths.run_folder("--output_dir", args.output_dir)
        from t2t_lite.data import data_options
        problem = common.generated_problem(args.problem, args)
        tmp_dir = args.tmp_dir or args.data_dir
        common.generate_data(problem, args.data_dir, tmp_dir, data_options.prepare(
            problem, args.data_dir, args.data_options, tmp_dir))
    args.data_dir = paths.input_folder("--data_dir", args.data_dir)
    args.output_dir = paths.run_folder("--output_dir", args.output_dir)
    for kept in checkpoints_on_disk(args.output_dir)[-1:]:  # interrupted while starting
        interrupts.describe(f"while starting the run in {args.output_dir}",
                            f"{kept} is kept as it was; run the same command again to "
                            "resume from it")
    experiment = experiment_lib.resolve(args.problem, args.model, args.hparams_set,
                                        args.hparams, args.data_dir, args.output_dir,
                                        must_exist=args.schedule == "evaluate",
                                        usr_dir=args.t2t_usr_dir)
    keep_best = keep_best_options(args, experiment.problem)
    warm_start = None
    if args.warm_start_from is not None:
        from t2t_lite.training.warm_start import plan_warm_start
        warm_start = plan_warm_start(experiment, args.warm_start_from)
    options = dataclasses.replace(train_options(args, keep_best), warm_start=warm_start)
    dev_scorer = None
    if args.decode_eval_every_steps:
        from t2t_lite.decoding.dev_eval import DevDecodeScorer
        from t2t_lite.decoding.settings import decode_settings
        settings = decode_settings(args.decode_eval_hparams, experiment.problem,
                                   experiment.hparams, source="--decode_eval_hparams",
                                   unused=DEV_DECODE_UNUSED)
        from t2t_lite.training.best_checkpoint import LOSS
        ranked_by = keep_best.metric if keep_best and keep_best.metric != LOSS else None
        dev_scorer = DevDecodeScorer(experiment.problem, experiment.data_dir, settings,
                                     num_examples=args.decode_eval_examples, metric=ranked_by)
        if ranked_by:
            dev_scorer.check_figure()
    trainer = Trainer(experiment, options, make_strategy(), dev_scorer)
    if args.schedule == "evaluate":
        if not trainer.restore():
            raise ValueError(f"no checkpoint in {args.output_dir} to evaluate; train first")
        print(json.dumps({"step": trainer.step, **trainer.evaluate()}))
        return 0
    # Each save writes a checkpoint of the newest one's size beside it. Read from the
    # files, not the index: a damaged index is the restore's to name.
    newest = checkpoints_on_disk(args.output_dir)[-1:]
    for latest in newest:
        disk_space.require_free("--output_dir", args.output_dir, disk_space.files_size(
            glob.glob(glob.escape(latest) + ".*")), f"a checkpoint (as {latest})")
    with common.writing(f"while training in {args.output_dir}", "--output_dir",
                        args.output_dir, left="its last complete checkpoint is kept"):
        try:
            metrics = trainer.train()
        except BaseException as error:
            if not interrupts.interrupted(error):  # as a KeyboardInterrupt or through C code
                raise
            latest = trainer.checkpoints.latest()
            interrupts.describe(
                f"at step {trainer.step}",
                f"{latest} is saved with every step so far; run the same command again to "
                "resume from it" if latest else "no checkpoint was saved; run the same "
                "command again to start")
            raise
    summary = {"step": trainer.step, **metrics, **trainer.run_summary(),
               **(trainer.best.summary() if trainer.best else {})}
    if args.export_saved_model and trainer.chief:
        from t2t_lite.decoding.settings import decode_settings
        from t2t_lite.export.exporter import export_model
        summary["export_dir"] = os.path.join(experiment.output_dir, "export", str(trainer.step))
        export_model(trainer.model, experiment.problem, experiment.data_dir,
                     summary["export_dir"], decode_settings("", experiment.problem,
                                                            experiment.hparams))
    print(json.dumps(summary))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    return common.run_main("t2t-trainer", train, argv)


if __name__ == "__main__":
    raise SystemExit(main())
