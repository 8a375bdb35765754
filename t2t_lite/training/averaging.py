"""Checkpoint averaging: the paper decodes from the mean of the last checkpoints.

"For the base models, we used a single model obtained by averaging the last 5
checkpoints, which were written at 10-minute intervals. For the big models, we
averaged the last 20 checkpoints."

Works on TF2 object-based checkpoints (``tf.train.CheckpointManager``'s
``ckpt-N``). Every floating-point tensor is averaged (in float64, then cast
back); every other tensor (the step and save counters, the optimizer's
iteration count, the object-graph proto ``_CHECKPOINTABLE_OBJECT_GRAPH``) is
copied from the newest checkpoint. Optimizer slots (Adam moments) are floats
and so are averaged too, as tensor2tensor's avg_checkpoints did; the result is
meant for decoding, and training can still resume from it. Because the keys
and the object graph are unchanged, the averaged checkpoint restores into the
same objects as any of its sources.

The output is named like the newest source (``ckpt-N``) and a ``checkpoint``
state file makes it ``tf.train.latest_checkpoint(output_dir)``. When fewer than
``n`` checkpoints exist, the ones there are averaged with a warning (as
tensor2tensor did): CheckpointManager keeps only ``max_to_keep`` of them.
"""
from __future__ import annotations

import dataclasses
import logging
import os
from typing import Sequence

import numpy as np
import tensorflow as tf

from t2t_lite.progress import progress

HPARAMS_FILE = "hparams.json"  # written by the trainer; the decoder reads it

logger = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True)
class AveragedCheckpoint:
    """Where the average was written and what went into it (oldest first)."""
    path: str
    sources: list[str]


def list_checkpoints(model_dir: str) -> list[str]:
    """The checkpoints recorded in ``model_dir``'s state file that still exist, oldest first."""
    if not tf.io.gfile.isdir(model_dir):
        raise FileNotFoundError(f"model_dir {model_dir} does not exist")
    state = tf.train.get_checkpoint_state(model_dir)
    if state is None:
        raise FileNotFoundError(f"no 'checkpoint' state file in {model_dir}; expected a "
                                "directory written by t2t-trainer (tf.train.CheckpointManager)")
    # get_checkpoint_state already joins the relative names it stores with model_dir.
    paths = list(state.all_model_checkpoint_paths)
    existing = [p for p in paths if tf.io.gfile.exists(p + ".index")]
    if not existing:
        raise FileNotFoundError(f"none of the checkpoints listed in {model_dir}/checkpoint "
                                f"exist ({', '.join(paths) or 'none listed'})")
    return existing


def _reader(path: str):
    """A reader for one checkpoint; unreadable files become a ValueError naming them."""
    try:
        return tf.train.load_checkpoint(path)
    except tf.errors.OpError as err:
        raise ValueError(f"cannot read checkpoint {path}: {err.message}") from None


def average_checkpoints(checkpoint_paths: Sequence[str], output_path: str) -> None:
    """Writes the average of ``checkpoint_paths`` (oldest first) to ``output_path``."""
    readers = [_reader(p) for p in checkpoint_paths]
    newest = readers[-1]
    dtypes = newest.get_variable_to_dtype_map()
    shapes = newest.get_variable_to_shape_map()
    for path, reader in zip(checkpoint_paths, readers):
        if reader.get_variable_to_shape_map() != shapes:
            raise ValueError(f"checkpoint {path} holds different variables or shapes than "
                             f"{checkpoint_paths[-1]}; only checkpoints of one model can be "
                             "averaged")
    names = sorted(shapes)
    tensors = []
    for name in progress(names, f"averaging {len(readers)} checkpoints", len(names), "tensors"):
        if dtypes[name].is_floating:
            total = sum(r.get_tensor(name).astype(np.float64) for r in readers)
            tensors.append(tf.cast(total / len(readers), dtypes[name]))
        else:
            tensors.append(tf.constant(newest.get_tensor(name), dtype=dtypes[name]))
    tf.io.gfile.makedirs(os.path.dirname(output_path) or ".")
    tf.raw_ops.SaveV2(prefix=output_path, tensor_names=names,
                      shape_and_slices=[""] * len(names), tensors=tensors)


def _write_checkpoint_state(directory: str, name: str) -> None:
    """``DIRECTORY/checkpoint`` naming ``name`` (relative), as CheckpointManager writes it.

    The CheckpointState text format, written directly: TF's writer for it outside
    CheckpointManager (tf.compat.v1.train.update_checkpoint_state) is deprecated
    and warns on every call.
    """
    state = f'model_checkpoint_path: "{name}"\nall_model_checkpoint_paths: "{name}"\n'
    path = os.path.join(directory, "checkpoint")
    with tf.io.gfile.GFile(path + ".tmp", "w") as f:
        f.write(state)
    tf.io.gfile.rename(path + ".tmp", path, overwrite=True)


def average_last_checkpoints(model_dir: str, output_dir: str, n: int = 5) -> AveragedCheckpoint:
    """Averages the last ``n`` checkpoints of ``model_dir`` into ``output_dir``.

    Also copies ``model_dir/hparams.json`` when present, so that ``output_dir``
    can be decoded like a training directory.
    """
    if n < 1:
        raise ValueError(f"n must be at least 1, got {n}")
    if os.path.realpath(model_dir) == os.path.realpath(output_dir):
        raise ValueError(f"output_dir must differ from model_dir ({model_dir}): the average "
                         "would overwrite the newest checkpoint")
    available = list_checkpoints(model_dir)
    sources = available[-n:]
    if len(sources) < n:
        logger.warning("asked for the last %d checkpoints but %s has only %d; averaging those",
                       n, model_dir, len(sources))
    output_path = os.path.join(output_dir, os.path.basename(sources[-1]))
    average_checkpoints(sources, output_path)
    _write_checkpoint_state(output_dir, os.path.basename(output_path))
    hparams = os.path.join(model_dir, HPARAMS_FILE)
    if tf.io.gfile.exists(hparams):
        tf.io.gfile.copy(hparams, os.path.join(output_dir, HPARAMS_FILE), overwrite=True)
    return AveragedCheckpoint(output_path, sources)
