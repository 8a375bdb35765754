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

from typing import Callable, Protocol

import tensorflow as tf

from t2t_lite.contracts.reserved_ids import NUM_RESERVED_IDS
from t2t_lite.data.encoders import ByteTextEncoder, TextEncoder, TokenTextEncoder
from t2t_lite.data.subword import SubwordTextEncoder, graph_trim_ids


class GraphTextCodec(Protocol):
    """``encode(strings [N]) -> ids ragged [N, None]`` (no EOS) and
    ``decode(ids [N, L]) -> strings [N]``, as the encoder's Python methods."""

    def encode(self, strings: tf.Tensor) -> tf.RaggedTensor: ...

    def decode(self, ids: tf.Tensor) -> tf.Tensor: ...


class SubwordCodec(tf.Module):
    """A sentencepiece model (``SubwordTextEncoder``)."""

    def __init__(self, encoder: SubwordTextEncoder):
        super().__init__()
        self.encoder = encoder
        self.tokenizer = encoder.graph_tokenizer  # tracked: its model proto is saved

    def encode(self, strings: tf.Tensor) -> tf.RaggedTensor:
        return self.encoder.tf_encode(strings)

    def decode(self, ids: tf.Tensor) -> tf.Tensor:
        return self.encoder.tf_decode(ids)


class TableCodec(tf.Module):
    """Pieces (``split`` of each string) looked up in a table on the way in,
    gathered and joined by ``separator`` on the way out. ``repair_utf8``: the
    joined bytes may be cut UTF-8 (a byte vocabulary), replaced as Python's
    ``errors="replace"`` does."""

    def __init__(self, pieces: list[bytes], first_id: int, default_id: int,
                 split: Callable[[tf.Tensor], tf.RaggedTensor], separator: str,
                 repair_utf8: bool = False):
        super().__init__()
        self.table = tf.lookup.StaticHashTable(
            tf.lookup.KeyValueTensorInitializer(
                tf.constant(pieces, tf.string),
                tf.range(first_id, first_id + len(pieces), dtype=tf.int32)),
            default_value=default_id)
        self.strings = tf.constant([b""] * first_id + pieces, tf.string)
        self.split, self.separator, self.repair_utf8 = split, separator, repair_utf8

    def encode(self, strings: tf.Tensor) -> tf.RaggedTensor:
        return tf.ragged.map_flat_values(self.table.lookup, self.split(strings))

    def decode(self, ids: tf.Tensor) -> tf.Tensor:
        text = tf.strings.reduce_join(tf.gather(self.strings, graph_trim_ids(ids)), axis=-1,
                                      separator=self.separator)
        if self.repair_utf8:
            text = tf.strings.unicode_transcode(text, "UTF-8", "UTF-8", errors="replace",
                                                replacement_char=0xFFFD)
        return text


def graph_codec(encoder: TextEncoder) -> GraphTextCodec:
    """The in-graph twin of ``encoder``; other encoder classes cannot be exported."""
    if isinstance(encoder, SubwordTextEncoder):
        return SubwordCodec(encoder)
    if isinstance(encoder, TokenTextEncoder):  # whitespace-separated tokens
        tokens = [t.encode("utf-8") for t in encoder.tokens[NUM_RESERVED_IDS:]]
        return TableCodec(tokens, NUM_RESERVED_IDS, encoder.oov_id, tf.strings.split, " ")
    if isinstance(encoder, ByteTextEncoder):  # UTF-8 bytes
        return TableCodec([bytes([b]) for b in range(256)], NUM_RESERVED_IDS,
                          NUM_RESERVED_IDS, tf.strings.bytes_split, "", repair_utf8=True)
    raise ValueError(f"{type(encoder).__name__} has no in-graph twin to export with; "
                     "exports support subword, token and byte vocabularies")
