"""Text <-> ids inside a TensorFlow graph, for each kind of ``TextEncoder``.

What a SavedModel carries instead of the Python encoders: the same ids for the
same text and the same text for the same ids, built from TensorFlow and
tensorflow-text ops only, so the export loads where t2t_lite is not installed.

* subwords: ``tensorflow_text.SentencepieceTokenizer`` on the problem's own
  sentencepiece model proto (``SubwordTextEncoder.tf_encode`` / ``tf_decode``);
* word-level vocabularies (parsing, algorithmic problems): a ``tf.lookup``
  table from token to id, unknown tokens to the OOV id, and the token strings
  joined by spaces on the way back;
* bytes: a table from each of the 256 bytes to its id, and back, with invalid
  UTF-8 in a decode replaced as Python's ``errors="replace"`` does.
"""
from __future__ import annotations

import tensorflow as tf

from t2t_lite.data.encoders import (NUM_RESERVED_IDS, ByteTextEncoder, TextEncoder,
                                    TokenTextEncoder)
from t2t_lite.data.subword import SubwordTextEncoder, graph_trim_ids


class GraphTextCodec(tf.Module):
    """``encode(strings [N]) -> ids ragged [N, None]`` (no EOS) and
    ``decode(ids [N, L]) -> strings [N]``, as the encoder's Python methods."""

    def encode(self, strings: tf.Tensor) -> tf.RaggedTensor:
        raise NotImplementedError

    def decode(self, ids: tf.Tensor) -> tf.Tensor:
        raise NotImplementedError


class SubwordCodec(GraphTextCodec):
    def __init__(self, encoder: SubwordTextEncoder):
        super().__init__()
        self.encoder = encoder
        self.tokenizer = encoder.graph_tokenizer  # tracked: its model proto is saved

    def encode(self, strings: tf.Tensor) -> tf.RaggedTensor:
        return self.encoder.tf_encode(strings)

    def decode(self, ids: tf.Tensor) -> tf.Tensor:
        return self.encoder.tf_decode(ids)


class _TableCodec(GraphTextCodec):
    """Pieces looked up in a table on the way in, gathered and joined on the way out."""

    def __init__(self, pieces: list[bytes], first_id: int, default_id: int, separator: str):
        super().__init__()
        self.table = tf.lookup.StaticHashTable(
            tf.lookup.KeyValueTensorInitializer(
                tf.constant(pieces, tf.string),
                tf.range(first_id, first_id + len(pieces), dtype=tf.int32)),
            default_value=default_id)
        self.strings = tf.constant([b""] * first_id + pieces, tf.string)
        self.separator = separator

    def pieces(self, strings: tf.Tensor) -> tf.RaggedTensor:
        raise NotImplementedError

    def encode(self, strings: tf.Tensor) -> tf.RaggedTensor:
        return tf.ragged.map_flat_values(self.table.lookup, self.pieces(strings))

    def decode(self, ids: tf.Tensor) -> tf.Tensor:
        return tf.strings.reduce_join(tf.gather(self.strings, graph_trim_ids(ids)), axis=-1,
                                      separator=self.separator)


class TokenCodec(_TableCodec):
    """Whitespace-separated tokens (``TokenTextEncoder``)."""

    def __init__(self, encoder: TokenTextEncoder):
        tokens = [t.encode("utf-8") for t in encoder.tokens[NUM_RESERVED_IDS:]]
        super().__init__(tokens, NUM_RESERVED_IDS, encoder.oov_id, " ")

    def pieces(self, strings: tf.Tensor) -> tf.RaggedTensor:
        return tf.strings.split(strings)


class ByteCodec(_TableCodec):
    """UTF-8 bytes (``ByteTextEncoder``)."""

    def __init__(self):
        super().__init__([bytes([b]) for b in range(256)], NUM_RESERVED_IDS, NUM_RESERVED_IDS,
                         "")

    def pieces(self, strings: tf.Tensor) -> tf.RaggedTensor:
        return tf.strings.bytes_split(strings)

    def decode(self, ids: tf.Tensor) -> tf.Tensor:
        return tf.strings.unicode_transcode(super().decode(ids), "UTF-8", "UTF-8",
                                            errors="replace", replacement_char=0xFFFD)


def graph_codec(encoder: TextEncoder) -> GraphTextCodec:
    """The in-graph twin of ``encoder``; other encoder classes cannot be exported."""
    if isinstance(encoder, SubwordTextEncoder):
        return SubwordCodec(encoder)
    if isinstance(encoder, TokenTextEncoder):
        return TokenCodec(encoder)
    if isinstance(encoder, ByteTextEncoder):
        return ByteCodec()
    raise ValueError(f"{type(encoder).__name__} has no in-graph twin to export with; "
                     "exports support subword, token and byte vocabularies")
