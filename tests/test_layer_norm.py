"""The layer norm's compiled training path against its plain inference ops."""
import numpy as np
import pytest
import tensorflow as tf

from t2t_lite.layers.layer_norm import LAYER_NORM_EPSILON, LastAxisLayerNorm, layer_norm


@pytest.mark.parametrize("shape", [[4, 7, 16], [3, 16]])
def test_training_path_matches_the_plain_ops_and_their_autodiff(shape):
    norm = layer_norm("norm")
    norm.build(shape)
    norm.gamma.assign(tf.random.normal([16]))
    norm.beta.assign(tf.random.normal([16]))
    x = tf.random.normal(shape, stddev=3.0) + 1.5
    upstream = tf.random.normal(shape)
    results = []
    for training in (False, True):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = norm(x, training=training)
            loss = tf.reduce_sum(y * upstream)
        results.append([y] + tape.gradient(loss, [x, norm.gamma, norm.beta]))
    for plain, compiled in zip(*results):
        np.testing.assert_allclose(compiled.numpy(), plain.numpy(), rtol=1e-4, atol=1e-5)


def test_training_path_keeps_the_compute_dtype_under_mixed_precision():
    norm = LastAxisLayerNorm(epsilon=LAYER_NORM_EPSILON, dtype="mixed_bfloat16")
    norm.build([2, 3, 8])
    x = tf.random.normal([2, 3, 8], dtype=tf.bfloat16)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = norm(x, training=True)
        loss = tf.reduce_sum(tf.cast(y, tf.float32) * tf.random.normal([2, 3, 8]))
    assert y.dtype == tf.bfloat16
    assert tape.gradient(loss, x).dtype == tf.bfloat16
