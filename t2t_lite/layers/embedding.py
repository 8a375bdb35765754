"""Token embeddings with a tied pre-softmax projection, and position signals.

Paper section 3.4: the embedding weights are multiplied by sqrt(d_model) on
input, and the same matrix (transposed) is the pre-softmax linear
transformation. Section 3.5: sinusoidal position encodings, or learned ones
(Table 3 row E). Position layers map integer positions to [..., depth] vectors,
so the full forward pass (``tf.range(length)``) and one decoding step (a scalar
``step``) use the same code.
"""
from __future__ import annotations

import math

import keras
import tensorflow as tf

from t2t_lite.layers.projection import leading_dims, project


class TokenEmbedding(keras.layers.Layer):
    """A [vocab_size, hidden_size] matrix used as input embedding and softmax.

    ``call(ids)`` looks rows up and multiplies them by sqrt(hidden_size);
    ``logits(x)`` multiplies by the transposed matrix. Sharing one instance
    between encoder, decoder and softmax is the paper's weight tying.
    """

    def __init__(self, vocab_size: int, hidden_size: int, **kwargs):
        super().__init__(**kwargs)
        self.vocab_size = vocab_size
        self.hidden_size = hidden_size

    def build(self, input_shape=None) -> None:
        # stddev d^-0.5 (as in T2T): scaled by sqrt(d) on input, rows have unit variance.
        self.embeddings = self.add_weight(
            name="embeddings", shape=(self.vocab_size, self.hidden_size),
            initializer=keras.initializers.RandomNormal(stddev=self.hidden_size ** -0.5))

    def call(self, ids: tf.Tensor) -> tf.Tensor:
        """int ids [...] -> embeddings [..., hidden_size], scaled by sqrt(hidden_size)."""
        vectors = tf.gather(self.embeddings, ids)
        return vectors * tf.cast(math.sqrt(self.hidden_size), vectors.dtype)

    def logits(self, x: tf.Tensor) -> tf.Tensor:
        """[..., hidden_size] -> [..., vocab_size] with the transposed matrix."""
        if x.shape.rank == 3 and x.shape[1] == 1:  # a decode step
            return step_logits(x[:, 0], tf.cast(self.embeddings, x.dtype))[:, None]
        return project(x, self.embeddings, transpose_kernel=True)

    def get_config(self) -> dict:
        return {**super().get_config(), "vocab_size": self.vocab_size,
                "hidden_size": self.hidden_size}


@tf.function(jit_compile=True)
def step_logits(x: tf.Tensor, embeddings: tf.Tensor) -> tf.Tensor:
    """A decode step's [rows, d] x [vocab, d]^T, compiled by XLA, which beats the
    default CPU kernel at these shapes (1.9-2.3x at 128 rows: benchmarks/int8_matmul.py;
    beam 4 decoding 1.2-1.6x: docs/SPEED.md). Training keeps the default kernel."""
    return tf.matmul(x, embeddings, transpose_b=True)


def sinusoid_position_encoding(positions: tf.Tensor, depth: int) -> tf.Tensor:
    """PE(pos, 2i) = sin(pos / 10000^(2i/depth)), PE(pos, 2i+1) = cos(same).

    ``positions``: int or float tensor [...]; returns float32 [..., depth].
    """
    exponents = tf.range(0, depth, 2, dtype=tf.float32) / float(depth)
    inverse_frequencies = tf.pow(10000.0, -exponents)
    angles = tf.cast(positions, tf.float32)[..., None] * inverse_frequencies
    # Interleave so that even channels hold sines and odd channels cosines.
    pairs = tf.stack([tf.sin(angles), tf.cos(angles)], axis=-1)
    return tf.reshape(pairs, leading_dims(angles) + [depth])


class SinusoidPositionEncoding(keras.layers.Layer):
    """The paper's fixed sinusoids (no weights): positions [...] -> [..., depth]."""

    def __init__(self, depth: int, **kwargs):
        super().__init__(**kwargs)
        if depth % 2:
            raise ValueError(f"sinusoid position encoding needs an even depth, got {depth}; "
                             "use an even hidden_size")
        self.depth = depth

    def call(self, positions: tf.Tensor) -> tf.Tensor:
        return tf.cast(sinusoid_position_encoding(positions, self.depth), self.compute_dtype)

    def get_config(self) -> dict:
        return {**super().get_config(), "depth": self.depth}


class LearnedPositionEmbedding(keras.layers.Layer):
    """One learned vector per position 0..max_length-1 (Table 3 row E)."""

    def __init__(self, max_length: int, depth: int, **kwargs):
        super().__init__(**kwargs)
        self.max_length = max_length
        self.depth = depth

    def build(self, input_shape=None) -> None:
        # Per-element variance 1/2, the same as the sinusoids it replaces.
        self.embeddings = self.add_weight(
            name="embeddings", shape=(self.max_length, self.depth),
            initializer=keras.initializers.RandomNormal(stddev=math.sqrt(0.5)))

    def call(self, positions: tf.Tensor) -> tf.Tensor:
        check = tf.debugging.assert_less(
            positions, tf.constant(self.max_length, positions.dtype),
            message=(f"a position is beyond the {self.max_length} learned positions; "
                     "raise hparam max_length or use position_embedding=timing"))
        with tf.control_dependencies([check]):
            return tf.gather(self.embeddings, positions)

    def get_config(self) -> dict:
        return {**super().get_config(), "max_length": self.max_length, "depth": self.depth}
