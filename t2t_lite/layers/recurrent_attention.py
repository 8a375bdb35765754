"""Attention of a recurrent decoder over the encoder's states (3-D tensors).

One layer covers the scores and scopes of Bahdanau et al. (2015) and Luong et
al. (2015). For a query h_t (a decoder state) and encoder states h_s:

* scores: ``dot`` h_t . h_s; ``general`` h_t . W_a h_s; ``concat``
  v_a . tanh(W_q h_t + W_m h_s), which is Luong's v_a . tanh(W_a [h_t; h_s])
  and Bahdanau's additive v^T tanh(W s_{i-1} + U h_j) alike.
* scopes: ``global`` attends to every source position; ``local_m`` to the window
  [p_t - D, p_t + D] around p_t = t; ``local_p`` to the window around the
  predicted p_t = S * sigmoid(v_p . tanh(W_p h_t)) (S: the source's length),
  with the weights then multiplied by exp(-(s - p_t)^2 / (2 sigma^2)), sigma =
  D / 2. Luong's local-m clips p_t to the source (p_t = min(t, S - 1)), so a
  target longer than its source still sees its last positions.

Padding and positions outside the window get weight exactly 0. The softmax
runs over every source position with those masked out, which equals Luong's
softmax over the window (the window is a mask, not a slice: S is small).
Local-p weights sum to less than 1 by design (the Gaussian is not renormalized).

The memory's part of the score (W_a h_s, W_m h_s) is computed once per source
sentence by ``project_memory``, not at every decoding step.
"""
from __future__ import annotations

import keras
import tensorflow as tf

from t2t_lite.hparams.lstm import ATTENTION_SCOPES, ATTENTION_SCORES
from t2t_lite.layers.attention import MASK_VALUE
from t2t_lite.layers.recurrent import Initializers


class RecurrentAttention(keras.layers.Layer):
    """Attention from decoder states [B, T, d_query] over memory [B, S, d_memory].

    Args:
      score: "dot", "general" or "concat".
      scope: "global", "local_m" or "local_p".
      window: D, the half-width of a local window (positions).
      units: the depth of the concat score's tanh layer, and of local-p's
        position network (0 = d_query).
      initializers: for the layer's weights.
    """

    def __init__(self, score: str, scope: str, window: int, units: int,
                 initializers: Initializers, **kwargs):
        super().__init__(**kwargs)
        if score not in ATTENTION_SCORES:
            raise ValueError(f"unknown attention_score {score!r}; choose one of: "
                             f"{', '.join(ATTENTION_SCORES)}")
        if scope not in ATTENTION_SCOPES:
            raise ValueError(f"unknown attention_scope {scope!r}; choose one of: "
                             f"{', '.join(ATTENTION_SCOPES)}")
        if scope != "global" and window < 1:
            raise ValueError(f"a local attention window needs attention_window >= 1, "
                             f"got {window}")
        self.score = score
        self.scope = scope
        self.window = window
        self.units = units
        self.initializers = initializers

    def build(self, query_depth: int, memory_depth: int) -> None:
        """Weights for queries of ``query_depth`` over memory of ``memory_depth``."""
        if self.score == "dot" and query_depth != memory_depth:
            raise ValueError(f"the dot score needs decoder and encoder states of one depth, "
                             f"got {query_depth} and {memory_depth}; use general or concat")
        units = self.units or query_depth
        kernel = self.initializers.kernel
        if self.score == "general":
            self.memory_kernel = self.add_weight(name="memory_kernel",
                                                 shape=(memory_depth, query_depth),
                                                 initializer=kernel)
        elif self.score == "concat":
            self.memory_kernel = self.add_weight(name="memory_kernel",
                                                 shape=(memory_depth, units), initializer=kernel)
            self.query_kernel = self.add_weight(name="query_kernel",
                                                shape=(query_depth, units), initializer=kernel)
            self.score_vector = self.add_weight(name="score_vector", shape=(units,),
                                                initializer=kernel)
        if self.scope == "local_p":
            self.position_kernel = self.add_weight(name="position_kernel",
                                                   shape=(query_depth, units), initializer=kernel)
            self.position_vector = self.add_weight(name="position_vector", shape=(units,),
                                                   initializer=kernel)
        self.built = True

    def project_memory(self, memory: tf.Tensor) -> tf.Tensor:
        """memory [B, S, d_memory] -> its part of the score, [B, S, ...] (once a sentence)."""
        if self.score == "dot":
            return memory
        return tf.tensordot(memory, self.memory_kernel, axes=1)

    def _scores(self, queries: tf.Tensor, keys: tf.Tensor) -> tf.Tensor:
        """queries [B, T, d_query], keys from project_memory -> [B, T, S]."""
        if self.score in ("dot", "general"):
            return tf.matmul(queries, keys, transpose_b=True)
        projected = tf.tensordot(queries, self.query_kernel, axes=1)  # [B, T, units]
        hidden = tf.tanh(projected[:, :, None, :] + keys[:, None, :, :])  # [B, T, S, units]
        return tf.tensordot(hidden, self.score_vector, axes=1)

    def _centers(self, queries: tf.Tensor, positions: tf.Tensor,
                 source_length: tf.Tensor) -> tf.Tensor:
        """p_t of a local scope, float32 [B, T]."""
        if self.scope == "local_m":
            t = tf.cast(positions, tf.float32)[None, :]
            return tf.minimum(t, source_length[:, None] - 1.0)
        hidden = tf.tanh(tf.tensordot(queries, self.position_kernel, axes=1))
        return source_length[:, None] * tf.sigmoid(
            tf.tensordot(hidden, self.position_vector, axes=1))

    def call(self, queries: tf.Tensor, memory: tf.Tensor, keys: tf.Tensor, padding: tf.Tensor,
             positions: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        """Context vectors and attention weights.

        queries [B, T, d_query]; memory [B, S, d_memory]; keys =
        ``project_memory(memory)``; padding float32 [B, S], 1.0 at padded source
        positions; positions int32 [T], the target positions of the queries
        (local-m centres its window there). Returns (context [B, T, d_memory],
        weights [B, T, S]).
        """
        scores = self._scores(queries, keys)
        allowed = tf.equal(padding, 0.0)[:, None, :]  # [B, 1, S]
        if self.scope != "global":
            source_length = tf.reduce_sum(1.0 - padding, axis=1)  # [B]
            centers = self._centers(queries, positions, source_length)[:, :, None]  # [B, T, 1]
            source_positions = tf.cast(tf.range(tf.shape(memory)[1]), tf.float32)
            distance = source_positions[None, None, :] - centers  # [B, T, S]
            allowed = tf.logical_and(allowed, tf.abs(distance) <= float(self.window))
        weights = tf.nn.softmax(tf.where(allowed, scores, MASK_VALUE))
        # A row whose every position is masked (an all-padding source) attends nowhere.
        weights = tf.where(allowed, weights, 0.0)
        if self.scope == "local_p":
            sigma = self.window / 2.0
            weights *= tf.exp(-tf.square(distance) / (2.0 * sigma * sigma))
        return tf.matmul(weights, memory), weights

    def get_config(self) -> dict:
        return {**super().get_config(), "score": self.score, "scope": self.scope,
                "window": self.window, "units": self.units}
