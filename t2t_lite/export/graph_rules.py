"""The input rules (``t2t_lite/decoding/input_rules.py``) as TensorFlow ops, for
an exported graph: the same fields of the same ``InputRules``, so an export cuts,
ends, bounds and joins exactly as ``t2t-decoder`` does.
"""
from __future__ import annotations

import tensorflow as tf

from t2t_lite.contracts.reserved_ids import EOS_ID, PAD_ID
from t2t_lite.decoding.input_rules import InputRules
from t2t_lite.export.graph_text import GraphTextCodec


def source_ids(rules: InputRules, codec: GraphTextCodec, lines: tf.Tensor) -> tf.Tensor:
    """Stripped lines [N] -> int32 [N, S]: their ids cut to ``max_input_length`` (EOS
    included), then EOS, PAD-padded (``encode_input``)."""
    ids = codec.encode(lines)
    if rules.max_input_length:
        ids = ids[:, :rules.max_input_length - 1]
    eos = tf.RaggedTensor.from_tensor(tf.fill([tf.shape(lines)[0], 1], EOS_ID))
    return tf.concat([tf.cast(ids, tf.int32), eos], axis=1).to_tensor(default_value=PAD_ID)


def prefix_ids(rules: InputRules, codec: GraphTextCodec, prefixes: tf.Tensor) -> tf.Tensor:
    """Stripped target prefixes [N] -> int32 [N, P], PAD-padded, no EOS
    (``target_guides.encode_guides``); a prefix that leaves the model no position to go
    on in fails the call, naming its position."""
    ids = codec.encode(prefixes)
    with tf.control_dependencies([_check_room(rules, ids.row_lengths(), "prefixes leave the "
                                              "model no position to go on in", "prefixes")]):
        return tf.cast(ids, tf.int32).to_tensor(default_value=PAD_ID)


def phrase_ids(rules: InputRules, codec: GraphTextCodec, constraints: tf.Tensor,
               prefix_ids: tf.Tensor) -> tf.Tensor:
    """Terminology constraints [N] (tab-separated target phrases, "" for none) ->
    int32 [N, K, L], PAD-padded (``target_guides``: each phrase stripped and encoded on
    its own, empty ones dropped); phrases that do not fit with the row's prefix
    (``prefix_ids`` [N, P]) and an EOS in the model's positions fail the call,
    naming their position."""
    phrases = tf.strings.strip(tf.strings.split(constraints, "\t"))
    phrases = tf.ragged.boolean_mask(phrases, tf.strings.length(phrases) > 0)
    ids = tf.RaggedTensor.from_row_lengths(codec.encode(phrases.flat_values),
                                           phrases.row_lengths())
    tokens = (tf.reduce_sum(tf.cast(ids.row_lengths(axis=2), tf.int64), axis=1)
              + tf.reduce_sum(tf.cast(prefix_ids != PAD_ID, tf.int64), axis=1))
    with tf.control_dependencies([_check_room(
            rules, tokens, "phrases (with the prefix) and an EOS do not fit in the decode",
            "constraints")]):
        return tf.cast(ids, tf.int32).to_tensor(default_value=PAD_ID)


def _check_room(rules: InputRules, tokens: tf.Tensor, what: str, name: str) -> tf.Operation:
    """Fails when a row's ``tokens`` [N] leave no room for an EOS in the decode."""
    room = decode_length(rules, tf.constant(2 ** 31 - 1))
    too_long = tf.where(tokens >= tf.cast(room, tokens.dtype))[:, 0]
    return tf.debugging.Assert(
        tf.equal(tf.size(too_long), 0),
        [f"{what} (it decodes at most", room, f"tokens): shorten the {name} at (0-based) "
         "positions", too_long], summarize=10)


def decode_length(rules: InputRules, max_decode_length: tf.Tensor) -> tf.Tensor:
    """``InputRules.decode_length``: ``max_decode_length`` within the model's positions."""
    if rules.max_positions is None:
        return max_decode_length
    return tf.minimum(max_decode_length, rules.max_positions)


def one_line(rules: InputRules, text: tf.Tensor) -> tf.Tensor:
    """``InputRules.one_line``: line breaks as spaces, trailing ones dropped."""
    text = tf.strings.regex_replace(text, f"[{rules.line_break_chars}]+$", "")
    return tf.strings.regex_replace(text, rules.line_break, " ")
