"""Tests for t2t_lite.layers.attention: masks, cached decoding, projections."""
import numpy as np
import pytest
import tensorflow as tf

from t2t_lite.layers.attention import (MASK_VALUE, CrossAttention, SelfAttention, causal_bias,
                                       padding_bias)

HIDDEN, HEADS = 8, 2


def make_self_attention(**kwargs) -> SelfAttention:
    layer = SelfAttention(HIDDEN, HEADS, **kwargs)
    layer.build()
    return layer


def random_inputs(*shape: int, seed: int = 0) -> tf.Tensor:
    return tf.constant(np.random.default_rng(seed).normal(size=shape), tf.float32)


def test_biases_mask_padding_and_future():
    bias = padding_bias(tf.constant([[0.0, 0.0, 1.0]])).numpy()
    assert bias.shape == (1, 1, 1, 3)
    np.testing.assert_array_equal(bias[0, 0, 0], [0.0, 0.0, MASK_VALUE])
    causal = causal_bias(tf.constant(3)).numpy()[0, 0]
    np.testing.assert_array_equal(causal == 0.0, np.tril(np.ones((3, 3), bool)))


def test_head_depths_and_fused_projection_shape():
    layer = make_self_attention(key_channels=4, value_channels=0)
    assert (layer.key_depth, layer.value_depth) == (2, 4)
    assert tuple(layer.qkv_kernel.shape) == (HIDDEN, 2 * 4 + HIDDEN)
    with pytest.raises(ValueError, match="not divisible by num_heads"):
        SelfAttention(HIDDEN, 3)


def test_causal_self_attention_ignores_later_positions():
    layer = make_self_attention()
    x = random_inputs(2, 5, HIDDEN)
    changed = tf.concat([x[:, :3], random_inputs(2, 2, HIDDEN, seed=1)], axis=1)
    bias = causal_bias(tf.constant(5))
    before, after = layer(x, bias).numpy(), layer(changed, bias).numpy()
    np.testing.assert_allclose(before[:, :3], after[:, :3], atol=1e-6)
    assert not np.allclose(before[:, 3:], after[:, 3:])


def test_padding_bias_hides_padded_keys():
    layer = make_self_attention()
    x = random_inputs(1, 4, HIDDEN)
    changed = tf.concat([x[:, :2], random_inputs(1, 2, HIDDEN, seed=2)], axis=1)
    bias = padding_bias(tf.constant([[0.0, 0.0, 1.0, 1.0]]))
    np.testing.assert_allclose(layer(x, bias).numpy()[:, :2],
                               layer(changed, bias).numpy()[:, :2], atol=1e-6)


def test_cached_decoding_matches_causal_attention_in_tf_function():
    layer = make_self_attention(key_channels=4)
    x = random_inputs(3, 5, HIDDEN)
    expected = layer(x, causal_bias(tf.constant(5))).numpy()

    @tf.function(input_signature=[tf.TensorSpec([None, None, HIDDEN], tf.float32),
                                  tf.TensorSpec([], tf.int32)])
    def decode(x, max_length):
        length = tf.shape(x)[1]
        cache = layer.empty_cache(tf.shape(x)[0], max_length, tf.float32)
        outputs = tf.TensorArray(tf.float32, size=length)

        def body(step, cache, outputs):
            out, cache = layer.decode_step(x[:, step:step + 1], step, cache)
            return step + 1, cache, outputs.write(step, out[:, 0])

        _, cache, outputs = tf.while_loop(lambda step, *_: step < length, body,
                                          [tf.constant(0), cache, outputs])
        return tf.transpose(outputs.stack(), [1, 0, 2]), cache

    got, cache = decode(x, tf.constant(7))
    np.testing.assert_allclose(got.numpy(), expected, atol=1e-5)
    assert cache["keys"].shape == (3, HEADS, 7, 2)
    # Positions never decoded stay zero.
    np.testing.assert_array_equal(cache["values"].numpy()[:, :, 5:], 0.0)


def test_cross_attention_call_equals_projected_memory_path():
    layer = CrossAttention(HIDDEN, HEADS)
    layer.build()
    x, memory = random_inputs(2, 3, HIDDEN), random_inputs(2, 4, HIDDEN, seed=3)
    bias = padding_bias(tf.constant([[0.0, 0.0, 0.0, 1.0], [0.0, 0.0, 1.0, 1.0]]))
    projected = layer.project_memory(memory)
    assert projected["keys"].shape == (2, HEADS, 4, HIDDEN // HEADS)
    np.testing.assert_allclose(layer(x, memory, bias).numpy(),
                               layer.attend_to_memory(x, projected, bias).numpy(), atol=1e-6)


def test_attention_dropout_only_in_training():
    layer = make_self_attention(dropout=0.5)
    x = random_inputs(2, 6, HIDDEN)
    np.testing.assert_array_equal(layer(x).numpy(), layer(x, training=False).numpy())
    assert not np.allclose(layer(x, training=True).numpy(), layer(x).numpy())
