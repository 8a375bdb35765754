"""The decode-step helpers give the same numbers as the general ops they replace,
and a decode step's graph has no shape arithmetic left in it."""
import keras
import numpy as np
import tensorflow as tf

from t2t_lite.layers.layer_norm import layer_norm
from t2t_lite.layers.projection import leading_dims, project
from t2t_lite.layers.transformer_blocks import FeedForward


def test_leading_dims_static_where_only_one_dimension_is_unknown():
    assert leading_dims(tf.zeros([3, 1, 8])) == [3, 1]
    assert leading_dims(tf.zeros([3, 2, 4, 5]), trailing=2) == [3, 2]

    @tf.function(input_signature=[tf.TensorSpec([None, 1, 8])])
    def one_unknown(x):
        dims = leading_dims(x)
        assert dims == [-1, 1], dims   # a plain list: no op builds it
        return tf.reshape(x, dims + [2, 4])

    @tf.function(input_signature=[tf.TensorSpec([None, None, 8])])
    def two_unknown(x):
        return tf.reshape(x, leading_dims(x) + [2, 4])

    x = tf.random.normal([3, 1, 8])
    np.testing.assert_array_equal(one_unknown(x), tf.reshape(x, [3, 1, 2, 4]))
    y = tf.random.normal([2, 5, 8])
    np.testing.assert_array_equal(two_unknown(y), tf.reshape(y, [2, 5, 2, 4]))
    ops = {op.type for op in one_unknown.get_concrete_function().graph.get_operations()}
    assert not ops & {"Shape", "StridedSlice", "Pack", "ConcatV2"}, ops


def test_project_is_tensordot_plus_bias():
    x = tf.random.normal([2, 3, 4])
    kernel, bias = tf.random.normal([4, 5]), tf.random.normal([5])
    np.testing.assert_allclose(project(x, kernel, bias), tf.tensordot(x, kernel, 1) + bias,
                               rtol=1e-5, atol=1e-5)
    assert project(tf.cast(x, tf.bfloat16), kernel).dtype == tf.bfloat16
    np.testing.assert_allclose(project(x, tf.transpose(kernel), transpose_kernel=True),
                               tf.tensordot(x, kernel, 1), rtol=1e-5, atol=1e-5)


def test_tied_projection_gradients_are_autodiffs():
    """The projection by a transposed (tied embedding) kernel writes its own
    gradient, the kernel's as (x^T dy)^T: the same as autodiff of the product."""
    x, kernel = tf.random.normal([2, 3, 4]), tf.random.normal([5, 4])
    upstream = tf.random.normal([2, 3, 5])
    for dtype, tolerance in ((tf.float32, 1e-5), (tf.bfloat16, 2e-2)):
        x_cast = tf.cast(x, dtype)
        with tf.GradientTape(persistent=True) as tape:
            tape.watch([x_cast, kernel])
            ours = project(x_cast, kernel, transpose_kernel=True)
            reference = tf.tensordot(x_cast, tf.cast(tf.transpose(kernel), dtype), 1)
            ours_loss = tf.reduce_sum(tf.cast(ours, tf.float32) * upstream)
            reference_loss = tf.reduce_sum(tf.cast(reference, tf.float32) * upstream)
        for theirs_grad, our_grad in zip(tape.gradient(reference_loss, [x_cast, kernel]),
                                         tape.gradient(ours_loss, [x_cast, kernel])):
            assert our_grad.dtype == theirs_grad.dtype
            np.testing.assert_allclose(tf.cast(our_grad, tf.float32),
                                       tf.cast(theirs_grad, tf.float32),
                                       rtol=tolerance, atol=tolerance)


def test_layer_norm_matches_keras_and_keeps_its_weight_names():
    ours, theirs = layer_norm("norm"), keras.layers.LayerNormalization(epsilon=1e-6)
    x = tf.random.normal([2, 3, 16]) * 3.0 + 1.0
    ours.build(x.shape), theirs.build(x.shape)
    weights = [np.random.rand(16).astype("float32") for _ in range(2)]
    ours.set_weights(weights), theirs.set_weights(weights)
    np.testing.assert_allclose(ours(x), theirs(x), rtol=1e-5, atol=1e-5)
    assert [w.path for w in ours.weights] == ["norm/gamma", "norm/beta"]


def test_feed_forward_applies_its_dense_layers_weights():
    layer = FeedForward(hidden_size=4, filter_size=6)
    x = tf.random.normal([2, 3, 4])
    layer.build(x.shape)
    expected = layer.output_dense(tf.nn.relu(layer.filter_dense(x)))
    np.testing.assert_allclose(layer(x), expected, rtol=1e-5, atol=1e-5)
