"""``delinearize`` inside a TensorFlow graph, for decodes that a ``TreeConstraint``
allowed: what an exported parser runs after its beam search.

Such a decode is already a well-formed tree with one word slot per input word
(the constraint rules out everything else), so no repair is needed: brackets
stay, the k-th word slot becomes ``(TAG word_k)`` with the k-th source word (and,
with ``SlotToken.POS``, the tag token just before it, which itself prints nothing),
and closers attach to what they close, which gives exactly ``str(delinearize(...))``.
Tokens of no kind (unknown ones) are dropped, as ``delinearize`` drops them.
"""
from __future__ import annotations

import tensorflow as tf

from t2t_lite.parsing.linearize import CLOSE, OPEN, WORD_SLOT, SlotToken
from t2t_lite.parsing.trees import PTB_POS_TAGS


def graph_delinearize(sources: tf.Tensor, decoded: tf.Tensor,
                      slot_token: SlotToken = SlotToken.PLACEHOLDER) -> tf.Tensor:
    """string [N] source lines and [N] constrained decodes -> [N] tree lines."""
    tokens = tf.strings.split(decoded)  # ragged [N, T]
    flat = tokens.flat_values
    is_open = tf.logical_and(tf.strings.substr(flat, 0, 1) == OPEN, tf.strings.length(flat) > 1)
    is_close = tf.strings.substr(flat, 0, 1) == CLOSE
    is_tag = tf.zeros_like(is_open)
    if slot_token is SlotToken.POS:
        tag_openers = tf.constant(sorted(OPEN + tag for tag in PTB_POS_TAGS))
        is_tag = tf.reduce_any(tf.equal(flat[:, None], tag_openers[None, :]), axis=1)
        is_open = tf.logical_and(is_open, tf.logical_not(is_tag))
    if slot_token is SlotToken.PLACEHOLDER:
        is_word = tf.equal(flat, WORD_SLOT)
    else:
        is_word = tf.logical_not(tf.logical_or(tf.logical_or(is_open, is_close), is_tag))
    # The k-th word slot of a row takes the row's k-th word.
    slot_numbers = tf.cumsum(tokens.with_flat_values(tf.cast(is_word, tf.int32)).to_tensor(),
                             axis=1, exclusive=True)
    words = tf.strings.split(sources).to_tensor(default_value="")
    slot_numbers = tf.minimum(slot_numbers, tf.maximum(tf.shape(words)[1] - 1, 0))
    slot_words = tf.RaggedTensor.from_tensor(
        tf.gather(words, slot_numbers, batch_dims=1), lengths=tokens.row_lengths()).flat_values
    if slot_token is SlotToken.POS:
        # A constrained decode puts each word's tag just before it (in the same row).
        tag = tf.strings.substr(tf.concat([[OPEN], flat[:-1]], axis=0), 1, -1)
    else:
        tag = tf.fill(tf.shape(flat), WORD_SLOT)
    leaf = tf.strings.join(["(", tag, " ", slot_words, ")"])
    piece = tf.where(is_word, leaf, tf.where(is_open, flat, tf.where(is_close, CLOSE, "")))
    # A space before every piece but the first and the closers, which attach to what they close.
    first = tf.equal(tf.range(tf.size(flat, out_type=tf.int64)),
                     tf.gather(tokens.row_starts(), tokens.value_rowids()))
    spaced = tf.where(tf.logical_or(first, is_close) | tf.equal(piece, ""), piece,
                      tf.strings.join([" ", piece]))
    return tf.strings.reduce_join(tokens.with_flat_values(spaced), axis=1)
