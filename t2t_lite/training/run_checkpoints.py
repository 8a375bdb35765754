"""Where a run's checkpoints go and come from.

* The model and optimizer: ``OUTPUT_DIR/ckpt-N`` (``tf.train.CheckpointManager``).
  Under TF_CONFIG every worker takes part in each save, but only the chief
  writes into the output dir; the others write into a folder of their own and
  delete it at once (as TF's multi-worker guide does), so no two processes ever
  write one file.
* The training input's position: ``OUTPUT_DIR/input_state/worker_0/ckpt-N``,
  written just before the model's checkpoint N. A run resumed from checkpoint
  N continues the input exactly where the run that wrote it was, so killing
  and resuming a run changes none of the batches it trains on. (On one device:
  tf.distribute cannot save its iterators over several replicas, so a
  multi-GPU or multi-worker run resumes with its input reshuffled instead.)

A save that fails (a full disk, a lost mount) removes what it had written of
checkpoint N and raises ``CheckpointWriteError`` naming the checkpoint that is
kept: the run's last complete one, from which a re-run resumes.

Resuming checks before it trusts (``checkpoint_state.resume_checkpoint``): an
index naming a missing checkpoint, a damaged checkpoint, a garbage index or a
checkpoint of another architecture is refused in one line, before anything is
written. A damaged input state, one saved over other shards than the data dir
holds now (its shards' fingerprint is saved with it), or one TensorFlow would not
restore is only a warning: the input restarts, reshuffled. The state names the
shards, not their folder (``tfrecords.read_shards``), so a run resumes from any
working folder and after its data was moved, renamed, copied or linked.
"""
from __future__ import annotations

import logging
import os
import re
import time
from typing import Callable, Iterator

import tensorflow as tf

from t2t_lite import interrupts
from t2t_lite.errors import op_error_detail
from t2t_lite.experiment import HPARAMS_FILE
from t2t_lite.progress import format_duration
from t2t_lite.training.checkpoint_state import (INDEX, check_architecture, checkpoint_step,
                                                checkpoints_on_disk, damage,
                                                recorded_architecture, resume_checkpoint,
                                                write_index)
from t2t_lite.training.checkpoints import (architecture_record, restorable_part,
                                          restore_training_time)
from t2t_lite.training.distribute import is_chief
from t2t_lite.training.moving_average import holds_average

_COMPLETE_STATE = re.compile(r"ckpt-(\d+)\.index")
_SHARDS_KEY = "shards/.ATTRIBUTES/VARIABLE_VALUE"


class CheckpointWriteError(OSError):
    """A checkpoint could not be written; the previous one is kept."""


