"""Attention of a recurrent decoder over the encoder's states (3-D tensors).

One layer covers the scores and scopes of Bahdanau et al. (2015) and Luong et
al. (2015). For a query h_t (a decoder state) and encoder states h_s:

* scores: ``dot`` h_t . h_s; ``general`` h_t . W_a h_s; ``concat``
  v_a . tanh(W_q h_t + W_m h_s), which is Luong's v_a . tanh(W_a [h_t; h_s])
  and Bahdanau's additive v^T tanh(W s_{i-1} + U h_j) alike.
* scopes: ``global`` attends to every source position; ``local_m`` to the window
  [p_t - D, p_t + D] around p_t = t, counted in the source's own order (over a
  reversed source, as Sutskever et al. feed it, position s of the sentence sits
  at memory slot S - 2 - s, and the window follows it there, as in Luong et
  al.'s implementation); ``local_p`` to the window around the
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

Under a mixed dtype policy the scores and contexts are computed in the compute
dtype (bfloat16 / float16) and the softmax, windows and returned weights in
float32, as the Transformer's attention does.
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
      reversed_source: the memory holds the source reversed as
        ``layers.recurrent.reverse_source`` reverses it (local-m then counts
        positions in the sentence's order).
    """

    def __init__(self, score: str, scope: str, window: int, units: int,
                 initializers: Initializers, reversed_source: bool = False, **kwargs):
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
        self.reversed_source = reversed_source

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

    def _weight(self, variable: keras.Variable) -> tf.Tensor:
        """A (float32) variable in the compute dtype: these methods run outside
        ``__call__``'s autocasting (``project_memory``) or use raw TensorFlow ops."""
        return tf.cast(variable, self.compute_dtype)

    def project_memory(self, memory: tf.Tensor) -> tf.Tensor:
        """memory [B, S, d_memory] -> its part of the score, [B, S, ...] (once a sentence)."""
        memory = tf.cast(memory, self.compute_dtype)
        if self.score == "dot":
            return memory
        return tf.tensordot(memory, self._weight(self.memory_kernel), axes=1)

    def _scores(self, queries: tf.Tensor, keys: tf.Tensor) -> tf.Tensor:
        """queries [B, T, d_query], keys from project_memory -> float32 [B, T, S]."""
        if self.score in ("dot", "general"):
            return tf.cast(tf.matmul(queries, keys, transpose_b=True), tf.float32)
        projected = tf.tensordot(queries, self._weight(self.query_kernel), axes=1)  # [B, T, u]
        hidden = tf.tanh(projected[:, :, None, :] + keys[:, None, :, :])  # [B, T, S, units]
        return tf.cast(tf.tensordot(hidden, self._weight(self.score_vector), axes=1), tf.float32)

    def _centers(self, queries: tf.Tensor, positions: tf.Tensor,
                 source_length: tf.Tensor) -> tf.Tensor:
        """p_t of a local scope, float32 [B, T]."""
        if self.scope == "local_m":
            t = tf.cast(positions, tf.float32)[None, :]
            return tf.minimum(t, source_length[:, None] - 1.0)
        hidden = tf.tanh(tf.tensordot(queries, self._weight(self.position_kernel), axes=1))
        return source_length[:, None] * tf.sigmoid(tf.cast(
            tf.tensordot(hidden, self._weight(self.position_vector), axes=1), tf.float32))

    def _source_positions(self, padding: tf.Tensor, source_length: tf.Tensor) -> tf.Tensor:
        """float32 [B, S]: the sentence position each memory slot holds. In order,
        slot s holds position s; reversed (``w_0 .. w_{n-1} EOS`` read as
        ``w_{n-1} .. w_0 EOS``), slot s < n holds position n - 1 - s, and EOS and
        padding keep their slots. Local-p predicts its slots and keeps them."""
        slots = tf.cast(tf.range(tf.shape(padding)[1]), tf.float32)[None, :]  # [1, S]
        if self.scope != "local_m" or not self.reversed_source:
            return slots
        words = source_length[:, None] - 1.0  # n: the real tokens before EOS
        return tf.where(slots < words, words - 1.0 - slots, slots)

    def call(self, queries: tf.Tensor, memory: tf.Tensor, keys: tf.Tensor, padding: tf.Tensor,
             positions: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        """Context vectors and attention weights.

        queries [B, T, d_query]; memory [B, S, d_memory]; keys =
        ``project_memory(memory)``; padding float32 [B, S], 1.0 at padded source
        positions; positions int32 [T], the target positions of the queries
        (local-m centres its window there). Returns (context [B, T, d_memory]
        in the compute dtype, float32 weights [B, T, S]).
        """
        padding = tf.cast(padding, tf.float32)  # Keras casts float inputs to the compute dtype
        scores = self._scores(queries, keys)
        allowed = tf.equal(padding, 0.0)[:, None, :]  # [B, 1, S]
        if self.scope != "global":
            source_length = tf.reduce_sum(1.0 - padding, axis=1)  # [B]
            centers = self._centers(queries, positions, source_length)[:, :, None]  # [B, T, 1]
            source_positions = self._source_positions(padding, source_length)
            distance = source_positions[:, None, :] - centers  # [B, T, S]
            allowed = tf.logical_and(allowed, tf.abs(distance) <= float(self.window))
        weights = tf.nn.softmax(tf.where(allowed, scores, MASK_VALUE))
        # A row whose every position is masked (an all-padding source) attends nowhere.
        weights = tf.where(allowed, weights, 0.0)
        if self.scope == "local_p":
            sigma = self.window / 2.0
            weights *= tf.exp(-tf.square(distance) / (2.0 * sigma * sigma))
        memory = tf.cast(memory, self.compute_dtype)
        return tf.matmul(tf.cast(weights, self.compute_dtype), memory), weights

    def get_config(self) -> dict:
        return {**super().get_config(), "score": self.score, "scope": self.scope,
                "window": self.window, "units": self.units,
                "reversed_source": self.reversed_source}
