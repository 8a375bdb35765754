"""Sharded TFRecord files of integer-id examples: naming, writing, checking, reading.

An example is a dict of int sequences (``{"inputs": [...], "targets": [...]}``)
stored as a ``tf.train.Example`` with one int64 list per key. A split of a
problem is ``num_shards`` files ``{name}-{split}-{i:05d}-of-{n:05d}``; examples
go to them round robin, and reading them back in order (``shuffle_files=False``)
yields the examples in the order they were written. This is the only module
that knows the file format.
"""
from __future__ import annotations

import contextlib
import hashlib
import logging
import os
from typing import Iterable, Mapping, Sequence

import tensorflow as tf

from t2t_lite import interrupts
from t2t_lite.errors import op_error_detail
from t2t_lite.progress import progress

logger = logging.getLogger(__name__)

# A training example's corpus (its index) in a problem trained on several with weights
# (problems/training_corpora.py): read only by training, which samples by corpus.
CORPUS = "corpus"
_INCOMPLETE_SUFFIX = ".incomplete"
_CHECK_BATCH = 8192  # records per step when scanning a shard; large = fast


# (path, size, mtime) of the shards check_shards has read to the end in this process.
_whole_shards: set[tuple[str, int, int]] = set()


class CorruptShardError(IOError):
    """A TFRecord shard that cannot be read to the end."""


def shard_filenames(data_dir: str, name: str, split: str, num_shards: int) -> list[str]:
    """The paths of the ``num_shards`` shards of ``split``."""
    return [os.path.join(data_dir, f"{name}-{split}-{i:05d}-of-{num_shards:05d}")
            for i in range(num_shards)]


def shard_pattern(data_dir: str, name: str, split: str, num_shards: int) -> str:
    """A glob matching the shards of ``split``, for messages."""
    return os.path.join(data_dir, f"{name}-{split}-?????-of-{num_shards:05d}")


def serialize(example: Mapping[str, Sequence[int]]) -> bytes:
    """One example as the bytes of a record."""
    features = {key: tf.train.Feature(int64_list=tf.train.Int64List(value=list(ids)))
                for key, ids in example.items()}
    return tf.train.Example(features=tf.train.Features(feature=features)).SerializeToString(
        deterministic=True)  # keys sorted: the same examples give the same bytes


def write_shards(examples: Iterable[Mapping[str, Sequence[int]]], paths: Sequence[str]) -> int:
    """Writes ``examples`` round robin to ``paths`` and returns how many were written."""
    return write_records(map(serialize, examples), paths)


def write_records(records: Iterable[bytes], paths: Sequence[str]) -> int:
    """Writes ``records`` (``serialize``'s) round robin to ``paths`` and returns how
    many were written.

    Shards are written under temporary names and renamed only once all examples
    are written, so an interrupted run never leaves a shard that looks complete.
    """
    label = os.path.basename(paths[0]).rsplit("-", 3)[0]  # "{name}-{split}"
    temp_paths = [path + _INCOMPLETE_SUFFIX for path in paths]
    writers: list[tf.io.TFRecordWriter] = []
    count = 0
    try:
        for path in temp_paths:  # inside: a signal among the openings leaves none behind
            writers.append(tf.io.TFRecordWriter(path))
        for count, record in enumerate(progress(records, f"writing {label}", unit="examples"),
                                       start=1):
            writers[(count - 1) % len(writers)].write(record)
        for writer in writers:  # a full disk may show only as the last bytes are flushed
            writer.close()
    except BaseException:
        for writer in writers:
            with contextlib.suppress(Exception):
                writer.close()
        for path in temp_paths:
            if os.path.exists(path):
                os.remove(path)
        raise
    with interrupts.deferred():  # every shard renamed, or none: a signal waits for the end
        for temp_path, path in zip(temp_paths, paths):
            os.replace(temp_path, path)
    logger.info("%s: wrote %d examples to %d shards", label, count, len(paths))
    return count