class RunCheckpoints:
    """Saves and restores ``checkpoint`` (model, optimizer, step) and the input."""

    def __init__(self, checkpoint: tf.train.Checkpoint, output_dir: str,
                 strategy: tf.distribute.Strategy, keep_max: int,
                 keep_every_n_hours: float = 0.0,
                 start_average: Callable[[], None] | None = None):
        """``start_average``: sets the weights' moving averages from the weights, for a
        run that keeps them resumed from a checkpoint written without."""
        self.checkpoint = checkpoint
        self.start_average = start_average
        self.output_dir = output_dir
        self.chief = is_chief(strategy)
        self.task_id = getattr(getattr(strategy, "cluster_resolver", None), "task_id", 0) or 0
        self._save_dir = output_dir if self.chief else os.path.join(
            output_dir, ".worker_saves", f"worker_{self.task_id}")
        self.keep_max = keep_max
        self.keep_every_n_hours = keep_every_n_hours
        # Made once the index is known good (restore): CheckpointManager reads it.
        self._manager: tf.train.CheckpointManager | None = None
        self.saved_step = -1
        self._input: tf.train.Checkpoint | None = None
        # The fingerprint of the shards the input reads (tfrecords.shards_fingerprint),
        # saved with its position: a position is restored only over the same shards.
        self.input_shards = ""
        # Input states that failed to restore in this attempt: step -> why.
        self._unrestorable: dict[int, str] = {}
        self._clock_from: float | None = None  # this attempt's start (start_clock)
        self._ms_before = 0  # the training time of the attempts before it

    def start_clock(self) -> None:
        """Counts training time from now on top of the restored checkpoint's: each save
        records the run's training time in all its attempts."""
        self._ms_before = int(self.checkpoint.training_ms)
        self._clock_from = time.monotonic()

    def training_ms(self) -> int:
        """The run's training time so far, in all its attempts (milliseconds)."""
        if self._clock_from is None:
            return int(self.checkpoint.training_ms)
        return self._ms_before + round((time.monotonic() - self._clock_from) * 1000)

    @property
    def manager(self) -> tf.train.CheckpointManager:
        if self._manager is None:
            self._manager = tf.train.CheckpointManager(
                self.checkpoint, self._save_dir, self.keep_max, checkpoint_name="ckpt",
                keep_checkpoint_every_n_hours=self.keep_every_n_hours or None)
        return self._manager

    def latest(self) -> str | None:
        """The newest checkpoint of the run (the chief's)."""
        return tf.train.latest_checkpoint(self.output_dir)

    def restore(self, step_of: Callable[[], int]) -> int:
        """Restores the latest checkpoint, if any; returns the step (``step_of()``).

        The checkpoint is checked first; a missing or damaged one, or one of
        another architecture than the model's hparams, raises CheckpointStateError."""
        latest = resume_checkpoint(self.output_dir)
        if latest:
            check_architecture(latest, recorded_architecture(latest),
                               architecture_record(self.checkpoint),
                               os.path.join(self.output_dir, HPARAMS_FILE))
            if self.chief and not tf.io.gfile.exists(os.path.join(self.output_dir, INDEX)):
                # Index the checkpoints there are (the one resumed from is the newest),
                # so that the manager keeps only keep_max of them from now on.
                write_index(self.output_dir, [p for p in checkpoints_on_disk(self.output_dir)
                                              if checkpoint_step(p) <= checkpoint_step(latest)])
            # expect_partial: the architecture record was checked above, not restored
            # (nor averages a run that no longer keeps them left).
            averaged = holds_average(latest)
            restorable_part(self.checkpoint, with_average=averaged).restore(
                latest).assert_existing_objects_matched().expect_partial()
            if self.start_average and not averaged:
                logging.info("%s holds no moving average of the weights "
                             "(moving_average_decay was 0): it starts from them", latest)
                self.start_average()
            self.saved_step = step_of()
            if restore_training_time(self.checkpoint, latest):
                logging.info("resumed from %s at step %d, after %s of training", latest,
                             self.saved_step,
                             format_duration(int(self.checkpoint.training_ms) / 1000.0))
            else:
                logging.info("resumed from %s at step %d (its training time is not recorded: "
                             "--train_minutes counts from now)", latest, self.saved_step)
        return step_of()

    def input_state_damage(self, step: int) -> str | None:
        """What is wrong with the input's position at ``step`` (missing, damaged, saved
        over other shards than ``input_shards``, refused by TensorFlow), or None."""
        problem = damage(self._input_prefix(step)) or self._unrestorable.get(step)
        if problem:
            return problem
        recorded = self.recorded_shards(step)
        if recorded is None:
            return "it does not record the shards it was saved over"
        if recorded != self.input_shards:
            return "it was saved over other train shards than the data dir holds now"
        return None

    def recorded_shards(self, step: int) -> str | None:
        """The fingerprint of the shards the input state of ``step`` was saved over
        (None: no such state, or one written before states recorded it)."""
        try:
            value = tf.train.load_variable(self._input_prefix(step), _SHARDS_KEY)
        except (tf.errors.OpError, ValueError):
            return None
        return value.decode() if isinstance(value, bytes) else None

    def has_input_state(self, step: int) -> bool:
        return self.input_state_damage(step) is None

    def follow_input(self, iterator: Iterator, step: int) -> bool:
        """Saves ``iterator``'s position with every checkpoint from now on and, when
        resuming at ``step``, moves it to where the run that saved ``step`` was.

        False when the state of ``step`` looked usable but would not restore (TensorFlow
        refused it): ``iterator`` may be half-restored, so the caller builds its input
        again, which ``has_input_state`` now tells to restart (seeded by the step), and
        follows that one instead."""
        if not isinstance(iterator, tf.__internal__.tracking.Trackable):
            # tf.distribute's iterators over several replicas cannot be saved: such
            # a run resumes with its input reshuffled (seeded by the step).
            return True
        self._input = tf.train.Checkpoint(iterator=iterator,
                                          shards=tf.Variable(self.input_shards, dtype=tf.string))
        problem = self.input_state_damage(step) if step else None
        if step and not problem:
            try:
                self._input.read(self._input_prefix(step)).assert_consumed()
            except (tf.errors.OpError, AssertionError, ValueError) as error:
                detail = (op_error_detail(error) if isinstance(error, tf.errors.OpError)
                          else str(error)).strip() or type(error).__name__
                self._unrestorable[step] = f"it would not restore: {detail.splitlines()[0][:300]}"
                self._input = None
                return False
            logging.info("the input continues where step %d left it", step)
        elif step:
            logging.warning("no usable input state for step %d (%s): the input restarts, "
                            "reshuffled", step, problem)
        return True

    def save(self, step: int) -> None:
        """Checkpoint ``step``: the input's position first, then the model's.

        On failure, whatever was written of ``step`` is removed and
        ``CheckpointWriteError`` names the last complete checkpoint, which stays.
        """
        try:
            with interrupts.deferred():  # Ctrl-C waits for the save: never half a checkpoint
                self._write(step)
        except (tf.errors.OpError, OSError) as error:
            self._remove_incomplete(step)
            detail = op_error_detail(error) if isinstance(error, tf.errors.OpError) else error
            kept = self.latest()
            raise CheckpointWriteError(
                f"could not write checkpoint {step} into {self._save_dir} ({detail}); "
                + (f"{kept} is the last complete checkpoint and is kept: make room and re-run "
                   "the same command to resume from it" if kept else
                   "no checkpoint of this run is complete yet: make room and re-run")) from None
        self.saved_step = step

    def _write(self, step: int) -> None:
        self.checkpoint.training_ms.assign(self.training_ms())
        if self._input is not None:
            self._input.write(self._input_prefix(step))
            self._forget_old_input_states()
        self.manager.save(checkpoint_number=step)
        if not self.chief:
            tf.io.gfile.rmtree(self._save_dir)
            parent = os.path.dirname(self._save_dir)
            try:
                if not tf.io.gfile.listdir(parent):
                    tf.io.gfile.rmtree(parent)
            except tf.errors.NotFoundError:  # another worker removed it first
                pass

    def _remove_incomplete(self, step: int) -> None:
        """Frees what a failed save of ``step`` left (TF's ``ckpt-N_temp/``, data
        files without their index), unless the save got as far as being the latest."""
        prefix = os.path.join(self._save_dir, f"ckpt-{step}")
        if tf.train.latest_checkpoint(self._save_dir) == prefix:
            return
        leftovers = (tf.io.gfile.glob(prefix + "_temp") + tf.io.gfile.glob(prefix + ".*")
                     + tf.io.gfile.glob(self._input_prefix(step) + "_temp")
                     + tf.io.gfile.glob(self._input_prefix(step) + ".*"))
        for path in leftovers:
            try:
                if tf.io.gfile.isdir(path):
                    tf.io.gfile.rmtree(path)
                else:
                    tf.io.gfile.remove(path)
            except tf.errors.OpError:  # freeing space is best effort; the error is reported
                logging.warning("could not remove %s", path)

    def _input_prefix(self, step: int) -> str:
        return os.path.join(self.output_dir, "input_state", f"worker_{self.task_id}",
                            f"ckpt-{step}")

    def _forget_old_input_states(self) -> None:
        folder = os.path.dirname(self._input_prefix(0))
        # Complete states only: a killed write leaves ckpt-N_temp/ behind.
        steps = sorted(int(match.group(1)) for match in map(
            _COMPLETE_STATE.fullmatch, tf.io.gfile.listdir(folder)) if match)
        for step in steps[:-self.keep_max]:
            for path in tf.io.gfile.glob(self._input_prefix(step) + ".*"):
                tf.io.gfile.remove(path)
