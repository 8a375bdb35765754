"""A run's checkpoints as they are on disk, checked against their index.

``OUTPUT_DIR/checkpoint`` (the index ``tf.train.CheckpointManager`` keeps) names
the latest checkpoint; ``ckpt-N.index`` and ``ckpt-N.data-*`` hold checkpoint
N. TensorFlow trusts the index: ``tf.train.latest_checkpoint`` returns None when
the index names a missing checkpoint (and a trainer would start again from
step 0 beside the others), and a truncated data file surfaces as an
``IndexError`` or ``DataLossError`` deep inside a restore. Here each answer is
checked first, and what is wrong becomes one ``CheckpointStateError`` line
naming the damaged file and the newest good checkpoint to use instead.

A checkpoint is good when its index parses, its data files are all there, and
every tensor reads back (TensorFlow checks each one's CRC32C on reading). That
reads the whole checkpoint, as a restore does: seconds for a big model, and
only the checkpoint about to be used is read unless one is damaged.
"""
from __future__ import annotations

import dataclasses
import json
import logging
import os
import re

import tensorflow as tf

from t2t_lite.errors import op_error_detail

INDEX = "checkpoint"
# The trainer's checkpoints record the model's architecture hparams and the run's
# problem and vocabulary fingerprint (a JSON object) under this key; see
# training/checkpoints.py.
ARCHITECTURE_KEY = "architecture/.ATTRIBUTES/VARIABLE_VALUE"
# Experiment.data_identity()'s: the problem, its vocabularies' fingerprint, sizes and
# sharing (checkpoints written before the sizes were recorded lack them)
DATA_KEYS = ("problem", "vocab_fingerprint", "vocab_size", "input_vocab_size",
             "shared_vocabulary")
_STEP = re.compile(r"ckpt-(\d+)")
_SHARDS = re.compile(r"\.data-\d{5}-of-(\d{5})$")
# What reading a damaged checkpoint raises: TensorFlow's errors, and the
# built-in ones its checkpoint reader maps some of them to (a short read of a
# truncated data file is an IndexError).
READ_ERRORS = (tf.errors.OpError, IndexError, ValueError)


class CheckpointStateError(ValueError):
    """The index and the checkpoints disagree, or a checkpoint is damaged."""


def checkpoint_step(path: str) -> int:
    """N of ``.../ckpt-N`` (-1 for a name CheckpointManager would not write)."""
    match = _STEP.fullmatch(os.path.basename(path))
    return int(match.group(1)) if match else -1


def checkpoints_on_disk(directory: str) -> list[str]:
    """The ``ckpt-N`` of ``directory`` that have an ``.index``, oldest first.

    TensorFlow writes a checkpoint's ``.index`` last, so data files without one
    are what a killed save left, not a checkpoint."""
    if not tf.io.gfile.isdir(directory):
        return []
    prefixes = [os.path.join(directory, name.removesuffix(".index"))
                for name in tf.io.gfile.listdir(directory) if name.endswith(".index")]
    return sorted((p for p in prefixes if checkpoint_step(p) >= 0), key=checkpoint_step)


@dataclasses.dataclass(frozen=True)
class Index:
    """What ``DIRECTORY/checkpoint`` says: the latest checkpoint and all it lists
    (full paths, oldest first); ``error`` when it exists but cannot be read."""
    path: str
    exists: bool
    latest: str | None = None
    listed: tuple[str, ...] = ()
    error: str | None = None


def read_index(directory: str) -> Index:
    path = os.path.join(directory, INDEX)
    if not tf.io.gfile.exists(path):
        return Index(path, exists=False)
    try:
        # None for text that is not a CheckpointState (TensorFlow logs the parse error).
        state = tf.train.get_checkpoint_state(directory)
    except (ValueError, UnicodeDecodeError, tf.errors.OpError) as error:
        state, detail = None, str(error)
    else:
        detail = "not a checkpoint index"
    if state is None or not state.model_checkpoint_path:
        return Index(path, exists=True, error=detail)
    return Index(path, exists=True, latest=state.model_checkpoint_path,
                 listed=tuple(state.all_model_checkpoint_paths))


