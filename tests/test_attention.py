"""Tests for t2t_lite.layers.attention (and relative_positions): masks, cached
decoding, projections, relative position representations.

Values are checked against the paper's formula (section 3.2.1-3.2.2) and Shaw et
al.'s relative one (section 3) written out in NumPy below, and against small
examples worked out by hand."""
import numpy as np
import pytest
import tensorflow as tf

from t2t_lite.contracts.decode_state import decode_loop_shapes
from t2t_lite.layers.attention import (MASK_VALUE, CrossAttention, SelfAttention, causal_bias,
                                       padding_bias)
from t2t_lite.layers.relative_positions import relative_position_ids

HIDDEN, HEADS = 8, 2


def make_self_attention(**kwargs) -> SelfAttention:
    layer = SelfAttention(HIDDEN, HEADS, **kwargs)
    layer.build()
    return layer


def random_inputs(*shape: int, seed: int = 0) -> tf.Tensor:
    return tf.constant(np.random.default_rng(seed).normal(size=shape), tf.float32)


def reference_attention(queries_from, memory, wq, wk, wv, wo, heads, allowed, relative=None):
    """Multi-head attention written from the paper's formulas in NumPy, head by head:
    head_i = softmax(Q_i K_i^T / sqrt(d_k)) V_i over the allowed keys only, with Q_i, K_i, V_i
    the i-th blocks of channels of x Wq, memory Wk, memory Wv; output Concat(heads) Wo.
    ``allowed`` is bool [B, Lq, Lk]; every query must have at least one allowed key.

    ``relative`` (table_k [2k+1, d_k], table_v [2k+1, d_v], k): Shaw et al.'s eq. (3)-(5),
    pair by pair: e_qj = q_q (k_j + a^K_qj)^T / sqrt(d_k), z_q = sum_j w_qj (v_j + a^V_qj),
    a_qj = table[clip(j - q, -k, k) + k], the same tables for every head."""
    q, k, v = queries_from @ wq, memory @ wk, memory @ wv
    d_k, d_v = q.shape[-1] // heads, v.shape[-1] // heads
    outputs = []
    for i in range(heads):
        q_i, k_i = q[..., i * d_k:(i + 1) * d_k], k[..., i * d_k:(i + 1) * d_k]
        v_i = v[..., i * d_v:(i + 1) * d_v]
        if relative is None:
            scores = q_i @ np.swapaxes(k_i, -1, -2) / np.sqrt(d_k)
        else:
            table_k, table_v, max_distance = relative
            rows = [[min(max(j - row, -max_distance), max_distance) + max_distance
                     for j in range(k.shape[1])] for row in range(q.shape[1])]
            a_k, a_v = table_k[rows], table_v[rows]  # [Lq, Lk, d]
            scores = np.einsum("bqd,bqjd->bqj", q_i, k_i[:, None] + a_k[None]) / np.sqrt(d_k)
        scores = np.where(allowed, scores, -np.inf)
        weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
        weights /= weights.sum(axis=-1, keepdims=True)
        if relative is None:
            outputs.append(weights @ v_i)
        else:
            outputs.append(np.einsum("bqj,bqjd->bqd", weights, v_i[:, None] + a_v[None]))
    return np.concatenate(outputs, axis=-1) @ wo


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


def test_one_head_by_hand():
    # d_model = d_k = 2, one head, identity projections: Q = K = V = x = [[1, 0], [0, 1]].
    # Scores Q K^T / sqrt(2) = [[0.7071, 0], [0, 0.7071]]; softmax of (0.7071, 0) is
    # (sigmoid(0.7071), 1 - sigmoid(0.7071)) = (0.66976, 0.33024), and the output rows are
    # those weights times V = I. Without the 1/sqrt(d_k) scaling they would be sigmoid(1) =
    # 0.73106 and 0.26894.
    layer = SelfAttention(2, 1)
    layer.build()
    layer.qkv_kernel.assign(np.hstack([np.eye(2)] * 3))  # Wq | Wk | Wv
    layer.output_kernel.assign(np.eye(2))
    x = tf.constant([[[1.0, 0.0], [0.0, 1.0]]])
    high, low = 0.6697615, 0.3302385
    np.testing.assert_allclose(layer(x).numpy()[0], [[high, low], [low, high]], atol=1e-6)
    # Causal: position 0 sees only itself, so it copies V_0 = [1, 0]; position 1 as before.
    np.testing.assert_allclose(layer(x, causal_bias(tf.constant(2))).numpy()[0],
                               [[1.0, 0.0], [low, high]], atol=1e-6)
    # Key 1 padded: both positions can only attend to key 0.
    np.testing.assert_allclose(layer(x, padding_bias(tf.constant([[0.0, 1.0]]))).numpy()[0],
                               [[1.0, 0.0], [1.0, 0.0]], atol=1e-6)


