"""Word alignments from a model's cross-attention, in Pharaoh format (``0-0 1-2``:
source word i, target word j, words as split on spaces), as fairseq's
``--print-alignment`` and Marian's ``--alignment`` give them.

Each target token (its EOS left out) is aligned to the source token it attends to
most (its EOS and padding left out), in the teacher-forced pass over the pair
(``Seq2SeqModel.attention_weights``: query t is the prediction of target token t),
at one decoder layer, its heads averaged (a model trained with guided alignment:
its supervised head alone); the token links become links between
the words holding them. The search computes no weights, so aligning costs one
more forward pass over the outputs. Which layer: ``DEFAULT_LAYER``, the
penultimate, where Garg et al. (2019) found a Transformer's attention aligns best
(the only one for a model of one layer, or an RNN's one attention).

A token's word comes from the encoder's own decoding (``alignment_links.word_indices``):
any encoder splits words as its text does; a token that adds only a space (a lone
``▁``, a space byte) is in no word and aligns nothing.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import tensorflow as tf

from t2t_lite.contracts.reserved_ids import EOS_ID
from t2t_lite.data.alignment_links import DEFAULT_LAYER, word_indices
from t2t_lite.data.encoders import TextEncoder, trim_ids

def word_links(weights: np.ndarray, source_words: list[int], target_words: list[int]
               ) -> set[tuple[int, int]]:
    """(source word, target word) for each target token in a word: the word of the
    source token in a word that its row of ``weights`` [T, S] weighs most (ties to
    the first)."""
    in_words = np.asarray(source_words) >= 0
    if not in_words.any():
        return set()
    rows = np.asarray(weights)[:len(target_words), :len(source_words)]
    chosen = np.argmax(np.where(in_words, rows, -np.inf), axis=1)
    return {(source_words[s], word) for s, word in zip(chosen, target_words) if word >= 0}


def pharaoh(links: set[tuple[int, int]]) -> str:
    """``links`` as Pharaoh text: ``i-j`` pairs, by source word then target word."""
    return " ".join(f"{i}-{j}" for i, j in sorted(links))


class Aligner:
    """The word alignments of decoded pairs under ``model``'s cross-attention at
    decoder ``layer`` (Python's indexing: -2 the penultimate), of ``head``, or its
    heads averaged (None)."""

    def __init__(self, model: Any, source_encoder: TextEncoder, target_encoder: TextEncoder,
                 layer: int = DEFAULT_LAYER, head: int | None = None):
        if not hasattr(model, "attention_weights"):
            raise ValueError(f"{type(model).__name__} has no attention weights to align "
                             "words with (an ensemble aligns nothing: decode with one model)")
        self.model, self.layer, self.head = model, layer, head
        self.source_encoder, self.target_encoder = source_encoder, target_encoder
        spec = tf.TensorSpec([None, None], tf.int32)
        self._weights = tf.function(self._cross_attention, input_signature=[spec, spec],
                                    autograph=False)

    def _cross_attention(self, inputs: tf.Tensor, targets: tf.Tensor) -> tf.Tensor:
        weights = self.model.attention_weights({"inputs": inputs, "targets": targets})
        layers = weights["encoder_decoder"]  # [B, layers, heads, T, S]
        layer = tf.maximum(tf.shape(layers)[1] + self.layer, 0) if self.layer < 0 \
            else tf.minimum(self.layer, tf.shape(layers)[1] - 1)
        heads = tf.gather(layers, layer, axis=1)  # [B, heads, T, S]
        return tf.reduce_mean(heads, axis=1) if self.head is None else heads[:, self.head]

    def __call__(self, inputs: np.ndarray, outputs: Sequence[Sequence[int]]) -> list[str]:
        """The Pharaoh alignment of each row of ``inputs`` (int [B, S]: ids, EOS, PAD)
        with its decoded ids ``outputs`` (one row per input: ids, EOS, PAD after)."""
        sources = [trim_ids(row) for row in np.asarray(inputs).tolist()]
        targets = [trim_ids(row) for row in outputs]
        length = max(len(target) for target in targets) + 1
        padded = np.zeros((len(targets), length), np.int32)
        for row, target in enumerate(targets):
            padded[row, :len(target) + 1] = target + [EOS_ID]
        weights = self._weights(tf.constant(np.asarray(inputs, np.int32)),
                                tf.constant(padded)).numpy()
        alignments = []
        for row, (source, target) in enumerate(zip(sources, targets)):
            alignments.append(pharaoh(word_links(
                weights[row], word_indices(self.source_encoder, source),
                word_indices(self.target_encoder, target))))
        return alignments
