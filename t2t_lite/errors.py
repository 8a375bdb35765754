"""TensorFlow's error messages, made fit for a one-line report."""
from __future__ import annotations

import re

import tensorflow as tf


def op_error_detail(error: tf.errors.OpError) -> str:
    """``error``'s message without the ``{{function_node ...}}`` prefix and the
    ``[Op:...]`` suffix that TensorFlow wraps around what went wrong."""
    return re.sub(r"\{\{.*?\}\}\s*", "", error.message).split(" [Op:")[0].strip()
