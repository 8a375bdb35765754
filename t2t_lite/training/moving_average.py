"""An exponential moving average of a model's weights, kept beside them while it trains
(hparam ``moving_average_decay``; OpenNMT-tf's ``moving_average_decay``, fairseq's
``--ema-decay``, Marian's ``--exponential-smoothing``).

After each applied step, every trainable weight's average moves towards it:
``average = d * average + (1 - d) * weight`` with ``d = min(decay, (1 + step) / (10 +
step))``, TensorFlow's ``ExponentialMovingAverage(num_updates=step)`` rule, which
OpenNMT-tf uses: the first steps, where the weights move most, are forgotten quickly.

The averages are checkpointed under ``AVERAGE`` (``moving_average/<weight path>``) beside
the weights (``model/<weight path>``), so a killed run resumes them exactly, and every
reader of a run takes them in the weights' place (``checkpoints.load_weights``; its
``averaged=False``, ``--raw_weights`` of the commands, reads the trained weights). The
trainer's dev evaluations and decodes (so the best checkpoint too) run on them
(``swapped_in``). Each average is one variable for all replicas (written from the first:
after the all-reduced update every replica's weights are the same).
"""
from __future__ import annotations

import contextlib
from typing import Iterable, Iterator

import keras
import tensorflow as tf

from t2t_lite import interrupts

AVERAGE = "moving_average"  # the checkpoint's key of the averaged weights


class MovingAverage:
    """The averages of ``weights`` (trainable weights by checkpoint path), created in the
    strategy's scope, equal to the weights at first."""

    def __init__(self, weights: dict[str, keras.Variable], decay: float):
        if not 0.0 < decay < 1.0:
            raise ValueError(f"moving_average_decay={decay}: must be in (0, 1) (0: off)")
        self.decay = decay
        self.weights = weights
        self.averages = {
            path: tf.Variable(lambda w=weight: tf.identity(w), trainable=False,
                              name=f"{AVERAGE}/{path}".replace(":", "_"),
                              synchronization=tf.VariableSynchronization.ON_WRITE,
                              aggregation=tf.VariableAggregation.ONLY_FIRST_REPLICA)
            for path, weight in weights.items()}

    def update(self, step: tf.Tensor) -> None:
        """One step of the average, after the optimizer's ``step``-th update (in the
        replica context of the step or outside any)."""
        step = tf.cast(step, tf.float32)
        decay = tf.minimum(self.decay, (1.0 + step) / (10.0 + step))
        for path, weight in self.weights.items():
            average = self.averages[path]
            average.assign_sub((1.0 - decay) * (average - tf.cast(weight, average.dtype)))

    def reset(self) -> None:
        """Each average to its weight's value: a run resumed from a checkpoint written
        without averages starts them there."""
        for path, weight in self.weights.items():
            self.averages[path].assign(tf.identity(weight))

    @contextlib.contextmanager
    def swapped_in(self) -> Iterator[None]:
        """The model holds the averages in the block, its trained weights again after it
        (put back whole even when a signal arrives: ``interrupts.deferred``)."""
        trained = {path: tf.identity(weight) for path, weight in self.weights.items()}
        for path, weight in self.weights.items():
            weight.assign(self.averages[path])
        try:
            yield
        finally:
            with interrupts.deferred():
                for path, weight in self.weights.items():
                    weight.assign(trained[path])


def holds_average(path: str) -> bool:
    """Whether checkpoint ``path`` holds averaged weights."""
    return names_hold_average(tf.train.load_checkpoint(path).get_variable_to_shape_map())


def names_hold_average(names: Iterable[str]) -> bool:
    """Whether a checkpoint of these tensor names holds averaged weights."""
    return any(name.startswith(AVERAGE + "/") for name in names)
