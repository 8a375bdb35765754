"""The dropout layer: Keras' contract (identity at inference, unbiased, a new mask
each call, state in checkpoints) with a mask of 16 random bits per element."""
import numpy as np
import pytest
import tensorflow as tf

from t2t_lite.layers.dropout import Dropout, dropout, keep_mask


@pytest.mark.parametrize("rate", [0.1, 0.3, 0.5])
def test_keep_mask_drops_the_rate_of_elements_independently(rate):
    keep, keep_probability = keep_mask(tf.constant([1000, 1001]), rate, tf.constant([3, 4]))
    keep = keep.numpy()
    assert keep.shape == (1000, 1001)
    assert abs(keep_probability - (1 - rate)) < 1e-4
    # 1e6 Bernoulli draws: the standard error of the mean is below 5e-4.
    assert abs(keep.mean() - keep_probability) < 3e-3
    # The two halves of each 32-bit word decide neighbouring elements: they
    # must not agree more often than independent draws would.
    flat = keep.reshape(-1)[:1000000].reshape(-1, 2)
    both = (flat[:, 0] & flat[:, 1]).mean()
    assert abs(both - keep_probability ** 2) < 3e-3


def test_dropout_zeroes_or_scales_each_element_and_keeps_the_mean():
    x = tf.ones([513, 77])  # an odd number of elements: the last word is half used
    y = dropout(x, 0.25, tf.constant([1, 2])).numpy()
    kept = y != 0
    np.testing.assert_allclose(y[kept], 1 / 0.75, rtol=1e-6)
    assert abs(y.mean() - 1.0) < 0.02


def test_dropout_gradient_is_the_mask_times_the_scale():
    x = tf.random.normal([64, 300])
    seed = tf.constant([5, 6])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = dropout(x, 0.2, seed)
    gradient = tape.gradient(y, x).numpy()
    keep, keep_probability = keep_mask(tf.shape(x), 0.2, seed)
    np.testing.assert_allclose(gradient, keep.numpy() / keep_probability, rtol=1e-6)


def test_layer_is_the_identity_at_inference_and_draws_new_masks_in_training():
    layer = Dropout(0.5)
    x = tf.ones([32, 64])
    np.testing.assert_array_equal(layer(x, training=False).numpy(), x.numpy())
    first, second = layer(x, training=True).numpy(), layer(x, training=True).numpy()
    assert (first == 0).any() and (first != 0).any()
    assert (first != second).any()


def test_layer_runs_with_unknown_dimensions_and_in_bfloat16():
    layer = Dropout(0.1, dtype="mixed_bfloat16")

    @tf.function(input_signature=[tf.TensorSpec([None, None, 8], tf.bfloat16)])
    def apply(x):
        return layer(x, training=True)

    y = apply(tf.ones([3, 5, 8], tf.bfloat16))
    assert y.dtype == tf.bfloat16 and y.shape == (3, 5, 8)
    assert set(np.unique(y.numpy().astype(np.float32))) <= {0.0, np.float32(tf.bfloat16.as_numpy_dtype(1 / 0.9))}


def test_same_seed_state_gives_the_same_mask():
    """What exact resume relies on: the mask is a function of the layer's seed state."""
    first, second = Dropout(0.3, seed=7), Dropout(0.3, seed=7)
    x = tf.ones([40, 50])
    np.testing.assert_array_equal(first(x, training=True).numpy(), second(x, training=True).numpy())


@pytest.mark.parametrize("rate, dropped", [(1e-7, 1), (0.999995, 65535)])
def test_rates_near_0_and_1_keep_their_nearest_level_inside_the_open_interval(rate, dropped):
    """Rounding to 1/65,536 must not turn a tiny rate into no dropout, nor a rate just
    below 1 (which hparams allow) into dropping everything and dividing by zero."""
    keep, keep_probability = keep_mask(tf.constant([4]), rate, tf.constant([1, 2]))
    assert keep_probability == 1 - dropped / 65536
    y = Dropout(rate)(tf.ones([200, 100]), training=True).numpy()
    assert np.isfinite(y).all()