def test_multi_head_self_attention_matches_the_formula():
    # Two heads, d_k = 2 and d_v = 4 (key_channels differ from value_channels), causal mask
    # plus padding of the last two keys of the second sentence.
    layer = make_self_attention(key_channels=4)
    x = random_inputs(2, 5, HIDDEN, seed=4)
    padding = np.array([[0, 0, 0, 0, 0], [0, 0, 0, 1, 1]], np.float32)
    bias = causal_bias(tf.constant(5)) + padding_bias(tf.constant(padding))
    allowed = np.tril(np.ones((5, 5), bool))[None] & (padding[:, None, :] == 0)
    wq, wk, wv = np.split(layer.qkv_kernel.numpy(), [4, 8], axis=1)
    expected = reference_attention(x.numpy(), x.numpy(), wq, wk, wv,
                                   layer.output_kernel.numpy(), HEADS, allowed)
    np.testing.assert_allclose(layer(x, bias).numpy(), expected, atol=1e-5)


def test_relative_position_ids_clip_the_distance_key_minus_query():
    # Keys farther than k = 2 share the end rows 0 (left) and 4 (right); row 2 is the query.
    ids = relative_position_ids(tf.range(4)[:, None], tf.range(6)[None, :], 2).numpy()
    np.testing.assert_array_equal(ids, [[2, 3, 4, 4, 4, 4], [1, 2, 3, 4, 4, 4],
                                        [0, 1, 2, 3, 4, 4], [0, 0, 1, 2, 3, 4]])


