"""Test-session setup: two logical CPU devices, so MirroredStrategy can be tested
without GPUs (this must happen before TensorFlow initialises its devices)."""
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import tensorflow as tf  # noqa: E402

from t2t_lite.training.distribute import split_cpu  # noqa: E402

split_cpu(2)
