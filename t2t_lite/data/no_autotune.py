"""tf.data's autotuning off, for every input pipeline that lives long."""
from __future__ import annotations

import tensorflow as tf


def without_autotuning(dataset: tf.data.Dataset) -> tf.data.Dataset:
    """``dataset`` with tf.data's autotuning off.

    Autotuning runs an optimisation thread whose pause between optimisations
    doubles up to a minute, and deleting an iterator waits for that pause to end
    (TensorFlow 2.21): after 130 s of reading, deleting a training iterator took
    12 s in two tries of four, 0.24-0.29 s in the others, and 0.23-0.32 s every
    time with autotuning off (benchmarks/iterator_deletion.py). A finished
    training run could wait up to a minute for nothing, and the test suite lost
    minutes to it (whenever Python's garbage collector freed an old iterator).
    Without it, each parallel stage keeps its initial min(16, cores) workers and
    the prefetch buffer still grows on its own: our pipelines cost far less than
    the steps they feed.
    """
    options = tf.data.Options()
    options.autotune.enabled = False
    return dataset.with_options(options)
