"""Batching examples by token budget: filter by length, bucket, pad.

Examples of similar length are batched together (buckets whose upper lengths
grow by ``length_bucket_step``, 1.1 as in T2T), and each bucket's batch size is chosen so that
``batch_size * longest_length_in_bucket <= batch_size_tokens``: every batch
holds about the same number of tokens whatever the sentence lengths. Batches
are padded with ``PAD_ID`` only to their own longest sequence.

Buckets save padding but make every batch hold one length. Tasks whose output
depends on the input's length (reversal, say) learn several times faster from
batches that mix lengths: ``length_bucket_step=0`` turns bucketing off, giving
batches of ``batch_size_tokens // max_length`` examples of any length.
"""
from __future__ import annotations

import tensorflow as tf

from t2t_lite.contracts.reserved_ids import PAD_ID
from t2t_lite.data.no_autotune import without_autotuning
from t2t_lite.data.tfrecords import CORPUS
from t2t_lite.data.augmentation import Augment

_MIN_BUCKET_LENGTH = 8


def bucket_upper_lengths(max_length: int, step: float = 1.1) -> list[int]:
    """Inclusive upper lengths of the buckets: 8, 9, ..., growing ~``step``x, ending at
    ``max_length``; a single bucket when ``step <= 1``."""
    uppers = []
    length = min(_MIN_BUCKET_LENGTH, max_length)
    while step > 1 and length < max_length:
        uppers.append(length)
        length = max(length + 1, int(length * step))
    return uppers + [max_length]


# The features a batch's size is counted in; others (an example's token links) ride along.
_SIDES = ("inputs", "targets")


def _example_length(example: dict[str, tf.Tensor]) -> tf.Tensor:
    """The longer side of an example, which is what a batch is padded to."""
    return tf.reduce_max(tf.stack([tf.shape(ids)[0] for key, ids in example.items()
                                   if key in _SIDES]))


def _positive_cuts(lengths: dict[str, int]) -> dict[str, int]:
    return {feature: length for feature, length in lengths.items() if length > 0}


def _cut(example: dict[str, tf.Tensor], cuts: dict[str, int]) -> dict[str, tf.Tensor]:
    return {key: ids[:cuts[key]] if key in cuts else ids for key, ids in example.items()}


def truncate_features(dataset: tf.data.Dataset, lengths: dict[str, int]) -> tf.data.Dataset:
    """Each feature cut to its first ``lengths[feature]`` ids (0: kept whole), as
    tensor2tensor's max_input_seq_length / max_target_seq_length cut them: after EOS
    was appended, so a cut sequence has none."""
    cuts = _positive_cuts(lengths)
    if not cuts:
        return dataset
    return dataset.map(lambda example: _cut(example, cuts),
                       num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)


def then_truncated(augment: Augment, lengths: dict[str, int]) -> Augment:
    """``augment``, then ``truncate_features``'s cut (an augment may lengthen a
    sequence the pipeline had cut)."""
    cuts = _positive_cuts(lengths)
    if not cuts:
        return augment
    return lambda example, seed: _cut(augment(example, seed), cuts)


def _by_corpus(dataset: tf.data.Dataset, weights: list[float], shuffle_buffer: int,
               seed: int | None, fits) -> tf.data.Dataset:
    """Training examples drawn from each corpus (``tfrecords.CORPUS``) in proportion to
    its weight, each corpus shuffled and repeated on its own. Each stream reads every
    shard and keeps its corpus's records (at most four corpora: parsing a record costs
    microseconds, a training step milliseconds), so the shards stay one split."""
    streams = []
    for index in range(len(weights)):
        stream = dataset.filter(lambda example, k=index: tf.equal(example[CORPUS][0], k))
        stream = stream.map(lambda example: {key: ids for key, ids in example.items()
                                             if key != CORPUS}).filter(fits)
        streams.append(stream.shuffle(shuffle_buffer, seed=None if seed is None else seed + index,
                                      reshuffle_each_iteration=True).repeat())
    return tf.data.Dataset.sample_from_datasets(streams, weights, seed=seed)


def batch_examples(dataset: tf.data.Dataset, batch_size_tokens: int, max_length: int,
                   training: bool, shuffle_buffer: int = 10000,
                   seed: int | None = None, length_bucket_step: float = 1.1,
                   augment: Augment | None = None,
                   corpus_weights: list[float] | None = None) -> tf.data.Dataset:
    """Padded batches ``{"inputs": int32[B, S], "targets": int32[B, T]}`` with B*max(S, T)
    at most ``batch_size_tokens``.

    Examples with a side longer than ``max_length``, or than ``batch_size_tokens``
    (no batch could hold them), are dropped; ``max_length=0`` leaves only the
    latter limit, as in T2T. Training shuffles examples and repeats forever; otherwise every kept
    example appears once, in a deterministic order. ``augment`` (training only)
    changes each example as it is read, seeded by ``seed`` and the example's
    position in the repeated stream: other draws each epoch, the same ones each run;
    an example it makes longer than the limits is dropped then. ``corpus_weights``
    (training only; the examples hold ``tfrecords.CORPUS``): each corpus's share of
    the stream, whatever its length.
    """
    if batch_size_tokens < 1:
        raise ValueError(f"batch_size_tokens must be positive, got {batch_size_tokens}")
    if max_length < 0:
        raise ValueError(f"max_length must be >= 0 (0 = limited by the token budget), "
                         f"got {max_length}")
    limit = min(max_length, batch_size_tokens) if max_length else batch_size_tokens

    def fits(example: dict[str, tf.Tensor]) -> tf.Tensor:
        return _example_length(example) <= limit

    if training and corpus_weights:
        dataset = _by_corpus(dataset, corpus_weights, shuffle_buffer, seed, fits)
    elif training:
        dataset = dataset.filter(fits).shuffle(shuffle_buffer, seed=seed,
                                               reshuffle_each_iteration=True).repeat()
    else:
        dataset = dataset.filter(fits)
    if training and augment is not None:
        dataset = dataset.enumerate().map(
            lambda index, example: augment(
                example, tf.stack([tf.constant(seed or 0, tf.int64), index])),
            num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
        # An augment may lengthen an example (subword sampling splits words finer).
        dataset = dataset.filter(fits)
    uppers = bucket_upper_lengths(limit, length_bucket_step)
    dataset = dataset.bucket_by_sequence_length(
        element_length_func=_example_length,
        # A length L goes to the first bucket whose boundary exceeds it.
        bucket_boundaries=[upper + 1 for upper in uppers[:-1]],
        bucket_batch_sizes=[max(1, batch_size_tokens // upper) for upper in uppers],
        padding_values=PAD_ID,
        pad_to_bucket_boundary=False)
    return without_autotuning(dataset.prefetch(tf.data.AUTOTUNE))
