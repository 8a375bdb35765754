"""The train/eval loop: distribution, checkpoints, resume, summaries, logging.

The optimizer step itself (accumulation, the global loss normalisation,
clipping, non-finite steps) is ``train_step.TrainStep``.
"""
from __future__ import annotations

import contextlib
import logging
import math
import os
import time
from typing import Iterator

import keras
import tensorflow as tf

from t2t_lite import interrupts
from t2t_lite.data.pipeline import batch_examples, then_truncated, truncate_features
from t2t_lite.data.tfrecords import shards_fingerprint
from t2t_lite.experiment import Experiment
from t2t_lite.hparams.common import LOSS_NORMALIZERS
from t2t_lite.progress import format_duration
from t2t_lite.training.best_checkpoint import LOSS, BestCheckpoint
from t2t_lite.training.checkpoint_state import checkpoints_on_disk
from t2t_lite.training.checkpoints import model_variables, training_checkpoint
from t2t_lite.training.distribute import is_chief, num_workers
from t2t_lite.training.evaluation import TeacherForcedEvaluation
from t2t_lite.training.loop_state import NonFiniteSteps, Window
from t2t_lite.training.moving_average import MovingAverage
from t2t_lite.training.optimizers import make_optimizer
from t2t_lite.training.resume_check import check_resumed_data, check_resumed_hparams
from t2t_lite.training.output_lock import OutputDirLock
from t2t_lite.training.run_checkpoints import RunCheckpoints
from t2t_lite.training.guided_alignment import check_guided_alignment
from t2t_lite.training.train_step import TrainStep
from t2t_lite.training.train_options import DevScorer, TrainOptions

SUM = tf.distribute.ReduceOp.SUM


