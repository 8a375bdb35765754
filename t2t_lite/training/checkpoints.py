"""What a checkpoint holds, and restoring a model's weights from one.

Keras 3 layers kept in Python lists (a model's blocks) are not trackable
children for ``tf.train.Checkpoint``, so a checkpoint of the model object
would silently miss them. Checkpoints therefore hold the model's weights by
their Keras path below the model (``encoder_0/self_attention/...``), which
covers every weight of any model and keeps checkpoint keys readable. (The
model's own name is dropped: Keras numbers it per process, ``transformer_2``.)
"""
from __future__ import annotations

import keras
import tensorflow as tf


def model_variables(model: keras.Model) -> dict[str, tf.Variable]:
    """Every weight of ``model`` by its path below the model: what checkpoints save."""
    prefix = model.name + "/"
    return {variable.path.removeprefix(prefix): variable for variable in model.weights}


def training_checkpoint(model: keras.Model, optimizer: keras.optimizers.Optimizer
                        ) -> tf.train.Checkpoint:
    """The checkpoint t2t-trainer writes: model variables and optimizer state."""
    return tf.train.Checkpoint(model=model_variables(model), optimizer=optimizer)


def restore_model(model: keras.Model, output_dir: str, checkpoint_path: str | None = None) -> str:
    """Loads every variable of ``model`` from ``checkpoint_path`` or the latest
    checkpoint in ``output_dir`` (optimizer state is ignored); returns the path used."""
    path = checkpoint_path or tf.train.latest_checkpoint(output_dir)
    if not path:
        raise FileNotFoundError(f"no checkpoint in {output_dir}: train first with t2t-trainer "
                                "or pass --checkpoint_path")
    if not tf.io.gfile.exists(path + ".index"):
        raise FileNotFoundError(f"checkpoint {path} not found (no {path}.index)")
    status = tf.train.Checkpoint(model=model_variables(model)).restore(path)
    try:
        status.expect_partial().assert_existing_objects_matched()
    except AssertionError as error:
        raise ValueError(f"checkpoint {path} does not hold this model's weights ({error}); "
                         "was it written by another model or version?") from None
    return path
