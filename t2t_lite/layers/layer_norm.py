"""Layer normalisation over the last axis, with a compiled training path.

Inference (a decode step runs 2 * decoder layers + 1 of these per token) takes
a few plain ops. Training takes both passes as one XLA kernel each, with the
gradient written out: autodiff of the plain ops walks the [tokens, d_model]
array once per op, about a dozen times a normalisation (docs/SPEED.md).
"""
from __future__ import annotations

from typing import Any

import keras
import tensorflow as tf

from t2t_lite.precision import norm_policy

LAYER_NORM_EPSILON = 1e-6


class LastAxisLayerNorm(keras.layers.LayerNormalization):
    """Keras' LayerNormalization over the last axis (the same weights, so the same
    checkpoints) in fewer ops than Keras' general version builds. float32
    inside, as Keras'."""

    def call(self, inputs: tf.Tensor, training: bool = False) -> tf.Tensor:
        x = tf.cast(inputs, tf.float32)
        if training:
            # Read values, not the variables: the custom gradient returns theirs.
            gamma, beta = tf.convert_to_tensor(self.gamma), tf.convert_to_tensor(self.beta)
            outputs = _normalized(x, gamma, beta, self.epsilon)
        else:
            outputs = _normalize(x, self.gamma, self.beta, self.epsilon)[0]
        return tf.cast(outputs, self.compute_dtype)


def layer_norm(name: str) -> LastAxisLayerNorm:
    """LayerNorm over the last axis with the epsilon used throughout the model (its
    weights float32 in an inference model too: ``precision.norm_policy``)."""
    return LastAxisLayerNorm(epsilon=LAYER_NORM_EPSILON, name=name, dtype=norm_policy())


def _normalized(x: tf.Tensor, gamma: tf.Tensor, beta: tf.Tensor, epsilon: float) -> tf.Tensor:
    @tf.custom_gradient
    def normalized(x: tf.Tensor, gamma: tf.Tensor, beta: tf.Tensor) -> tuple[tf.Tensor, Any]:
        outputs, x_hat, inverse_deviation = _forward(x, gamma, beta, epsilon)

        def gradient(upstream: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
            return _backward(upstream, x_hat, inverse_deviation, gamma)
        return outputs, gradient
    return normalized(x, gamma, beta)


def _normalize(x: tf.Tensor, gamma: tf.Tensor, beta: tf.Tensor,
               epsilon: float) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
    """(outputs, x_hat, 1 / sigma): the formula both paths run."""
    centered = x - tf.reduce_mean(x, axis=-1, keepdims=True)
    inverse_deviation = tf.math.rsqrt(
        tf.reduce_mean(tf.square(centered), axis=-1, keepdims=True) + epsilon)
    x_hat = centered * inverse_deviation
    return x_hat * gamma + beta, x_hat, inverse_deviation


_forward = tf.function(_normalize, jit_compile=True, autograph=False, reduce_retracing=True)


@tf.function(jit_compile=True, autograph=False, reduce_retracing=True)
def _backward(upstream: tf.Tensor, x_hat: tf.Tensor, inverse_deviation: tf.Tensor,
              gamma: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
    """With g = upstream * gamma: dx = (g - mean(g) - x_hat mean(g x_hat)) / sigma,
    the mean over the normalised axis; gamma and beta sum over every other."""
    scaled = upstream * gamma
    d_x = inverse_deviation * (scaled - tf.reduce_mean(scaled, axis=-1, keepdims=True)
                               - x_hat * tf.reduce_mean(scaled * x_hat, axis=-1, keepdims=True))
    rows = [-1, tf.shape(upstream)[-1]]
    return (d_x, tf.reduce_sum(tf.reshape(upstream * x_hat, rows), axis=0),
            tf.reduce_sum(tf.reshape(upstream, rows), axis=0))