class Trainer:
    """Trains ``experiment``'s model on its problem, resuming from ``output_dir``."""

    def __init__(self, experiment: Experiment, options: TrainOptions,
                 strategy: tf.distribute.Strategy | None = None,
                 dev_scorer: DevScorer | None = None):
        """``dev_scorer(model)`` returns score lines for the model as it is; it runs
        every ``options.decode_eval_every_steps``."""
        self.experiment = experiment
        self.options = options
        self.dev_scorer = dev_scorer
        self.hparams = experiment.hparams
        self.strategy = strategy or tf.distribute.get_strategy()
        if self.hparams.loss_normalizer not in LOSS_NORMALIZERS:
            raise ValueError(f"unknown loss_normalizer {self.hparams.loss_normalizer!r}; "
                             f"choose one of: {', '.join(LOSS_NORMALIZERS)}")
        TrainStep.check(self.hparams, self.strategy)
        keras.utils.set_random_seed(options.seed)
        with self.strategy.scope():
            self.model = experiment.build_model()
            dummy = tf.ones([1, 1], tf.int32)
            self.model({"inputs": dummy, "targets": dummy}, training=False)
            self.optimizer = make_optimizer(self.hparams)
            self.optimizer.build(self.model.trainable_variables)
            self.moving_average = (MovingAverage(
                {path: v for path, v in model_variables(self.model).items() if v.trainable},
                self.hparams.moving_average_decay) if self.hparams.moving_average_decay
                else None)
        check_guided_alignment(self.hparams, self.model, experiment.problem,
                               experiment.data_dir)
        self.model.training_step = lambda: self.optimizer.iterations
        self.train_step = TrainStep(self.model, self.optimizer, self.hparams, self.strategy,
                                    self.moving_average)
        if self.model.feeds_itself_in_training:
            self.model.sampling_constraint = experiment.problem.decode_constraint(
                experiment.data_dir)
        self.checkpoint = training_checkpoint(
            self.model, self.optimizer, experiment.data_identity(),
            self.moving_average.averages if self.moving_average else None)
        self.chief = is_chief(self.strategy)
        self.checkpoints = RunCheckpoints(
            self.checkpoint, experiment.output_dir, self.strategy, options.keep_checkpoint_max,
            options.keep_checkpoint_every_n_hours,
            self.moving_average.reset if self.moving_average else None)
        self._agree_fn = None
        self._deadline: float | None = None  # of --train_minutes, while training
        # Time in training steps (the first step of a run, which traces, left out).
        self.steady_seconds = 0.0
        self.steady_target_tokens = 0.0
        self._evaluation = TeacherForcedEvaluation(
            self.model, self.strategy, lambda split: self._batches(split, training=False),
            options.eval_batches)
        self._left_out_checked: set[str] = set()
        self.best = None
        if options.keep_best:
            by_loss = options.keep_best.metric == LOSS
            if not (options.evaluate if by_loss else dev_scorer and
                    options.decode_eval_every_steps):
                raise ValueError(f"the best checkpoint by {options.keep_best.metric} needs "
                                 + ("dev evaluations (evaluate)" if by_loss else
                                    "a dev_scorer and decode_eval_every_steps"))
            self.best = BestCheckpoint(options.keep_best, experiment.output_dir, self.chief,
                                       self._agree, self.checkpoints)
        self._last_eval: tuple[int, dict[str, float]] | None = None  # (step, dev metrics)

    @property
    def step(self) -> int:
        return int(self.optimizer.iterations.numpy())

    def restore(self) -> int:
        """Restores the latest checkpoint of output_dir, if any; returns the step.
        Changed hparams are refused or said first (``resume_check``)."""
        if checkpoints_on_disk(self.experiment.output_dir):
            check_resumed_hparams(self.experiment)
        return self.checkpoints.restore(lambda: self.step)

    def save(self) -> None:
        """A checkpoint of this step (and of the input's position)."""
        self.checkpoints.save(self.step)

    def _agree(self, *flags: bool) -> list[bool]:
        """Each flag true if it is on any worker: decisions taken by the clock
        (save now, time is up) must be the same on all, or their collectives hang."""
        if num_workers(self.strategy) == 1:
            return list(flags)
        if self._agree_fn is None:
            # Traced once: run eagerly, the strategy dispatches the all-reduce to a
            # thread per replica every step (two workers: 22 against 7 ms a step).
            @tf.function
            def sum_over_workers(local: tf.Tensor) -> tf.Tensor:
                return self.strategy.reduce(SUM, self.strategy.run(tf.identity, args=(local,)),
                                            axis=None)
            self._agree_fn = sum_over_workers
        summed = self._agree_fn(tf.constant([float(flag) for flag in flags]))
        return [bool(x > 0) for x in summed.numpy()]

    def _writer(self, name: str) -> tf.summary.SummaryWriter:
        """TensorBoard summaries of ``name`` (train, dev): the chief's only."""
        if not self.chief:
            return tf.summary.create_noop_writer()
        return tf.summary.create_file_writer(os.path.join(self.experiment.output_dir, name))

    # ----- data -----
    def _batches(self, split: str, training: bool) -> tf.data.Dataset:
        problem, data_dir = self.experiment.problem, self.experiment.data_dir
        weights = problem.corpus_weights(data_dir) if training else []
        dataset = problem.dataset(
            split, data_dir, shuffle_files=training, with_corpus=bool(weights),
            with_alignments=training and bool(self.hparams.guided_alignment_weight))
        tokens = self.hparams.batch_size * self.strategy.num_replicas_in_sync
        # A run resumed without an input state (RunCheckpoints) is seeded by its
        # step too, so that it does not replay the data order of the run's start.
        step = 0 if self.checkpoints.has_input_state(self.step) else self.step
        augment = problem.training_augmentation(data_dir, self.hparams) if training else None
        cuts = {"inputs": self.hparams.max_input_seq_length,
                "targets": self.hparams.max_target_seq_length}
        dataset = truncate_features(dataset, cuts)
        if augment is not None:
            augment = then_truncated(augment, cuts)
        return batch_examples(dataset, tokens, self._max_length(training), training,
                              seed=self.options.seed + step,
                              length_bucket_step=self.hparams.length_bucket_step,
                              augment=augment, corpus_weights=weights)

    def _step(self, train_step, iterator: Iterator) -> tuple:
        """One ``train_step``; a training stream that ends (it repeats: none of its
        examples fit a batch) is one line, not TensorFlow's End of sequence."""
        try:
            return train_step(iterator)
        except tf.errors.OutOfRangeError:
            tokens = self.hparams.batch_size * self.strategy.num_replicas_in_sync
            raise ValueError(
                f"no training example of {self.experiment.problem.name} fits a batch: each "
                f"has a side longer than max_length={self.hparams.max_length} (or the "
                f"{tokens}-token batch): raise max_length (or batch_size), or cut the "
                "sequences with max_input_seq_length / max_target_seq_length") from None

    def _max_length(self, training: bool) -> int:
        """Training drops examples over max_length; evaluation too unless
        eval_drop_long_sequences is False (T2T's default): then only the batch's
        token budget limits which dev examples count."""
        if training or self.hparams.eval_drop_long_sequences:
            return self.hparams.max_length
        return 0

    def train_on(self, dataset: tf.data.Dataset, num_steps: int) -> dict[str, float]:
        """Runs ``num_steps`` optimizer steps on global batches from ``dataset``."""
        train_step = self.train_step.compiled()
        iterator = iter(self.strategy.experimental_distribute_dataset(dataset))
        loss_sum = tokens = 0.0
        for _ in range(num_steps):
            batch_loss, batch_tokens, _, _ = self._step(train_step, iterator)
            loss_sum += float(batch_loss)
            tokens += float(batch_tokens)
        return {"loss": loss_sum / max(tokens, 1.0)}

    # ----- the loop -----
    def train(self) -> dict[str, float]:
        """Trains to ``options.train_steps``, evaluating and saving on the way.

        Returns the last evaluation's metrics. On KeyboardInterrupt (Ctrl-C, and
        SIGTERM under ``interrupts.handling_signals``) a checkpoint is saved first,
        so nothing since the last one is lost. The output dir is
        locked meanwhile (``OutputDirLock``): a second trainer there is refused.
        """
        # Missing or corrupt data fails here, before the output dir is touched.
        shards = self.experiment.problem.check_data("train", self.experiment.data_dir)
        self.checkpoints.input_shards = shards_fingerprint(shards)
        with OutputDirLock(self.experiment.output_dir) if is_chief(self.strategy) else (
                contextlib.nullcontext()):
            return self._train()

    def _train(self) -> dict[str, float]:
        opts = self.options
        self.restore()
        # A run that resumed has its own weights: a warm start is for its first start.
        warm_start = opts.warm_start if self.checkpoints.saved_step < 0 else None
        if warm_start:
            warm_start.load(self.model)
        # The best's record is read (or refused) before anything is written.
        by_loss = bool(self.best) and opts.keep_best.metric == LOSS
        catch_up = bool(self.best) and self.best.resume(
            self.step, opts.eval_every_steps if by_loss else opts.decode_eval_every_steps)
        if self.checkpoints.saved_step >= 0:
            check_resumed_data(self.experiment, self.checkpoints, self.step)
        if self.step >= opts.train_steps:
            logging.warning("nothing to train: the run in %s is at step %d already, and "
                            "train_steps is %d (raise it to train on)",
                            self.experiment.output_dir, self.step, opts.train_steps)
        # Built before the record is written: an augmentation the problem refuses
        # (training_augmentation) leaves no run folder behind.
        batches = self._batches("train", training=True)
        if self.chief:
            self.experiment.save()
            if warm_start:
                warm_start.write_record(self.experiment.output_dir)
        train_step = self.train_step.compiled()
        iterator: Iterator = iter(self.strategy.experimental_distribute_dataset(batches))
        if not self.checkpoints.follow_input(iterator, self.step):
            # Its state would not restore (said by the second follow_input): the input
            # restarts, seeded by the step as without a state.
            iterator = iter(self.strategy.experimental_distribute_dataset(
                self._batches("train", training=True)))
            self.checkpoints.follow_input(iterator, self.step)
        writer = self._writer("train")
        window = Window()
        self.checkpoints.start_clock()
        started = last_save = time.monotonic()
        # --train_minutes holds for the run, as --train_steps does: a resumed run has the
        # minutes its attempts before did not use (the checkpoint's training time).
        trained = self.checkpoints.training_ms() / 1000.0
        deadline = (started + opts.train_minutes * 60.0 - trained if opts.train_minutes
                    else float("inf"))
        self._deadline = deadline if opts.train_minutes else None
        time_spent = bool(opts.train_minutes) and trained >= opts.train_minutes * 60.0
        if time_spent and self.step < opts.train_steps:
            logging.warning("nothing to train: the run in %s has trained %s already, and "
                            "train_minutes is %g (raise it to train on)",
                            self.experiment.output_dir, format_duration(trained),
                            opts.train_minutes)
        first_step = True  # traces the step function: not counted in the speed
        skips = NonFiniteSteps(self.hparams.skip_nonfinite_steps)
        if catch_up:  # the step resumed at is the best metric's to evaluate
            if by_loss:
                self._dev_loss()
            else:
                self._dev_decodes()
        try:
            while (self.step < opts.train_steps and not time_spent
                   and not (self.best and self.best.stop)):
                step_started = time.monotonic()
                loss, tgt_tokens, src_tokens, nonfinite = self._step(train_step, iterator)
                if float(nonfinite):
                    skips.after_bad_step(float(loss), self.step, self.checkpoints.latest())
                    continue
                skips.consecutive = 0
                window.add(float(loss), float(tgt_tokens), float(src_tokens))
                if not first_step:
                    self.steady_seconds += time.monotonic() - step_started
                    self.steady_target_tokens += float(tgt_tokens)
                first_step = False
                step = self.step
                if step % opts.log_every_steps == 0:
                    self._log(writer, step, window.flush())
                now = time.monotonic()
                save_due, time_up = self._agree(
                    (now - last_save) / 60.0 >= opts.save_checkpoints_minutes, now >= deadline)
                if step % opts.save_checkpoints_steps == 0 or save_due:
                    self.save()
                    last_save = time.monotonic()
                if (opts.evaluate and step % opts.eval_every_steps == 0
                        and step < opts.train_steps):
                    self._dev_loss()
                if (self.dev_scorer and opts.decode_eval_every_steps
                        and step % opts.decode_eval_every_steps == 0):
                    self._dev_decodes()
                if time_up or (self.best and self.best.stop):
                    break
        except BaseException as error:
            # Ctrl-C, or SIGTERM (a preemption), also as the SystemError TensorFlow's C
            # code makes of it when the signal lands inside a call.
            if interrupts.interrupted(error) and self.checkpoints.saved_step != self.step:
                self.save()
            raise
        if self.checkpoints.saved_step != self.step:
            self.save()
        metrics = {}
        if opts.evaluate:
            metrics = (self._last_eval[1] if self._last_eval and self._last_eval[0] == self.step
                       else self._dev_loss())
        if self.best and self.best.wants(False, self.step):
            self._dev_decodes()  # the best may be the last checkpoint
        return metrics

    def _dev_loss(self) -> dict[str, float]:
        """``evaluate()`` of the dev split, fed to the best if it is its metric."""
        metrics = self.evaluate()
        self._last_eval = (self.step, metrics)
        if self.best and self.best.wants(True, self.step):
            self.best.track(self.step, metrics["loss"], f"dev loss {metrics['loss']:.4f}")
        return metrics

    def _dev_decodes(self) -> None:
        """``score_dev_decodes()`` (the chief's), fed to the best if it is its metric."""
        report = self.score_dev_decodes() if self.chief else []
        if self.best and self.best.wants(False, self.step):
            self.best.track(self.step, self.dev_scorer.figure(report) if report else math.nan,
                            report[0] if report else "")

    def run_summary(self) -> dict[str, float]:
        """The model's parameter count, the training speed of this process's steps
        (target tokens per second of step time, evaluation and saving excluded), and
        the run's training minutes in all its attempts (to its last checkpoint)."""
        return {"parameters": sum(int(v.shape.num_elements()) for v in
                                  self.model.trainable_variables),
                "train_target_tokens_per_s": self.steady_target_tokens / max(
                    self.steady_seconds, 1e-9),
                "training_minutes": int(self.checkpoint.training_ms) / 60000.0}

    def _eta(self, step: int, steps_per_s: float) -> str:
        """', ETA 1:02:03': until train_steps at this speed, or the train_minutes limit."""
        seconds = (self.options.train_steps - step) / steps_per_s if steps_per_s else 0.0
        if self._deadline is not None:
            seconds = min(seconds, self._deadline - time.monotonic())
        return f", ETA {format_duration(seconds)}" if seconds > 0 else ""

    def _log(self, writer, step: int, stats: dict[str, float]) -> None:
        lr = float(self.optimizer.learning_rate.numpy()) if hasattr(
            self.optimizer.learning_rate, "numpy") else float(self.optimizer.learning_rate)
        logging.info("step %d/%d: loss %.4f, lr %.3g, %.2f steps/s, %.0f target tokens/s, "
                     "%.0f source tokens/s%s", step, self.options.train_steps, stats["loss"], lr,
                     stats["steps_per_s"], stats["target_tokens_per_s"],
                     stats["source_tokens_per_s"], self._eta(step, stats["steps_per_s"]))
        with writer.as_default(step=step):
            for name, value in stats.items():
                tf.summary.scalar(name, value)
            tf.summary.scalar("learning_rate", lr)

    # ----- evaluation -----
    def evaluated_weights(self) -> contextlib.AbstractContextManager:
        """A block in which the model holds the weights that evaluation and decoding
        read: the moving averages when the run keeps them."""
        return self.moving_average.swapped_in() if self.moving_average else (
            contextlib.nullcontext())

    def evaluate(self, split: str = "dev") -> dict[str, float]:
        """Teacher-forced loss, perplexity, token and sequence accuracy on ``split``
        (of the weights' moving averages when the run keeps them)."""
        with self.evaluated_weights():
            metrics = self._evaluation(split)
        logging.info("eval %s at step %d: %s", split, self.step,
                     ", ".join(f"{k} {v:.4f}" for k, v in metrics.items()))
        if split not in self._left_out_checked and not self.options.eval_batches:
            self._left_out_checked.add(split)
            self._warn_left_out(split, self._evaluation.examples[split])
        writer = self._writer(split)
        with writer.as_default(step=self.step):
            for name, value in metrics.items():
                tf.summary.scalar(name, value)
        return metrics

    def _warn_left_out(self, split: str, evaluated: int) -> None:
        """One warning when the batches left examples out of ``split``'s figures."""
        total = int(self.experiment.problem.dataset(split, self.experiment.data_dir).reduce(
            0, lambda count, _: count + 1))
        if not total:
            logging.warning("eval %s: the split holds no examples, so these figures measure "
                            "nothing; write it with more data (t2t-datagen)", split)
        elif evaluated < total:
            tokens = self.hparams.batch_size * self.strategy.num_replicas_in_sync
            limit = min(self._max_length(False) or tokens, tokens)
            remedy = ("raise max_length, or set eval_drop_long_sequences=false,"
                      if limit < tokens else "raise batch_size")
            logging.warning(
                "eval %s: %d of its %d examples have a side longer than %d tokens "
                "(max_length=%d, batch_size=%d) and are left out of these figures, as "
                "such examples are of training; %s to include them", split,
                total - evaluated, total, limit, self.hparams.max_length, tokens, remedy)

    def score_dev_decodes(self) -> list[str]:
        """Runs ``dev_scorer``; logs its lines and writes them as a TensorBoard text."""
        started = time.monotonic()
        with self.evaluated_weights():
            lines = self.dev_scorer(self.model)
        logging.info("dev decodes at step %d (%.0f s): %s", self.step,
                     time.monotonic() - started, " | ".join(lines))
        writer = self._writer("dev")
        with writer.as_default(step=self.step):
            tf.summary.text("decode_score", "\n".join(lines))
        return lines
