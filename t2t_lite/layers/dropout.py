"""Dropout whose mask costs half the random bits of Keras'.

A small Transformer's training step draws a dropout mask for every residual
connection, feed-forward hidden layer and attention map: about 48 million
elements a step at batches of 4,096 tokens. TensorFlow's Philox kernel
makes 32-bit words at a fixed cost per word, and Keras spends one word (turned
into a float) per element. Here each word gives two elements 16 random bits
each, and the keep decision is an integer comparison (docs/SPEED.md).

The rate is rounded to a multiple of 1/65,536 (0.1 drops 6,554 / 65,536 =
0.100006 of the elements), and a rate in (0, 1) to one in [1, 65,535] / 65,536
so that it neither vanishes nor drops everything; kept elements are scaled by the inverse of the
rounded keep probability, so the expected output is still the input.
"""
from __future__ import annotations

import keras
import tensorflow as tf

_LEVELS = 1 << 16


def keep_mask(shape: tf.Tensor, rate: float, seed: tf.Tensor) -> tuple[tf.Tensor, float]:
    """A boolean mask of ``shape`` with each element False with probability
    ``rate`` (rounded to a multiple of 1/65,536), and the probability of True.
    ``seed``: a [2] int32 tensor, as ``tf.random.stateless_uniform`` takes."""
    dropped_levels = round(rate * _LEVELS)
    if rate > 0:
        dropped_levels = min(max(dropped_levels, 1), _LEVELS - 1)
    size = tf.reduce_prod(shape)
    words = tf.random.stateless_uniform([(size + 1) // 2], seed, minval=None,
                                        maxval=None, dtype=tf.int32)
    halves = tf.reshape(tf.bitcast(words, tf.int16), [-1])[:size]
    # int16 holds -32,768..32,767: the lowest ``dropped_levels`` of them drop.
    keep = halves >= tf.constant(dropped_levels - _LEVELS // 2, tf.int16)
    return tf.reshape(keep, shape), 1.0 - dropped_levels / _LEVELS


def dropout(x: tf.Tensor, rate: float, seed: tf.Tensor) -> tf.Tensor:
    """Zeroes each element of ``x`` with probability ``rate`` and scales the
    rest so that the expectation is unchanged."""
    keep, keep_probability = keep_mask(tf.shape(x), rate, seed)
    return tf.where(keep, x * tf.cast(1.0 / keep_probability, x.dtype), tf.zeros((), x.dtype))


class Dropout(keras.layers.Dropout):
    """``keras.layers.Dropout`` (the same state, so the same checkpoints) with
    the mask of ``dropout`` above; a ``noise_shape`` keeps Keras' own."""

    def call(self, inputs: tf.Tensor, training: bool = False) -> tf.Tensor:
        if not training or self.rate == 0 or self.noise_shape is not None:
            return super().call(inputs, training=training)
        seed = self.seed_generator.next()
        if seed.dtype != tf.int32:  # Keras keeps the state in int64 on TensorFlow
            seed = tf.cast(tf.math.floormod(seed, tf.int32.max - 1), tf.int32)
        return dropout(inputs, self.rate, seed)