@pytest.mark.parametrize("causal", [False, True])
def test_relative_self_attention_matches_shaw_et_al(causal):
    # Length 6 and k = 2: distances clipped on both sides; d_k = 2, d_v = 4; the tables
    # shared by the two heads; padding of the second sentence's last two keys.
    layer = make_self_attention(key_channels=4, max_relative_position=2)
    assert tuple(layer.relative_position_keys.shape) == (5, 2)
    assert tuple(layer.relative_position_values.shape) == (5, HIDDEN // HEADS)
    x = random_inputs(2, 6, HIDDEN, seed=5)
    padding = np.array([[0] * 6, [0, 0, 0, 0, 1, 1]], np.float32)
    bias = padding_bias(tf.constant(padding))
    allowed = np.broadcast_to(padding[:, None, :] == 0, (2, 6, 6))
    if causal:
        bias += causal_bias(tf.constant(6))
        allowed = allowed & np.tril(np.ones((6, 6), bool))[None]
    wq, wk, wv = np.split(layer.qkv_kernel.numpy(), [4, 8], axis=1)
    tables = (layer.relative_position_keys.numpy(), layer.relative_position_values.numpy(), 2)
    expected = reference_attention(x.numpy(), x.numpy(), wq, wk, wv,
                                   layer.output_kernel.numpy(), HEADS, allowed, tables)
    np.testing.assert_allclose(layer(x, bias).numpy(), expected, atol=1e-5)
    plain = reference_attention(x.numpy(), x.numpy(), wq, wk, wv,
                                layer.output_kernel.numpy(), HEADS, allowed)
    assert not np.allclose(expected, plain, atol=1e-3)  # the tables matter


def test_relative_attention_sees_distances_not_places():
    """Without absolute positions, the same words give the same outputs wherever they
    stand, as long as every distance within them is the same (the keys padded away)."""
    layer = make_self_attention(max_relative_position=3)
    words = random_inputs(1, 3, HIDDEN, seed=6)
    other = random_inputs(1, 2, HIDDEN, seed=7)
    shifted = tf.concat([other, words], axis=1)
    alone = layer(words).numpy()
    hidden_before = padding_bias(tf.constant([[1.0, 1.0, 0.0, 0.0, 0.0]]))
    np.testing.assert_allclose(layer(shifted, hidden_before).numpy()[:, 2:], alone, atol=1e-5)


@pytest.mark.parametrize("kind, config", [
    (SelfAttention, {"hidden_size": 8, "num_heads": 2, "key_channels": 4,
                     "max_relative_position": 3, "dropout": 0.1}),
    (CrossAttention, {"hidden_size": 8, "num_heads": 2, "value_channels": 4})])
def test_get_config_round_trip(kind, config):
    layer = kind(**config, name="attention")
    twin = kind.from_config(layer.get_config())
    assert twin.get_config() == layer.get_config()
    assert all(twin.get_config()[key] == value for key, value in config.items())
    with pytest.raises(ValueError, match="max_relative_position=-1 is negative"):
        SelfAttention(8, 2, max_relative_position=-1)


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


@pytest.mark.parametrize("whole_buffer, max_relative_position", [
    (False, 0), (True, 0), (False, 2), (True, 2)])
def test_cached_decoding_matches_causal_attention_in_tf_function(whole_buffer,
                                                                 max_relative_position):
    """A buffer two steps longer than the decode, written a step at a time: attending
    over the entries written (no XLA), or over the whole buffer with a bias that
    hides the rest (XLA's fixed shapes), gives causal attention (relative positions
    too: clipped at 2 over 5 steps, each step sees clipped and unclipped ones)."""
    layer = make_self_attention(key_channels=4, max_relative_position=max_relative_position)
    x = random_inputs(3, 5, HIDDEN)
    expected = layer(x, causal_bias(tf.constant(5))).numpy()

    @tf.function(input_signature=[tf.TensorSpec([None, None, HIDDEN], tf.float32)])
    def decode(x):
        length = tf.shape(x)[1]
        cache = layer.cache_buffers(tf.shape(x)[0], tf.float32, length + 2)
        outputs = tf.TensorArray(tf.float32, size=length)

        def body(step, cache, outputs):
            if whole_buffer:
                unwritten = tf.range(length + 2) > step
                bias = tf.where(unwritten, MASK_VALUE, 0.0)[None, None, None, :]
                out, cache = layer.decode_step(x[:, step][:, None], cache, step, bias)
            else:
                out, cache = layer.decode_step(x[:, step][:, None], cache, step,
                                               entries=step + 1)
            return step + 1, cache, outputs.write(step, out[:, 0])

        loop_vars = [tf.constant(0), cache, outputs]
        _, cache, outputs = tf.while_loop(lambda step, *_: step < length, body, loop_vars,
                                          shape_invariants=decode_loop_shapes(loop_vars))
        return tf.transpose(outputs.stack(), [1, 0, 2]), cache

    got, cache = decode(x)
    np.testing.assert_allclose(got.numpy(), expected, atol=1e-5)
    assert cache["keys"].shape == (3, HEADS, 7, 2)
    # Positions never decoded stay zero.
    np.testing.assert_array_equal(cache["values"].numpy()[:, :, 5:], 0.0)


def test_cross_attention_matches_the_formula_through_both_paths():
    # Queries from x, keys and values from the memory: the paper's encoder-decoder attention.
    # call() and the decoder's path (memory projected once, then attend_to_memory) must both
    # give the NumPy result; each padded memory position must get no weight.
    layer = CrossAttention(HIDDEN, HEADS, key_channels=4)
    layer.build()
    x, memory = random_inputs(2, 3, HIDDEN), random_inputs(2, 4, HIDDEN, seed=3)
    padding = np.array([[0, 0, 0, 1], [0, 0, 1, 1]], np.float32)
    bias = padding_bias(tf.constant(padding))
    keys_values = layer.key_value_kernel.numpy()
    allowed = np.broadcast_to(padding[:, None, :] == 0, (2, 3, 4))
    expected = reference_attention(x.numpy(), memory.numpy(), layer.query_kernel.numpy(),
                                   keys_values[:, :4], keys_values[:, 4:],
                                   layer.output_kernel.numpy(), HEADS, allowed)
    np.testing.assert_allclose(layer(x, memory, bias).numpy(), expected, atol=1e-5)
    projected = layer.project_memory(memory)
    assert projected["keys"].shape == (2, HEADS, 4, 2)
    assert projected["values"].shape == (2, HEADS, 4, HIDDEN // HEADS)
    np.testing.assert_allclose(layer.attend_to_memory(x, projected, bias).numpy(), expected,
                               atol=1e-5)


def test_attention_dropout_only_in_training():
    layer = make_self_attention(dropout=0.5)
    x = random_inputs(2, 6, HIDDEN)
    np.testing.assert_array_equal(layer(x).numpy(), layer(x, training=False).numpy())
    assert not np.allclose(layer(x, training=True).numpy(), layer(x).numpy())
