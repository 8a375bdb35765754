"""The attention of a model over one sentence pair, with token labels: what the
pictures of ``t2t-attention`` show.

The target is given or decoded (beam search, the problem's decode settings);
the model's ``attention_weights`` then runs one teacher-forced pass over the
pair, so the search itself never computes weights. Axes:

* "encoder_self": source tokens attending to source tokens;
* "encoder_decoder": each target token (the one predicted at that position)
  attending to the source tokens;
* "decoder_self": each target token attending to the decoder's inputs so far
  (``<s>`` for the start, then the target shifted right by one).
"""
from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from t2t_lite.contracts.reserved_ids import EOS_ID
from t2t_lite.data.encoders import TextEncoder, trim_ids
from t2t_lite.data.text_files import check_text
from t2t_lite.data.unknown_tokens import UnknownTokens
from t2t_lite.decoding.input_rules import encode_input, warn_cut

START_TOKEN = "<s>"  # the decoder's start symbol, fed as PAD_ID
KINDS = ("encoder_self", "decoder_self", "encoder_decoder")


@dataclasses.dataclass
class AttentionMaps:
    """Weights by kind, float32 [layers, heads, queries, keys], and their tokens."""
    source_tokens: list[str]
    target_tokens: list[str]
    weights: dict[str, np.ndarray]

    @property
    def decoder_input_tokens(self) -> list[str]:
        return [START_TOKEN] + self.target_tokens[:-1]

    def axes(self, kind: str) -> tuple[list[str], list[str]]:
        """(query tokens, key tokens) of ``kind``."""
        return {"encoder_self": (self.source_tokens, self.source_tokens),
                "decoder_self": (self.target_tokens, self.decoder_input_tokens),
                "encoder_decoder": (self.target_tokens, self.source_tokens)}[kind]


def attention_maps(model: Any, source_ids: list[int], target_ids: list[int],
                   source_encoder: TextEncoder, target_encoder: TextEncoder) -> AttentionMaps:
    """Runs ``model.attention_weights`` over one pair of id lists (each ending in EOS)."""
    import tensorflow as tf  # the pictures' other code needs no TensorFlow

    features = {"inputs": tf.constant([source_ids], tf.int32),
                "targets": tf.constant([target_ids], tf.int32)}
    weights = {kind: value.numpy()[0] for kind, value in model.attention_weights(features).items()}
    return AttentionMaps(source_encoder.token_strings(source_ids),
                         target_encoder.token_strings(target_ids), weights)


def with_eos(ids: list[int]) -> list[int]:
    """A decoded id row up to and including its EOS (appended when missing)."""
    return trim_ids(ids) + [EOS_ID]


def encode_sentence(text: str, name: str, encoder: TextEncoder,
                    max_length: int) -> list[int]:
    """A user's sentence (the flag ``name``'s value) as ids ending in EOS, checked as a
    line of a file is (no control characters), cut to ``max_length`` (EOS included),
    with a warning for a cut or for tokens the vocabulary lacks."""
    text = text.strip()
    check_text(text, name)
    unknown = UnknownTokens(name)
    unknown.count(encoder, text, 1)
    unknown.warn("drawn")
    ids, cut = encode_input(text, encoder, max_length)
    warn_cut(name, cut, 1, max_length)
    return ids


def best_decode(search_fn: Any, source_ids: list[int], extra_length: int) -> list[int]:
    """The best beam (or first sample) of ``search_fn`` (e.g. a BeamSearchDecoder) for
    one source, as line 0."""
    ids, _ = search_fn(np.asarray([source_ids], np.int32), len(source_ids) + extra_length,
                       np.zeros(1, np.int32))
    return with_eos(np.asarray(ids)[0, 0].tolist())
