"""Training-time changes of examples: the ``Augment`` contract, and several as one.

An augment changes one training example each time it is read (``batch_examples``
applies it after shuffling and repeating), from a seed made of the run's seed and
the example's position in the repeated stream: other draws each epoch, the same
ones each run, and the same after a resume (the position is in the input's state).
"""
from __future__ import annotations

from typing import Callable

import tensorflow as tf

# (example, seed int64[2]) -> example: a training-time change of one example.
Augment = Callable[[dict[str, tf.Tensor], tf.Tensor], dict[str, tf.Tensor]]


def chained(augments: list[Augment]) -> Augment | None:
    """The augments applied in turn, each with a seed of its own; None for none."""
    if not augments:
        return None
    if len(augments) == 1:
        return augments[0]

    def augment(example: dict[str, tf.Tensor], seed: tf.Tensor) -> dict[str, tf.Tensor]:
        for salt, each in enumerate(augments):
            example = each(example, tf.random.experimental.stateless_fold_in(seed, salt))
        return example

    return augment

