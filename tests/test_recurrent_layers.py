"""The RNN models' layers: source reversal, maxout, LSTM stacks, attention scopes."""
import numpy as np
import pytest
import tensorflow as tf

from t2t_lite.layers.recurrent import (BidirectionalLSTM, StackedLSTM, make_initializers, maxout,
                                       reverse_source)
from t2t_lite.layers.recurrent_attention import RecurrentAttention

INIT = make_initializers("uniform", 0.5)


def test_reverse_source_reverses_real_tokens_and_keeps_eos_and_padding():
    inputs = tf.constant([[5, 6, 7, 1, 0, 0], [8, 1, 0, 0, 0, 0], [4, 5, 6, 7, 8, 1],
                          [0, 0, 0, 0, 0, 0]])
    np.testing.assert_array_equal(reverse_source(inputs).numpy(),
                                  [[7, 6, 5, 1, 0, 0], [8, 1, 0, 0, 0, 0], [8, 7, 6, 5, 4, 1],
                                   [0, 0, 0, 0, 0, 0]])
    # Reordering values along another axis follows the same permutation, and twice is none.
    values = tf.reshape(tf.range(4 * 2 * 6), [4, 2, 6])
    once = reverse_source(inputs, values, axis=2)
    np.testing.assert_array_equal(once[0, 1].numpy(), [8, 7, 6, 9, 10, 11])
    np.testing.assert_array_equal(reverse_source(inputs, once, axis=2).numpy(), values.numpy())


def test_maxout_takes_the_max_of_consecutive_pieces():
    x = tf.constant([[1.0, 5.0, -2.0, -3.0, 4.0, 4.5]])
    np.testing.assert_array_equal(maxout(x, 2).numpy(), [[5.0, -2.0, 4.5]])


def test_lstm_stack_step_by_step_equals_the_whole_sequence():
    stack = StackedLSTM(6, 2, 0.0, INIT)
    stack.build((None, None, 4))
    x = tf.random.stateless_normal([3, 5, 4], seed=[1, 2])
    outputs, final = stack(x)
    states = stack.zero_states(3)
    for t in range(5):
        output, states = stack.step(x[:, t], states)
        np.testing.assert_allclose(output.numpy(), outputs[:, t].numpy(), atol=1e-6)
    for (h, c), (h_full, c_full) in zip(states, final):
        np.testing.assert_allclose(h.numpy(), h_full.numpy(), atol=1e-6)
        np.testing.assert_allclose(c.numpy(), c_full.numpy(), atol=1e-6)


def test_encoders_ignore_what_follows_the_padding_mask():
    x = tf.random.stateless_normal([2, 6, 4], seed=[3, 4])
    mask = tf.constant([[True] * 3 + [False] * 3, [True] * 6])
    noisy = tf.where(mask[:, :, None], x, 100.0)
    stack = StackedLSTM(5, 2, 0.0, INIT)
    stack.build((None, None, 4))
    for (h, c), (h2, c2) in zip(stack(x, mask)[1], stack(noisy, mask)[1]):
        np.testing.assert_allclose(h.numpy(), h2.numpy(), atol=1e-6)
    bidirectional = BidirectionalLSTM(5, 1, 0.0, INIT)
    bidirectional.build((None, None, 4))
    (out, finals), (out2, finals2) = bidirectional(x, mask), bidirectional(noisy, mask)
    first, first2 = finals[0][1][0], finals2[0][1][0]
    # The forward final state is the one at the last real word.
    np.testing.assert_allclose(finals[0][0][0].numpy(), finals2[0][0][0].numpy(), atol=1e-6)
    np.testing.assert_allclose(finals[0][0][0][0].numpy(), out[0, 2, :5].numpy(), atol=1e-6)
    np.testing.assert_allclose(first.numpy(), first2.numpy(), atol=1e-6)
    np.testing.assert_allclose(out[0, :3].numpy(), out2[0, :3].numpy(), atol=1e-6)
    # The backward state at the first word has read the real words only, last to first.
    backward_only = BidirectionalLSTM(5, 1, 0.0, INIT)
    backward_only.build((None, None, 4))
    backward_only.set_weights(bidirectional.get_weights())
    first3 = backward_only(x[:1, :3], tf.ones([1, 3], tf.bool))[1][0][1][0]
    np.testing.assert_allclose(first[:1].numpy(), first3.numpy(), atol=1e-6)


