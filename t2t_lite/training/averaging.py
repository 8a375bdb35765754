"""Checkpoint averaging: the paper decodes from the mean of the last checkpoints.

"For the base models, we used a single model obtained by averaging the last 5
checkpoints, which were written at 10-minute intervals. For the big models, we
averaged the last 20 checkpoints."

Works on TF2 object-based checkpoints (``tf.train.CheckpointManager``'s
``ckpt-N``). Every floating-point tensor is averaged (in float64, then cast
back); every other tensor (the step and save counters, the optimizer's
iteration count, the object-graph proto ``_CHECKPOINTABLE_OBJECT_GRAPH``, the
trainer's record of the architecture hparams and of the run's training time) is
copied from the newest checkpoint. Optimizer slots (Adam moments) are floats
and so are averaged too, as tensor2tensor's avg_checkpoints did; the result is
meant for decoding, and training can still resume from it. Because the keys
and the object graph are unchanged, the averaged checkpoint restores into the
same objects as any of its sources.

The output is named like the newest source (``ckpt-N``) and a ``checkpoint``
state file makes it ``tf.train.latest_checkpoint(output_dir)``. When fewer than
``n`` checkpoints exist, the ones there are averaged with a warning (as
tensor2tensor did): CheckpointManager keeps only ``max_to_keep`` of them.

Sources are checked, not trusted: one listed but missing, damaged or trained with
other architecture hparams than ``hparams.json`` says is refused in one line
(``checkpoint_state``) before anything is written.
"""
from __future__ import annotations

import dataclasses
import logging
import os
from typing import Callable, Sequence, TypeVar

import numpy as np
import tensorflow as tf

from t2t_lite.experiment import HPARAMS_FILE, load_record
from t2t_lite.progress import progress
from t2t_lite.training.moving_average import names_hold_average
from t2t_lite.training.checkpoint_state import (DATA_KEYS, READ_ERRORS, CheckpointStateError,
                                                check_architecture, checkpoint_step,
                                                checkpoint_to_read, checkpoints_on_disk,
                                                damage, read_damage, read_index,
                                                recorded_architecture, refusal, write_index)

logger = logging.getLogger(__name__)
T = TypeVar("T")
# What a damaged source's error proposes instead.
AVERAGE_UP_TO = "pass --checkpoint_path={good} to average the checkpoints up to it"


@dataclasses.dataclass(frozen=True)
class AveragedCheckpoint:
    """Where the average was written and what went into it (oldest first)."""
    path: str
    sources: list[str]


def list_checkpoints(model_dir: str, newest: str | None = None) -> list[str]:
    """The checkpoints up to ``newest`` (default: the latest the index names),
    oldest first: those ``model_dir``'s index lists, or with ``newest`` given and
    no readable index, those on disk. ``newest`` is checked good (or
    CheckpointStateError names the newest good one); the others when read."""
    if not tf.io.gfile.isdir(model_dir):
        raise FileNotFoundError(f"model_dir {model_dir} does not exist")
    index = read_index(model_dir)
    if not index.exists and not checkpoints_on_disk(model_dir):
        raise FileNotFoundError(f"no 'checkpoint' state file in {model_dir}; expected a "
                                "directory written by t2t-trainer (tf.train.CheckpointManager)")
    if newest and os.path.realpath(os.path.dirname(newest)) != os.path.realpath(model_dir):
        raise ValueError(f"--checkpoint_path={newest} is not a checkpoint of "
                         f"--model_dir={model_dir}: the average would mix two runs' weights; "
                         f"give one of {model_dir}'s checkpoints")
    newest = checkpoint_to_read(model_dir, newest)
    listed = index.listed if index.latest else checkpoints_on_disk(model_dir)
    return [p for p in listed if checkpoint_step(p) < checkpoint_step(newest)] + [newest]


def _read(path: str, sources: Sequence[str], read: Callable[[], T]) -> T:
    """``read()`` of ``path``, one of ``sources``; a missing or damaged checkpoint is
    refused in one line that says which sources to average instead."""
    try:
        return read()
    except READ_ERRORS as error:
        what = f"checkpoint {path} is damaged ({damage(path) or read_damage(path, error)})"
    newer = len(sources) - 1 - list(sources).index(path)
    if newer:
        raise CheckpointStateError(f"{what}; pass --n={newer} to average only the "
                                   "checkpoints after it")
    raise refusal(what, os.path.dirname(path), AVERAGE_UP_TO, below=checkpoint_step(path))


