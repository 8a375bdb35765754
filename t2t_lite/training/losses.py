"""Label-smoothed cross-entropy over non-padding target tokens."""
from __future__ import annotations

import math

import tensorflow as tf

from t2t_lite.contracts.reserved_ids import PAD_ID


def smoothed_cross_entropy(logits: tf.Tensor, targets: tf.Tensor,
                           label_smoothing: float) -> tuple[tf.Tensor, tf.Tensor]:
    """Returns (sum of per-token losses, number of non-padding tokens).

    As in T2T, the true token gets ``1 - label_smoothing`` and every other token
    ``label_smoothing / (V - 1)``; the entropy of that target distribution is
    subtracted so a perfect prediction scores 0 whatever the smoothing. Callers
    divide the sum by a token count of their choosing (the global count across
    replicas and accumulation steps, in training).
    """
    if not 0.0 <= label_smoothing < 1.0:
        raise ValueError(f"hparam label_smoothing must be in [0, 1), got {label_smoothing}: "
                         "at 1 no probability is left for the true token")
    vocab_size = tf.shape(logits)[-1]
    confidence = 1.0 - label_smoothing
    low = label_smoothing / tf.cast(vocab_size - 1, tf.float32)
    log_probs = tf.nn.log_softmax(tf.cast(logits, tf.float32), axis=-1)
    # The smoothed target distribution as a dense [..., V] weight: one multiply and
    # one sum each way. (Gathering the true token's log-probability is half as fast
    # on CPU: its gradient scatters into a zeroed [..., V] array; 131 vs 67 ms for
    # [64, 32, 8192], forward and backward.)
    target_distribution = tf.one_hot(targets, vocab_size, on_value=confidence, off_value=low)
    per_token = -tf.reduce_sum(log_probs * target_distribution, -1)
    # Entropy of the smoothed target distribution: the lowest reachable loss.
    v = tf.cast(vocab_size, tf.float32)
    floor = -(confidence * math.log(confidence)
              + (v - 1.0) * low * tf.math.log(low + 1e-20)) if label_smoothing else 0.0
    weights = tf.cast(tf.not_equal(targets, PAD_ID), tf.float32)
    return tf.reduce_sum((per_token - floor) * weights), tf.reduce_sum(weights)
