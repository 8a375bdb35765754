"""How likely a model finds given outputs: tensor2tensor's ``--score_file``.

Each (source, target) pair is scored by teacher forcing: the sum over the
target's tokens, EOS included, of log P(token | source, the tokens before it),
the quantity beam search ranks before its length penalty. A model's own best
beam therefore scores at least as high as any other target of its length.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import tensorflow as tf

from t2t_lite.data.encoders import EOS_ID, PAD_ID, TextEncoder


def _padded(rows: list[list[int]]) -> tf.Tensor:
    batch = np.full((len(rows), max(map(len, rows))), PAD_ID, np.int32)
    for i, row in enumerate(rows):
        batch[i, :len(row)] = row
    return tf.constant(batch)


def target_log_probs(model: Any, pairs: Sequence[tuple[str, str]], encoder: TextEncoder,
                     target_encoder: TextEncoder | None = None,
                     batch_size: int = 32) -> list[float]:
    """log P(target + EOS | source) for each (source, target) pair, in order."""
    target_encoder = target_encoder or encoder
    scores: list[float] = []
    for start in range(0, len(pairs), batch_size):
        chunk = pairs[start:start + batch_size]
        inputs = _padded([encoder.encode(source.strip()) + [EOS_ID] for source, _ in chunk])
        targets = _padded([target_encoder.encode(target.strip()) + [EOS_ID]
                           for _, target in chunk])
        logits = model({"inputs": inputs, "targets": targets}, training=False)
        token_log_probs = tf.gather(tf.nn.log_softmax(tf.cast(logits, tf.float32)), targets,
                                    batch_dims=2)
        real = tf.cast(tf.not_equal(targets, PAD_ID), tf.float32)
        scores += tf.reduce_sum(token_log_probs * real, axis=1).numpy().tolist()
    return scores
