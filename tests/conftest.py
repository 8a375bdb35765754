"""Test-session setup: two logical CPU devices, so MirroredStrategy can be tested
without GPUs (this must happen before TensorFlow initialises its devices)."""
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import tensorflow as tf  # noqa: E402

from t2t_lite.training.distribute import split_cpu  # noqa: E402

split_cpu(2)


import pytest  # noqa: E402


@pytest.fixture(scope="session")
def two_cpu_strategy() -> tf.distribute.MirroredStrategy:
    """One MirroredStrategy over the two logical CPUs for the whole session: a second
    one over the same devices in one process reuses collective instance keys, and
    TensorFlow aborts its first all-reduce with a "Shape mismatch in the collective"."""
    return tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
