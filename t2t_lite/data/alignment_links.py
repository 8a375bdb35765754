"""Word alignments of training pairs, for guided alignment (Garg et al. 2019).

A corpus's alignment file (``--data_options=...,train_alignments=FILE``) holds one
line per pair in Pharaoh format, ``i-j`` for source word i and target word j (words
as split on spaces, 0-based), as fast_align and eflomal write it; an empty line
aligns nothing. Datagen turns each word link into links between the tokens of the
two words (a word in several pieces links each piece) and stores them with the
example, under ``ALIGNMENTS``: one int a link, ``target * LINK_STRIDE + source + 1``,
so that a batch padded with 0 holds no false link. Training (hparam
``guided_alignment_weight``) reads them back as a matrix over the batch's tokens
(``link_matrix``).

A token's word is the word count of the text its prefix decodes to, by the
encoder's own decoding (``word_indices``): any encoder splits words as its text
does, and a token that adds only a space is in no word. ``--decode_alignments``
maps tokens to words the same way.
"""
from __future__ import annotations

from typing import Any, Sequence

import tensorflow as tf

from t2t_lite.data.encoders import TextEncoder

ALIGNMENTS = "alignments"  # the feature of an example's token links
LINK_STRIDE = 1 << 15  # positions below it: a token link is one int32
# The decoder layer whose cross-attention aligns words (Python's indexing, clamped to
# the stack): the penultimate, where Garg et al. (2019) found a Transformer's
# attention aligns best (the only one of a model of one layer, or an RNN's one).
DEFAULT_LAYER = -2  # the penultimate decoder layer (clamped to the first)
# The head that guided alignment training supervises (hparam guided_alignment_weight:
# t2t_lite/training/guided_alignment.py), at DEFAULT_LAYER, as Garg et al. (2019) do;
# the aligner reads it alone in a model so trained.
SUPERVISED_HEAD = 0


def aligned_head(hparams: Any) -> int | None:
    """The head whose weights align words in a model of ``hparams``: the supervised
    one after guided alignment training; None (the heads averaged) otherwise."""
    return SUPERVISED_HEAD if getattr(hparams, "guided_alignment_weight", 0) else None


def word_indices(encoder: TextEncoder, ids: Sequence[int]) -> list[int]:
    """The word (0-based, words of the decoded text split on spaces) each of ``ids``
    (no EOS or PAD among them) belongs to; -1 for a token that only adds a space."""
    indices, text = [], ""
    for end in range(1, len(ids) + 1):
        now = encoder.decode(ids[:end])
        # A token that starts a word adds one to the count; one inside a word adds
        # characters only; one that adds no character but a space is in no word.
        grew = len(now.rstrip()) > len(text.rstrip())
        indices.append(len(now.split()) - 1 if grew else -1)
        text = now
    return indices


def parse_pharaoh(line: str, source_words: int, target_words: int) -> list[tuple[int, int]]:
    """The links of a Pharaoh line (``0-0 1-2``); a ValueError that says what is wrong
    for a malformed link or one outside the pair's ``source_words`` x ``target_words``
    (the caller names FILE:LINE)."""
    links = []
    for link in line.split():
        source, dash, target = link.partition("-")
        if not (dash and source.isdigit() and target.isdigit()):
            raise ValueError(f"{link!r} is not a link SOURCE-TARGET of word indices "
                             "(Pharaoh format, as fast_align and eflomal write)")
        i, j = int(source), int(target)
        if i >= source_words or j >= target_words:
            raise ValueError(f"link {link} is outside the pair: its source has "
                             f"{source_words} words and its target {target_words}")
        links.append((i, j))
    return links


def token_links(source_words: Sequence[int], target_words: Sequence[int],
                links: Sequence[tuple[int, int]]) -> list[int]:
    """The token links of word ``links``, encoded as ``ALIGNMENTS`` holds them, given
    each source and target token's word (``word_indices``); by target then source."""
    source_tokens: dict[int, list[int]] = {}
    for position, word in enumerate(source_words):
        source_tokens.setdefault(word, []).append(position)
    target_tokens: dict[int, list[int]] = {}
    for position, word in enumerate(target_words):
        target_tokens.setdefault(word, []).append(position)
    pairs = {(t, s) for i, j in links for s in source_tokens.get(i, [])
             for t in target_tokens.get(j, [])}
    return [t * LINK_STRIDE + s + 1 for t, s in sorted(pairs)
            if s < LINK_STRIDE and t < LINK_STRIDE]


def link_matrix(links: tf.Tensor, source_length: tf.Tensor,
                target_length: tf.Tensor) -> tf.Tensor:
    """``links`` (int32 [B, L], 0-padded ``ALIGNMENTS``) as float32 [B, T, S]: 1 where
    target token t links to source token s. Links beyond the lengths (a cut
    sequence's) are left out."""
    valid = tf.cast(links > 0, tf.float32)[:, :, None]  # [B, L, 1]
    code = tf.maximum(links - 1, 0)
    # One-hot products, not a scatter: fixed shapes, as XLA compiles them; a position
    # past a length has an all-zero one-hot row and so drops its link.
    targets = tf.one_hot(code // LINK_STRIDE, target_length) * valid  # [B, L, T]
    sources = tf.one_hot(code % LINK_STRIDE, source_length)  # [B, L, S]
    return tf.einsum("blt,bls->bts", targets, sources)