def attention_case(score, scope, window=1):
    layer = RecurrentAttention(score, scope, window, units=7, initializers=INIT)
    layer.build(6, 6)
    memory = tf.random.stateless_normal([2, 8, 6], seed=[5, 6])
    queries = tf.random.stateless_normal([2, 5, 6], seed=[7, 8])
    padding = tf.constant([[0.0] * 8, [0.0] * 3 + [1.0] * 5])
    context, weights = layer(queries, memory, layer.project_memory(memory), padding,
                             positions=tf.range(5))
    return layer, memory, queries, padding, context.numpy(), weights.numpy()


@pytest.mark.parametrize("score", ["dot", "general", "concat"])
@pytest.mark.parametrize("scope", ["global", "local_m", "local_p"])
def test_padding_gets_no_weight_and_context_is_the_weighted_memory(score, scope):
    _, memory, _, padding, context, weights = attention_case(score, scope, window=2)
    assert weights.shape == (2, 5, 8)
    assert np.all(weights[1, :, 3:] == 0.0)
    np.testing.assert_allclose(context, np.einsum("bts,bsd->btd", weights, memory.numpy()),
                               atol=1e-5)
    if scope != "local_p":  # local-p's Gaussian leaves the sum below 1 by design
        np.testing.assert_allclose(weights.sum(-1), 1.0, atol=1e-5)


def test_local_m_window_is_centred_on_the_target_position_clipped_to_the_source():
    _, _, _, _, _, weights = attention_case("general", "local_m", window=1)
    for t in range(5):
        centre = min(t, 7)
        outside = [s for s in range(8) if abs(s - centre) > 1]
        assert np.all(weights[0, t, outside] == 0.0)
        assert weights[0, t, centre] > 0.0
        # The second source has 3 real positions: the centre stops at the last one.
        centre = min(t, 2)
        assert np.all(weights[1, t, [s for s in range(8) if abs(s - centre) > 1]] == 0.0)


def test_local_p_window_and_gaussian_around_the_predicted_position():
    layer, memory, queries, padding, _, weights = attention_case("general", "local_p", window=2)
    lengths = np.array([8.0, 3.0])
    hidden = np.tanh(queries.numpy() @ layer.position_kernel.numpy())
    centres = lengths[:, None] / (1.0 + np.exp(-(hidden @ layer.position_vector.numpy())))
    for b in range(2):
        for t in range(5):
            distance = np.arange(8) - centres[b, t]
            inside = (np.abs(distance) <= 2) & (padding.numpy()[b] == 0)
            assert np.all(weights[b, t, ~inside] == 0.0)
            # Inside: a softmax over the window times exp(-d^2 / (2 sigma^2)), sigma = D/2.
            gaussian = np.exp(-distance[inside] ** 2 / 2.0)
            aligned = weights[b, t, inside] / gaussian
            np.testing.assert_allclose(aligned.sum(), 1.0, atol=1e-5)


@pytest.mark.parametrize("kwargs, message", [
    ({"score": "bilinear", "scope": "global", "window": 1}, "unknown attention_score"),
    ({"score": "dot", "scope": "local", "window": 1}, "unknown attention_scope"),
    ({"score": "dot", "scope": "local_p", "window": 0}, "attention_window >= 1"),
])
def test_bad_attention_settings_are_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        RecurrentAttention(units=0, initializers=INIT, **kwargs)


def test_dot_score_needs_equal_depths():
    with pytest.raises(ValueError, match="dot score needs"):
        RecurrentAttention("dot", "global", 0, 0, INIT).build(6, 12)
