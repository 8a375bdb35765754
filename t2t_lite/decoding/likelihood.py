"""How likely a model finds given outputs: tensor2tensor's ``--score_file``.

Each (source, target) pair is scored by teacher forcing: the sum over the
target's tokens, EOS included, of log P(token | source, the tokens before it),
the quantity beam search ranks before its length penalty. A model's own best
beam therefore scores at least as high as any other target of its length.

A source longer than the model takes is cut as ``t2t-decoder`` cuts it (one
warning); a target that long is refused, since its score would be that of
another, shorter target.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import tensorflow as tf

from t2t_lite.contracts.reserved_ids import EOS_ID, PAD_ID
from t2t_lite.data.encoders import TextEncoder
from t2t_lite.data.text_files import read_utf8_lines
from t2t_lite.data.unknown_tokens import UnknownTokens
from t2t_lite.decoding.input_rules import encode_input, warn_cut
from t2t_lite.decoding.word_alignment import Aligner


def _padded(rows: list[list[int]]) -> tf.Tensor:
    batch = np.full((len(rows), max(map(len, rows))), PAD_ID, np.int32)
    for i, row in enumerate(rows):
        batch[i, :len(row)] = row
    return tf.constant(batch)


def read_pairs(path: str) -> list[tuple[str, str]]:
    """(source, target) of each line ``source<TAB>target`` of ``path``; a line without
    exactly one tab is a ``ValueError`` naming the file and line."""
    pairs = []
    for number, line in enumerate(read_utf8_lines(path, allow_tab=True), start=1):
        fields = line.split("\t")
        if len(fields) != 2:
            raise ValueError(f"{path}: line {number} has {len(fields) - 1} tabs; each line "
                             "must be 'source<TAB>target'")
        pairs.append((fields[0], fields[1]))
    return pairs


def score_file(model: Any, path: str, encoder: TextEncoder,
               target_encoder: TextEncoder | None = None, batch_size: int = 32,
               max_length: int = 0, aligner: Aligner | None = None
               ) -> tuple[list[float], list[str] | None]:
    """``target_log_probs`` of every ``source<TAB>target`` line of ``path`` and, with an
    ``aligner``, each pair's word alignment (fast_align's use: given pairs aligned);
    the tokens the vocabulary lacks are counted in one warning."""
    pairs = read_pairs(path)
    unknown = UnknownTokens(path)
    for number, (source, target) in enumerate(pairs, start=1):
        unknown.count(encoder, source, number)
        unknown.count(target_encoder or encoder, target, number)
    unknown.warn("scored")
    return target_log_probs(model, pairs, encoder, target_encoder, batch_size, max_length,
                            name=path, aligner=aligner)


def target_log_probs(model: Any, pairs: Sequence[tuple[str, str]], encoder: TextEncoder,
                     target_encoder: TextEncoder | None = None,
                     batch_size: int = 32, max_length: int = 0, name: str = "pairs",
                     aligner: Aligner | None = None) -> tuple[list[float], list[str] | None]:
    """log P(target + EOS | source) for each (source, target) pair, in order, and with
    an ``aligner`` each pair's word alignment (else None).

    With a ``max_length`` (EOS included; 0: none), longer sources are cut to it and
    a longer target is a ``ValueError`` naming ``name`` and its (1-based) pair.
    """
    target_encoder = target_encoder or encoder
    sources, cut = [], 0
    for source, _ in pairs:
        ids, was_cut = encode_input(source.strip(), encoder, max_length)
        sources.append(ids)
        cut += was_cut
    targets = [target_encoder.encode(target.strip()) + [EOS_ID] for _, target in pairs]
    too_long = next((i for i, ids in enumerate(targets) if max_length and len(ids) > max_length),
                    None)
    if too_long is not None:
        raise ValueError(f"{name}:{too_long + 1}: the target has {len(targets[too_long]) - 1} "
                         f"tokens, more than the {max_length - 1} this model takes (the decode "
                         "hparam max_input_length, else the model's max_length); its score "
                         "would be that of a cut target: shorten or remove it")
    warn_cut(name, cut, len(pairs), max_length)
    scores: list[float] = []
    alignments: list[str] | None = [] if aligner else None
    for start in range(0, len(pairs), batch_size):
        inputs = _padded(sources[start:start + batch_size])
        batch_targets = _padded(targets[start:start + batch_size])
        logits = model({"inputs": inputs, "targets": batch_targets}, training=False)
        token_log_probs = tf.gather(tf.nn.log_softmax(tf.cast(logits, tf.float32)),
                                    batch_targets, batch_dims=2)
        real = tf.cast(tf.not_equal(batch_targets, PAD_ID), tf.float32)
        scores += tf.reduce_sum(token_log_probs * real, axis=1).numpy().tolist()
        if aligner:
            alignments += aligner(inputs.numpy(), batch_targets.numpy())
    return scores, alignments