def write_index(directory: str, prefixes: list[str]) -> None:
    """``DIRECTORY/checkpoint`` listing ``prefixes`` (oldest first; the last is the
    latest), by relative names, as CheckpointManager writes it.

    The CheckpointState text format, written directly: TF's writer for it outside
    CheckpointManager (tf.compat.v1.train.update_checkpoint_state) is deprecated
    and warns on every call. Written whole, then renamed: never half an index.
    """
    names = [os.path.relpath(prefix, directory) for prefix in prefixes]
    # When each was written: CheckpointManager deletes only checkpoints with a
    # timestamp (beyond max_to_keep); the others it takes for preserved ones.
    written = [tf.io.gfile.stat(prefix + ".index").mtime_nsec / 1e9 for prefix in prefixes]
    state = f'model_checkpoint_path: "{names[-1]}"\n' + "".join(
        f'all_model_checkpoint_paths: "{name}"\n' for name in names) + "".join(
        f"all_model_checkpoint_timestamps: {time}\n" for time in written)
    path = os.path.join(directory, INDEX)
    with tf.io.gfile.GFile(path + ".tmp", "w") as f:
        f.write(state)
    tf.io.gfile.rename(path + ".tmp", path, overwrite=True)


def damage(prefix: str) -> str | None:
    """What is wrong with checkpoint ``prefix``, or None when it is good."""
    missing = _missing_files(prefix)
    if missing:
        return missing
    try:
        reader = tf.train.load_checkpoint(prefix)
    except READ_ERRORS as error:
        return f"{prefix}.index is unreadable ({_detail(error)})"
    try:
        for name, dtype in reader.get_variable_to_dtype_map().items():
            # Python cannot hold a variant (an input iterator's state): its bytes are
            # checked when it is restored; a truncation shows in the tensors after it.
            if dtype != tf.variant:
                reader.get_tensor(name)
    except READ_ERRORS as error:
        return read_damage(prefix, error)
    return None


def _missing_files(prefix: str) -> str | None:
    """Which of checkpoint ``prefix``'s files is missing, or None when all are there."""
    if not tf.io.gfile.exists(prefix + ".index"):
        return f"no {prefix}.index"
    data = data_files(prefix)
    counts = {int(m.group(1)) for m in map(_SHARDS.search, data) if m}
    if not counts:
        return f"no {prefix}.data-00000-of-00001"
    expected = [f"{prefix}.data-{i:05d}-of-{n:05d}" for n in sorted(counts) for i in range(n)]
    absent = [path for path in expected if path not in data]
    return f"no {absent[0]}" if absent else None


def read_damage(prefix: str, error: Exception) -> str:
    """``error``, raised reading a tensor of checkpoint ``prefix``, as a damage."""
    data = data_files(prefix)
    files = data[0] if len(data) == 1 else f"{prefix}.data-*"
    return f"{files} is truncated or corrupt ({_detail(error)})"


def data_files(prefix: str) -> list[str]:
    """The ``PREFIX.data-*`` files there are, sorted."""
    folder, name = os.path.split(prefix)
    return sorted(os.path.join(folder, file) for file in tf.io.gfile.listdir(folder or ".")
                  if file.startswith(name + ".data-"))


def _detail(error: Exception) -> str:
    text = op_error_detail(error) if isinstance(error, tf.errors.OpError) else str(error)
    return text.splitlines()[0] if text else type(error).__name__


def newest_good(directory: str, below: int | None = None) -> str | None:
    """The newest good checkpoint of ``directory`` (older than step ``below``)."""
    for prefix in reversed(checkpoints_on_disk(directory)):
        if (below is None or checkpoint_step(prefix) < below) and damage(prefix) is None:
            return prefix
    return None


def refusal(what: str, directory: str, remedy: str,
            below: int | None = None) -> CheckpointStateError:
    """``what`` is wrong; the error names the newest good checkpoint and ``remedy``
    (its ``{good}`` replaced by that checkpoint) or says there is none."""
    good = newest_good(directory, below)
    if good is None:
        return CheckpointStateError(f"{what}; {directory} holds no good checkpoint")
    return CheckpointStateError(f"{what}; the newest good checkpoint is {good}: "
                                + remedy.replace("{good}", good))


def resume_checkpoint(directory: str) -> str | None:
    """The checkpoint a trainer resumes from in ``directory``; None for a fresh run.

    Never None beside checkpoints, and never an older checkpoint than the index
    names: that one is missing or damaged -> CheckpointStateError, and the user
    decides. Without an index the newest checkpoint on disk is used when good: a
    kill between writing checkpoint N's files and updating the index leaves
    exactly that, with N the newest state of the run.
    """
    index = read_index(directory)
    on_disk = checkpoints_on_disk(directory)
    forget_index = f"remove {index.path}: t2t-trainer then resumes from {{good}}"
    if index.error:
        raise refusal(f"the checkpoint index {index.path} is unreadable ({index.error})",
                      directory, forget_index)
    if not index.exists:
        if not on_disk:
            return None
        problem = damage(on_disk[-1])
        if problem:
            raise refusal(f"checkpoint {on_disk[-1]} is damaged ({problem})", directory,
                          f"move {on_disk[-1]}.* out of {directory} to resume from {{good}}")
        logging.warning("%s is missing: resuming from %s, the newest checkpoint there",
                        index.path, on_disk[-1])
        return on_disk[-1]
    return _checked_latest(index, directory, forget_index,
                           f"move {index.latest}.* out of {directory} and {forget_index}")


