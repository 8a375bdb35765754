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


def decode_length(rules: InputRules, max_decode_length: tf.Tensor) -> tf.Tensor:
    """``InputRules.decode_length``: ``max_decode_length`` within the model's positions."""
    if rules.max_positions is None:
        return max_decode_length
    return tf.minimum(max_decode_length, rules.max_positions)


def one_line(rules: InputRules, text: tf.Tensor) -> tf.Tensor:
    """``InputRules.one_line``: line breaks as spaces, trailing ones dropped."""
    text = tf.strings.regex_replace(text, f"[{rules.line_break_chars}]+$", "")
    return tf.strings.regex_replace(text, rules.line_break, " ")
