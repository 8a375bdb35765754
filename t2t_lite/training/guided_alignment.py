"""Guided alignment (Garg et al. 2019; OpenNMT-tf's and fairseq's): one cross-attention
head learns the training data's word alignments.

The head is ``SUPERVISED_HEAD`` of the decoder layer ``DEFAULT_LAYER`` (the
penultimate, where an unsupervised Transformer aligns best). For each target token
with links (``t2t_lite/data/alignment_links.py``: made at datagen from an aligner's
Pharaoh file), its gold distribution spreads evenly over the source tokens it links
to, and the loss is the cross-entropy of the head's weights against it: summed over
those tokens, times hparam ``guided_alignment_weight``, and added to the translation
loss's sum, so the step divides both by one count. Tokens without links (and pairs
without an alignment line) add nothing. ``--decode_alignments`` then reads that head
alone (``word_alignment.aligned_head``).
"""
from __future__ import annotations

from typing import Any

import tensorflow as tf

from t2t_lite.contracts.reserved_ids import PAD_ID
from t2t_lite.data.alignment_links import ALIGNMENTS, DEFAULT_LAYER, SUPERVISED_HEAD, link_matrix

_FLOOR = 1e-9  # log of a weight the softmax rounded to 0 stays finite


def check_guided_alignment(hparams: Any, model: Any, problem: Any, data_dir: str) -> None:
    """Refuses, in one line, guided alignment for a model without cross-attention
    heads or data without alignments."""
    weight = hparams.guided_alignment_weight
    if not weight:
        return
    if not hasattr(model, "logits_and_cross_attention"):
        raise ValueError(f"guided_alignment_weight={weight} supervises a cross-attention "
                         f"head, which model {type(model).__name__} does not expose: train "
                         "a transformer, or leave guided_alignment_weight at 0")
    if not problem.has_alignments(data_dir):
        raise ValueError(f"guided_alignment_weight={weight}: problem {problem.name}'s data "
                         f"in {data_dir} holds no word alignments; generate it with "
                         "--data_options=...,train_alignments=FILE (Pharaoh, one line a pair: "
                         "eflomal or fast_align write it) in a new --data_dir")


def alignment_loss(attention: tf.Tensor, links: tf.Tensor, inputs: tf.Tensor,
                   targets: tf.Tensor) -> tf.Tensor:
    """The summed cross-entropy of ``attention`` (float32 [B, T, S], one head's weights;
    query t predicts targets[:, t]) against the gold distributions of ``links``
    (``ALIGNMENTS``, int32 [B, L]), over target tokens with links, PAD left out."""
    gold = link_matrix(links, tf.shape(inputs)[1], tf.shape(targets)[1])
    gold *= (tf.cast(tf.not_equal(targets, PAD_ID), tf.float32)[:, :, None]
             * tf.cast(tf.not_equal(inputs, PAD_ID), tf.float32)[:, None, :])
    gold /= tf.maximum(tf.reduce_sum(gold, axis=-1, keepdims=True), 1.0)
    return -tf.reduce_sum(gold * tf.math.log(tf.cast(attention, tf.float32) + _FLOOR))


def guided_logits_and_loss(model: Any, batch: dict[str, tf.Tensor],
                           weight: float) -> tuple[tf.Tensor, tf.Tensor]:
    """The training pass over ``batch``: (logits, ``weight`` times the summed alignment
    loss of the supervised head)."""
    features = {key: batch[key] for key in ("inputs", "targets")}
    logits, heads = model.logits_and_cross_attention(features, training=True,
                                                     layer=DEFAULT_LAYER)
    loss = alignment_loss(heads[:, SUPERVISED_HEAD], batch[ALIGNMENTS], batch["inputs"],
                          batch["targets"])
    return logits, weight * loss