def checkpoint_to_read(directory: str, checkpoint_path: str | None = None,
                       flag: str = "--checkpoint_path") -> str:
    """The checkpoint to decode, export or fine-tune from: ``checkpoint_path``, else
    the latest of ``directory``; checked good, or a CheckpointStateError naming the
    newest good one to pass as ``flag`` instead."""
    use_instead = f"pass {flag}={{good}}"
    if checkpoint_path:
        if not tf.io.gfile.exists(checkpoint_path + ".index"):
            raise FileNotFoundError(f"checkpoint {checkpoint_path} not found "
                                    f"(no {checkpoint_path}.index)")
        problem = damage(checkpoint_path)
        if problem:
            raise refusal(f"checkpoint {checkpoint_path} is damaged ({problem})",
                          os.path.dirname(checkpoint_path), use_instead)
        return checkpoint_path
    index = read_index(directory)
    if index.error:
        raise refusal(f"the checkpoint index {index.path} is unreadable ({index.error})",
                      directory, use_instead)
    if not index.exists:
        if not checkpoints_on_disk(directory):
            raise FileNotFoundError(f"no checkpoint in {directory}: train first with "
                                    f"t2t-trainer or pass {flag}")
        raise refusal(f"{directory} holds checkpoints but no index ({index.path})",
                      directory, use_instead)
    return _checked_latest(index, directory, use_instead, use_instead)


def _checked_latest(index: Index, directory: str, if_missing: str, if_damaged: str) -> str:
    """The checkpoint ``index`` names, checked good, or a refusal with the remedy
    ``if_missing`` or ``if_damaged`` (see ``refusal``)."""
    if not tf.io.gfile.exists(index.latest + ".index"):
        raise refusal(f"the checkpoint index {index.path} names {index.latest}, which is "
                      f"missing (no {index.latest}.index)", directory, if_missing)
    problem = damage(index.latest)
    if problem:
        raise refusal(f"checkpoint {index.latest} is damaged ({problem})", directory,
                      if_damaged)
    return index.latest


def recorded_architecture(prefix: str) -> dict | None:
    """The architecture hparams checkpoint ``prefix`` was trained with (and, since
    they were recorded too, its ``DATA_KEYS``); None for checkpoints written before."""
    reader = tf.train.load_checkpoint(prefix)
    if not reader.has_tensor(ARCHITECTURE_KEY):
        return None
    return json.loads(reader.get_tensor(ARCHITECTURE_KEY))


def check_architecture(prefix: str, recorded: dict | None, hparams: dict,
                       hparams_file: str) -> None:
    """Refuses ``hparams`` (from ``hparams_file``) when an architecture key that
    checkpoint ``prefix`` ``recorded`` (``recorded_architecture``) has another
    value there: names the first such key. ``hparams`` may hold ``DATA_KEYS`` too:
    a checkpoint of another problem or vocabulary is refused the same way.

    Keys only one side knows are skipped: an older checkpoint records fewer, and a
    key no longer part of the architecture no longer matters."""
    difference = first_difference(recorded, hparams)
    if difference:
        key, trained = difference
        if key in DATA_KEYS:
            what = (f"on problem {trained}, but {hparams_file} is a {hparams[key]} run"
                    if key == "problem" else
                    f"with another vocabulary than the run of {hparams_file} "
                    f"({key} {trained}, not {hparams[key]})")
            raise CheckpointStateError(
                f"checkpoint {prefix} was trained {what}: its weights mean other tokens; "
                "give a checkpoint of that run, or the checkpoint's own run as "
                "--output_dir")
        raise CheckpointStateError(
            f"{hparams_file} says {key}={hparams[key]!r} but checkpoint {prefix} was "
            f"trained with {key}={trained!r}; restore {hparams_file} or use a new "
            "--output_dir")


def first_difference(recorded: dict | None, hparams: dict) -> tuple[str, object] | None:
    """The first key (in sorted order) that ``recorded`` (``recorded_architecture``)
    and ``hparams`` both hold with other values, and its recorded value; None when
    they agree. Values compare as JSON, as the record holds them."""
    for key, trained in sorted((recorded or {}).items()):
        if key in hparams and json.loads(json.dumps(hparams[key])) != trained:
            return key, trained
    return None