def check_shards(paths: Sequence[str], remedy: str = "") -> None:
    """Reads every record of every shard; raises ``CorruptShardError`` naming a bad shard.

    TensorFlow's own error for a truncated or corrupted record does not say which
    file it came from; ``remedy`` is appended to the message (what to re-run).
    A shard found whole is not read again while its size and mtime stay the same.
    """
    for path in paths:
        stat = os.stat(path)
        identity = (path, stat.st_size, stat.st_mtime_ns)
        if identity in _whole_shards:
            continue
        try:
            for _ in tf.data.TFRecordDataset(path, buffer_size=1 << 20).batch(_CHECK_BATCH):
                pass
        except tf.errors.DataLossError as error:
            raise CorruptShardError(f"TFRecord shard {path} is corrupt or truncated "
                                    f"({op_error_detail(error)}). {remedy}".rstrip()) from None
        _whole_shards.add(identity)


_FINGERPRINT_BYTES = 1 << 16  # read at each end of a shard
_READ_BUFFER = 256 * 1024  # tf.data.TFRecordDataset's default


def shards_fingerprint(paths: Sequence[str]) -> str:
    """What the shards ``paths`` hold, wherever they are: a digest of each one's name,
    size and first and last 64 KiB (a copied or moved data dir keeps it; shards
    written again from other data do not)."""
    digest = hashlib.sha256()
    for path in paths:
        size = os.path.getsize(path)
        digest.update(f"{os.path.basename(path)}\0{size}\0".encode())
        with open(path, "rb") as f:
            digest.update(f.read(_FINGERPRINT_BYTES))
            f.seek(max(size - _FINGERPRINT_BYTES, 0))
            digest.update(f.read(_FINGERPRINT_BYTES))
    return digest.hexdigest()


def read_shards(paths: Sequence[str], keys: Sequence[str],
                shuffle_files: bool = False, seed: int | None = None) -> tf.data.Dataset:
    """Examples ``{key: int32[None]}`` from ``paths``.

    In order, the shards are interleaved one record at a time, which undoes the
    round robin of ``write_shards``; with ``shuffle_files`` the shard order is
    shuffled (by ``seed``) and shards are read in parallel, still in an order
    fixed by the seed: two runs with one seed train on the same batches, and a
    resumed run can continue exactly where its input was.
    """
    features = {key: tf.io.FixedLenSequenceFeature([], tf.int64, allow_missing=True)
                for key in keys}

    def parse(record: tf.Tensor) -> dict[str, tf.Tensor]:
        example = tf.io.parse_single_example(record, features)
        return {key: tf.cast(example[key], tf.int32) for key in keys}

    # The dataset holds the shards' names, joined to their folder only when a shard is
    # opened: a saved iterator (a run's input state) names no folder, so a run resumes
    # from any working folder and after its data was moved or copied.
    folders = {os.path.dirname(os.path.abspath(path)) for path in paths}
    if len(folders) != 1:
        raise ValueError(f"the shards of one split are in one folder, not {sorted(folders)}")
    folder = folders.pop()

    def read_in_folder(saved: tf.Tensor) -> tf.data.Dataset:
        # The reader op itself, not tf.data.TFRecordDataset: that one feeds the path to
        # a flat_map, and a flat_map's iterator saves its current element, so the state
        # named the shard's old folder and failed to restore after the data moved. Of
        # what is saved only the name counts (states saved before held whole paths).
        name = tf.strings.split(saved, os.sep)[-1]
        reader = tf.raw_ops.TFRecordDataset(
            filenames=tf.strings.join([folder, name], separator=os.sep),
            compression_type="", buffer_size=_READ_BUFFER)
        return tf.data.experimental.from_variant(reader, tf.TensorSpec([], tf.string))

    def open_shard(name: tf.Tensor) -> tf.data.Dataset:
        # The layout of tf.data.TFRecordDataset (a flat_map over the file's name), so that
        # the input states of runs saved before still restore.
        return tf.data.Dataset.from_tensor_slices(tf.reshape(name, [-1])).flat_map(
            read_in_folder)

    files = tf.data.Dataset.from_tensor_slices([os.path.basename(path) for path in paths])
    if shuffle_files:
        files = files.shuffle(len(paths), seed=seed)
        records = files.interleave(open_shard, cycle_length=min(len(paths), 16),
                                   num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
    else:
        records = files.interleave(open_shard, cycle_length=len(paths), block_length=1)
    return records.map(parse, num_parallel_calls=tf.data.AUTOTUNE)
