"""Restoring a model's weights from a t2t-trainer output dir."""
from __future__ import annotations

import keras
import tensorflow as tf


def restore_model(model: keras.Model, output_dir: str, checkpoint_path: str | None = None) -> str:
    """Loads the model's variables from ``checkpoint_path`` or the latest checkpoint
    in ``output_dir`` (optimizer slots are ignored); returns the path used."""
    path = checkpoint_path or tf.train.latest_checkpoint(output_dir)
    if not path:
        raise FileNotFoundError(f"no checkpoint in {output_dir}: train first with t2t-trainer "
                                "or pass --checkpoint_path")
    if not tf.io.gfile.exists(path + ".index"):
        raise FileNotFoundError(f"checkpoint {path} not found (no {path}.index)")
    status = tf.train.Checkpoint(model=model).restore(path)
    status.expect_partial().assert_existing_objects_matched()
    return path
