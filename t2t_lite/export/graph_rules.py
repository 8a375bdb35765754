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
    (``decoder.encode_prefixes``); a prefix that leaves the model no position to go
    on in fails the call, naming its position."""
    ids = codec.encode(prefixes)
    room = decode_length(rules, tf.constant(2 ** 31 - 1))
    too_long = tf.where(ids.row_lengths() >= tf.cast(room, ids.row_lengths().dtype))[:, 0]
    check = tf.debugging.Assert(
        tf.equal(tf.size(too_long), 0),
        ["prefixes leave the model no position to go on in (it decodes at most", room,
         "tokens): shorten the prefixes at (0-based) positions", too_long], summarize=10)
    with tf.control_dependencies([check]):
        return tf.cast(ids, tf.int32).to_tensor(default_value=PAD_ID)


def decode_length(rules: InputRules, max_decode_length: tf.Tensor) -> tf.Tensor:
    """``InputRules.decode_length``: ``max_decode_length`` within the model's positions."""
    if rules.max_positions is None:
        return max_decode_length
    return tf.minimum(max_decode_length, rules.max_positions)


def one_line(rules: InputRules, text: tf.Tensor) -> tf.Tensor:
    """``InputRules.one_line``: line breaks as spaces, trailing ones dropped."""
    text = tf.strings.regex_replace(text, f"[{rules.line_break_chars}]+$", "")
    return tf.strings.regex_replace(text, rules.line_break, " ")