def average_checkpoints(checkpoint_paths: Sequence[str], output_path: str) -> None:
    """Writes the average of ``checkpoint_paths`` (oldest first) to ``output_path``.

    Every tensor of every source is read (the ones copied from the newest too),
    so that a damaged source is refused, not half used."""
    readers = [_read(p, checkpoint_paths, lambda p=p: tf.train.load_checkpoint(p))
               for p in checkpoint_paths]
    newest = readers[-1]
    dtypes = newest.get_variable_to_dtype_map()
    shapes = newest.get_variable_to_shape_map()
    for path, reader in zip(checkpoint_paths, readers):
        theirs = reader.get_variable_to_shape_map()
        if names_hold_average(theirs) != names_hold_average(shapes):
            with_average, without = ((checkpoint_paths[-1], path) if names_hold_average(shapes)
                                     else (path, checkpoint_paths[-1]))
            raise ValueError(f"checkpoint {with_average} holds a moving average of the weights "
                             f"and {without} does not (the run's moving_average_decay changed "
                             "between them): average only checkpoints from one side of the "
                             "change (a smaller --n)")
        if theirs != shapes:
            raise ValueError(f"checkpoint {path} holds different variables or shapes than "
                             f"{checkpoint_paths[-1]}; only checkpoints of one model can be "
                             "averaged")
    names = sorted(shapes)
    tensors = []
    for name in progress(names, f"averaging {len(readers)} checkpoints", len(names), "tensors"):
        values = [_read(p, checkpoint_paths, lambda r=r: r.get_tensor(name))
                  for p, r in zip(checkpoint_paths, readers)]
        if dtypes[name].is_floating:
            total = sum(value.astype(np.float64) for value in values)
            tensors.append(tf.cast(total / len(readers), dtypes[name]))
        else:
            tensors.append(tf.constant(values[-1], dtype=dtypes[name]))
    tf.io.gfile.makedirs(os.path.dirname(output_path) or ".")
    tf.raw_ops.SaveV2(prefix=output_path, tensor_names=names,
                      shape_and_slices=[""] * len(names), tensors=tensors)


def average_last_checkpoints(model_dir: str, output_dir: str, n: int = 5,
                             newest: str | None = None) -> AveragedCheckpoint:
    """Averages the last ``n`` checkpoints of ``model_dir`` (up to ``newest``) into
    ``output_dir``.

    Also copies ``model_dir/hparams.json`` when present, so that ``output_dir``
    can be decoded like a training directory: refused (before anything is
    written) when an architecture hparam there differs from what a source
    checkpoint was trained with.
    """
    if n < 1:
        raise ValueError(f"n must be at least 1, got {n}")
    if os.path.realpath(model_dir) == os.path.realpath(output_dir):
        raise ValueError(f"output_dir must differ from model_dir ({model_dir}): the average "
                         "would overwrite the newest checkpoint")
    sources = list_checkpoints(model_dir, newest)[-n:]
    if len(sources) < n:
        logger.warning("asked for the last %d checkpoints but %s has only %d; averaging those",
                       n, model_dir, len(sources))
    hparams = os.path.join(model_dir, HPARAMS_FILE)
    record = load_record(model_dir) or {}
    expected = {**record.get("hparams", {}),
                **{key: record[key] for key in DATA_KEYS if key in record}}
    for source in sources:
        recorded = _read(source, sources, lambda source=source: recorded_architecture(source))
        check_architecture(source, recorded, expected, hparams)
    output_path = os.path.join(output_dir, os.path.basename(sources[-1]))
    average_checkpoints(sources, output_path)
    write_index(output_dir, [output_path])
    if tf.io.gfile.exists(hparams):
        tf.io.gfile.copy(hparams, os.path.join(output_dir, HPARAMS_FILE), overwrite=True)
    return AveragedCheckpoint(output_path, sources)
