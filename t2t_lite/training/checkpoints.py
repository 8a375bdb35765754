"""What a checkpoint holds, and restoring a model's weights from one.

Keras 3 layers kept in Python lists (a model's blocks) are not trackable
children for ``tf.train.Checkpoint``, so a checkpoint of the model object
would silently miss them. Checkpoints therefore hold the model's weights by
their Keras path below the model (``encoder_0/self_attention/...``), which
covers every weight of any model and keeps checkpoint keys readable. (The
model's own name is dropped: Keras numbers it per process, ``transformer_2``.)
"""
from __future__ import annotations

import json
import logging
import os

import keras
import tensorflow as tf

from t2t_lite.experiment import HPARAMS_FILE
from t2t_lite.training.checkpoint_state import (CheckpointStateError, check_architecture,
                                                checkpoint_to_read, damage,
                                                recorded_architecture)
from t2t_lite.training.moving_average import AVERAGE, holds_average

_READS = 3  # tries at reading a run's latest checkpoint while a trainer rotates them


def model_variables(model: keras.Model) -> dict[str, tf.Variable]:
    """Every weight of ``model`` by its path below the model: what checkpoints save."""
    prefix = model.name + "/"
    return {variable.path.removeprefix(prefix): variable for variable in model.weights}


def architecture(model: keras.Model) -> dict:
    """The hparams that decide what ``model``'s weights mean, by key."""
    hparams = model.hparams.values()
    return {key: hparams[key] for key in type(model).architecture_keys(model.hparams)}


def training_checkpoint(model: keras.Model, optimizer: keras.optimizers.Optimizer,
                        data_identity: dict[str, str],
                        averages: dict[str, tf.Variable] | None = None) -> tf.train.Checkpoint:
    """The checkpoint t2t-trainer writes: model variables, optimizer state, a
    record of the model's ``architecture`` with the run's ``data_identity``
    (``Experiment.data_identity``: the problem and vocabulary the weights mean), the
    training time of its steps in all the run's attempts (``training_ms``: a
    whole number, so that averaging copies the newest's rather than averaging it), and
    the weights' moving ``averages`` when the run keeps them (``moving_average.py``)."""
    record = tf.Variable(json.dumps({**architecture(model), **data_identity}, sort_keys=True),
                         trainable=False)
    kept = {AVERAGE: averages} if averages else {}
    return tf.train.Checkpoint(model=model_variables(model), optimizer=optimizer,
                               architecture=record,
                               training_ms=tf.Variable(0, dtype=tf.int64, trainable=False),
                               **kept)


def restorable_part(checkpoint: tf.train.Checkpoint,
                    with_average: bool = True) -> tf.train.Checkpoint:
    """A ``training_checkpoint``'s model and optimizer (and averages, if it keeps them and
    ``with_average``), without the architecture record (checked, not restored) and the
    training time (not in checkpoints of before)."""
    average = getattr(checkpoint, AVERAGE, None)
    kept = {AVERAGE: average} if average is not None and with_average else {}
    return tf.train.Checkpoint(model=checkpoint.model, optimizer=checkpoint.optimizer, **kept)


def restore_training_time(checkpoint: tf.train.Checkpoint, path: str) -> bool:
    """``checkpoint.training_ms`` from ``path``; False (left at 0) when ``path``
    predates the record."""
    reader = tf.train.load_checkpoint(path)
    key = "training_ms/.ATTRIBUTES/VARIABLE_VALUE"
    if not reader.has_tensor(key):
        return False
    checkpoint.training_ms.assign(reader.get_tensor(key))
    return True


def architecture_record(checkpoint: tf.train.Checkpoint) -> dict:
    """The architecture a ``training_checkpoint`` records when it is saved."""
    return json.loads(checkpoint.architecture.numpy())


def restore_model(model: keras.Model, output_dir: str, checkpoint_path: str | None = None,
                  data_identity: dict[str, str] | None = None, averaged: bool = True) -> str:
    """Loads every variable of ``model`` from ``checkpoint_path`` or the latest
    checkpoint in ``output_dir`` (optimizer state is ignored; the weights' moving
    averages in their place, if it holds them, unless not ``averaged``); returns the
    path used.

    The checkpoint is checked first (``checkpoint_state``): a missing, damaged or
    unindexed one, or one trained with another architecture than ``model``'s
    hparams (or, given ``data_identity``, another problem or vocabulary), is
    refused in one line."""
    for _ in range(_READS):
        path = checkpoint_to_read(output_dir, checkpoint_path)
        check_architecture(path, recorded_architecture(path),
                           {**architecture(model), **(data_identity or {})},
                           os.path.join(output_dir, HPARAMS_FILE))
        try:
            load_weights(model, path, averaged)
            return path
        except tf.errors.OpError:
            gone = damage(path)
            if gone is None:
                raise
        # A trainer writing the run keeps its last --keep_checkpoint_max checkpoints and
        # removes older ones: the one chosen may go between choosing and reading it.
        if checkpoint_path:
            raise CheckpointStateError(
                f"checkpoint {path} went while it was read ({gone}): a trainer's "
                "--keep_checkpoint_max removes older checkpoints of a run it writes; pass "
                "a newer one, or leave --checkpoint_path out to read the latest")
        logging.warning("checkpoint %s went while it was read (%s; a trainer removing "
                        "older checkpoints?): reading the run's latest again", path, gone)
    raise CheckpointStateError(f"the checkpoints of {output_dir} went {_READS} times while "
                               "they were read; read the run when its trainer has stopped")


def load_weights(model: keras.Model, path: str, averaged: bool = True) -> None:
    """Every variable of ``model`` from checkpoint ``path`` (its optimizer state and
    step are left), the trainable ones from their moving averages where ``path`` holds
    them and ``averaged``: refused in one line when the checkpoint lacks one."""
    variables = model_variables(model)
    if averaged and holds_average(path):
        parts = {"model": {key: v for key, v in variables.items() if not v.trainable},
                 AVERAGE: {key: v for key, v in variables.items() if v.trainable}}
    else:
        parts = {"model": variables}
    status = tf.train.Checkpoint(**parts).restore(path)
    try:
        status.expect_partial().assert_existing_objects_matched()
    except AssertionError as error:
        raise ValueError(f"checkpoint {path} does not hold this model's weights ({error}); "
                         "was it written by another model or version?") from None
