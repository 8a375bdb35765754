"""Multi-head scaled dot-product attention (paper section 3.2), 3-D tensors.

Activations are [batch, length, depth]; inside, heads are [batch, heads,
length, depth_per_head] so that both attention products are plain batched
matmuls. Masks are additive biases broadcastable to [batch, heads, query_length,
key_length]: 0 where a key may be attended to, a large negative number where not.

``SelfAttention`` projects queries, keys and values with one fused kernel, can
add Shaw et al.'s relative position representations (``max_relative_position``;
``relative_positions.py``), and can decode a step at a time (of every beam
hypothesis of an item at once) into a key/value cache buffer written in place
and never reordered;
``CrossAttention`` attends from the decoder to the encoder output, whose keys
and values can be projected once per source sentence (``project_memory``).
"""
from __future__ import annotations

import keras
import tensorflow as tf

from t2t_lite.layers.dropout import Dropout
from t2t_lite.layers.projection import leading_dims, project
from t2t_lite.layers.relative_positions import RelativePositions, relative_position_ids

# exp(-1e9 - max) underflows to exactly 0 in float32, so masked keys get no weight.
MASK_VALUE = -1e9


def padding_bias(padding: tf.Tensor) -> tf.Tensor:
    """[B, S] padding (True or 1.0 at padded keys) -> float32 bias [B, 1, 1, S]."""
    return tf.cast(padding, tf.float32)[:, None, None, :] * MASK_VALUE


def causal_bias(length: tf.Tensor) -> tf.Tensor:
    """Bias [1, 1, L, L] letting query position i see key positions <= i only."""
    visible = tf.linalg.band_part(tf.ones([length, length], tf.float32), -1, 0)
    return ((1.0 - visible) * MASK_VALUE)[None, None]


def _step_rows(buffer: tf.Tensor, position: tf.Tensor, queries: int) -> tf.Tensor:
    """int32 [B, h, Q, 3]: the index (b, head, entry) of every row a step writes into
    a [B, h, entries, d] cache buffer: entries position * Q + q (the same for its
    keys and its values)."""
    batch, heads = tf.shape(buffer)[0], tf.shape(buffer)[1]
    entries = tf.cast(position, tf.int32) * queries + tf.range(queries)
    b, h, e = tf.meshgrid(tf.range(batch), tf.range(heads), entries, indexing="ij")
    return tf.stack([b, h, e], axis=-1)


def write_entries(buffer: tf.Tensor, update: tf.Tensor, start: tf.Tensor) -> tf.Tensor:
    """``buffer`` with ``update`` written along axis 2 at ``start`` (``update.shape[2]``
    entries; every other axis whole), in place: TensorFlow reuses a buffer nothing
    else holds (a decode loop's cache). A concatenation would copy the whole cache
    every step and hold two copies of it at the peak. Not under XLA, which wants
    this op's start known when it compiles."""
    rank = buffer.shape.rank
    start = tf.cast(start, tf.int32)
    begin = tf.stack([0, 0, start] + [0] * (rank - 3))
    end = tf.stack([0, 0, start + update.shape[2]] + [0] * (rank - 3))
    whole_axes = sum(1 << axis for axis in range(rank) if axis != 2)
    return tf.raw_ops.TensorStridedSliceUpdate(
        input=buffer, begin=begin, end=end, strides=[1] * rank, value=update,
        begin_mask=whole_axes, end_mask=whole_axes)


def ancestry_bias(ancestry: tf.Tensor, queries: int, entries: tf.Tensor | int) -> tf.Tensor:
    """The bias of a self-attention decode step of Q hypotheses an item
    (``SelfAttention.decode_step``).

    ``ancestry`` int32 [B, Q, steps]: for hypothesis q of item b and each step s,
    which of the Q hypotheses at step s it descends from (-1: a step not decoded
    yet). -> float32 [B, 1, Q, steps * Q]: 0 on the cache entries s * Q +
    ancestry[b, q, s], ``MASK_VALUE`` on the others. ``entries`` = steps * Q, given
    so that no shape op runs in a decode step.
    """
    visible = tf.one_hot(ancestry, queries, on_value=0.0, off_value=MASK_VALUE)
    return tf.reshape(visible, [-1, 1, queries, entries])


def _swap_length_and_heads(x: tf.Tensor) -> tf.Tensor:
    """[B, L, h, d] <-> [B, h, L, d]. Where L and h are known when traced (a decode
    step's hypotheses of an item; fixed-shape batches), a one-operand einsum: oneDNN's
    transpose costs 30+ us on a decode step's small tensors, the einsum 2-13, and
    beam 4 decodes 6-7% faster in bfloat16 (docs/SPEED.md)."""
    if x.shape[1] is not None and x.shape[2] is not None:
        return tf.einsum("bxyd->byxd", x)
    return tf.transpose(x, [0, 2, 1, 3])


class MultiHeadAttention(keras.layers.Layer):
    """What self- and cross-attention share: head split, attention, output projection.

    Args:
      hidden_size: d_model, the depth of queries, memory and output.
      num_heads: h.
      key_channels: h * d_k (0 = hidden_size); value_channels likewise for d_v.
      dropout: rate on the attention weights (hparam attention_dropout).
    """

    def __init__(self, hidden_size: int, num_heads: int, key_channels: int = 0,
                 value_channels: int = 0, dropout: float = 0.0, **kwargs):
        super().__init__(**kwargs)
        self.hidden_size = hidden_size
        self.num_heads = num_heads
        self.key_channels = key_channels or hidden_size
        self.value_channels = value_channels or hidden_size
        for what, channels in (("attention_key_channels", self.key_channels),
                               ("attention_value_channels", self.value_channels)):
            if channels % num_heads:
                raise ValueError(f"{what}={channels} is not divisible by num_heads={num_heads}; "
                                 "pick channels that are a multiple of the number of heads")
        self.key_depth = self.key_channels // num_heads
        self.value_depth = self.value_channels // num_heads
        self.dropout = dropout
        self.weights_dropout = Dropout(dropout)

    def build(self, input_shape=None) -> None:
        self.output_kernel = self.add_weight(
            name="output_kernel", shape=(self.value_channels, self.hidden_size))

    def _split_heads(self, x: tf.Tensor, depth: int) -> tf.Tensor:
        """[B, L, h*depth] -> [B, h, L, depth]."""
        if x.shape[1] == 1:  # a decode step: moving a length-1 axis is only a reshape
            return tf.reshape(x, leading_dims(x, trailing=2) + [self.num_heads, 1, depth])
        x = tf.reshape(x, leading_dims(x) + [self.num_heads, depth])
        return _swap_length_and_heads(x)

    def _split_keys_values(self, keys_values: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        """[B, L, h*d_k + h*d_v] -> keys [B, h, L, d_k], values [B, h, L, d_v]."""
        keys, values = tf.split(keys_values, [self.key_channels, self.value_channels], axis=-1)
        return self._split_heads(keys, self.key_depth), self._split_heads(values, self.value_depth)

    def attend(self, queries: tf.Tensor, keys: tf.Tensor, values: tf.Tensor,
               bias: tf.Tensor | None, training: bool = False,
               return_weights: bool = False, relative: RelativePositions | None = None
               ) -> tf.Tensor | tuple[tf.Tensor, tf.Tensor]:
        """softmax(Q K^T / sqrt(d_k) + bias) V, heads merged and projected: [B, Lq, d_model];
        with ``relative``, Shaw et al.'s: softmax(Q (K + a^K)^T / sqrt(d_k) + bias) (V + a^V).

        With ``return_weights``, also the attention weights [B, h, Lq, Lk] (before
        attention dropout).
        """
        queries = queries * tf.cast(self.key_depth ** -0.5, queries.dtype)
        # An einsum, not matmul(transpose_b=True): with oneDNN on, TensorFlow's remapper
        # fuses scale, product and a [1, 1, L, L] causal bias into one oneDNN matmul that
        # AVX2 CPUs run with its reference kernel, about 90 times slower (docs/SPEED.md).
        logits = tf.cast(tf.einsum("bhqd,bhkd->bhqk", queries, keys), tf.float32)
        if relative is not None:
            logits += tf.cast(relative.logits(queries), tf.float32)
        if bias is not None:
            logits += tf.cast(bias, tf.float32)  # Keras casts float call args to compute dtype
        # softmax in float32 even under mixed precision; the weights returned are those.
        probabilities = tf.nn.softmax(logits)
        weights = self.weights_dropout(tf.cast(probabilities, values.dtype), training=training)
        heads = tf.matmul(weights, values)  # [B, h, Lq, d_v]
        if relative is not None:
            heads += relative.heads(weights)
        if heads.shape[2] == 1:  # a decode step: [B, h, 1, d_v] is [B, 1, h, d_v] in memory
            merged = tf.reshape(heads, leading_dims(heads, trailing=3) + [1, self.value_channels])
        else:
            heads = _swap_length_and_heads(heads)  # [B, Lq, h, d_v]
            merged = tf.reshape(heads, leading_dims(heads, trailing=2) + [self.value_channels])
        output = project(merged, self.output_kernel)
        return (output, probabilities) if return_weights else output

    def get_config(self) -> dict:
        return {**super().get_config(), "hidden_size": self.hidden_size,
                "num_heads": self.num_heads, "key_channels": self.key_channels,
                "value_channels": self.value_channels, "dropout": self.dropout}


class SelfAttention(MultiHeadAttention):
    """Self-attention with fused Q/K/V projection and incremental decoding.

    ``max_relative_position`` k > 0 adds Shaw et al.'s relative position
    representations, clipped at distance k: tables ``relative_position_keys``
    [2k + 1, d_k] and ``relative_position_values`` [2k + 1, d_v], shared by the heads
    (``relative_positions.py``); 0, plain dot-product attention.
    """

    def __init__(self, hidden_size: int, num_heads: int, key_channels: int = 0,
                 value_channels: int = 0, dropout: float = 0.0,
                 max_relative_position: int = 0, **kwargs):
        super().__init__(hidden_size, num_heads, key_channels, value_channels, dropout,
                         **kwargs)
        if max_relative_position < 0:
            raise ValueError(f"max_relative_position={max_relative_position} is negative; "
                             "use 0 (off) or a distance >= 1")
        self.max_relative_position = max_relative_position

    def build(self, input_shape=None) -> None:
        super().build(input_shape)
        self.qkv_kernel = self.add_weight(
            name="qkv_kernel",
            shape=(self.hidden_size, 2 * self.key_channels + self.value_channels))
        if self.max_relative_position:
            rows = 2 * self.max_relative_position + 1
            self.relative_position_keys = self.add_weight(
                name="relative_position_keys", shape=(rows, self.key_depth))
            self.relative_position_values = self.add_weight(
                name="relative_position_values", shape=(rows, self.value_depth))

    def _relative(self, query_positions: tf.Tensor,
                  key_positions: tf.Tensor) -> RelativePositions:
        """The relative positions of these (broadcast) pairs."""
        ids = relative_position_ids(query_positions, key_positions,
                                    self.max_relative_position)
        return RelativePositions.of(ids, self.relative_position_keys,
                                    self.relative_position_values, self.compute_dtype)

    def get_config(self) -> dict:
        return {**super().get_config(), "max_relative_position": self.max_relative_position}

    def _project(self, x: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
        queries, keys_values = tf.split(
            project(x, self.qkv_kernel),
            [self.key_channels, self.key_channels + self.value_channels], axis=-1)
        keys, values = self._split_keys_values(keys_values)
        return self._split_heads(queries, self.key_depth), keys, values

    def call(self, x: tf.Tensor, bias: tf.Tensor | None = None, training: bool = False,
             return_weights: bool = False) -> tf.Tensor | tuple[tf.Tensor, tf.Tensor]:
        """x [B, L, d_model], bias e.g. padding_bias or causal_bias -> [B, L, d_model]
        (and the weights [B, h, L, L] with ``return_weights``)."""
        queries, keys, values = self._project(x)
        relative = None
        if self.max_relative_position:
            positions = tf.range(tf.shape(x)[1])
            relative = self._relative(positions[:, None], positions[None, :])
        return self.attend(queries, keys, values, bias, training, return_weights, relative)

    def cache_buffers(self, batch_size: tf.Tensor, dtype: tf.DType, length: tf.Tensor | int,
                    queries: int = 1) -> dict[str, tf.Tensor]:
        """Key/value cache buffers {"keys": [B, h, length * queries, d_k], "values":
        [.., d_v]} of zeros: ``length`` steps of ``queries`` entries each (see
        ``decode_step``)."""
        rows = length * queries
        return {"keys": tf.zeros([batch_size, self.num_heads, rows, self.key_depth], dtype),
                "values": tf.zeros([batch_size, self.num_heads, rows, self.value_depth],
                                   dtype)}

    @staticmethod
    def pad_cache(cache: dict[str, tf.Tensor], length: int,
                  queries: int = 1) -> dict[str, tf.Tensor]:
        """Cache buffers (``cache_buffers``) padded with zeros to ``length`` steps (a
        static int, at least their own)."""
        return {key: tf.pad(value, [[0, 0], [0, 0], [0, length * queries - value.shape[2]],
                                    [0, 0]])
                for key, value in cache.items()}

    def decode_step(self, x: tf.Tensor, cache: dict[str, tf.Tensor], position: tf.Tensor,
                    bias: tf.Tensor | None = None, entries: tf.Tensor | None = None
                    ) -> tuple[tf.Tensor, dict[str, tf.Tensor]]:
        """Decode step ``position`` of Q hypotheses of each item at once: x [B, Q, d_model]
        holds the step's input of each (Q = the beam; 1 for one hypothesis per item).

        ``cache`` (``cache_buffers``) holds the keys and values step-major: entry s * Q + q
        [B, h, ., d] is hypothesis q's at step s, in the order the hypotheses had at
        step s. The step writes its Q entries in place (``write_entries``) and never
        moves the others: when beam search reorders hypotheses, ``bias`` [B, 1, Q,
        entries attended] (``ancestry_bias``) says which entries each hypothesis now
        descends from (None: each sees every entry attended, right for Q = 1). The
        step attends over the first ``entries`` entries (those written so far:
        (position + 1) * Q), or with ``entries`` None over the whole buffer, as XLA's
        fixed shapes need (written by a scatter, which XLA does in place), ``bias``
        then hiding the entries not written yet. Relative positions count steps:
        entry e is step e // Q's. Returns (output [B, Q, d_model], the cache). No dropout.
        """
        queries, keys, values = self._project(x)
        if entries is None:
            # A scatter of the step's rows, which XLA performs in place on the loop's
            # buffer, instead of a select that reads and writes every entry.
            rows = _step_rows(cache["keys"], position, x.shape[1])
            cache = {"keys": tf.tensor_scatter_nd_update(cache["keys"], rows, keys),
                     "values": tf.tensor_scatter_nd_update(cache["values"], rows, values)}
            buffer = cache["keys"].shape[2]
            relative = self._step_relative(
                position, tf.shape(cache["keys"])[2] if buffer is None else buffer, x.shape[1])
            return self.attend(queries, cache["keys"], cache["values"], bias,
                               relative=relative), cache
        start = position * x.shape[1]
        cache = {"keys": write_entries(cache["keys"], keys, start),
                 "values": write_entries(cache["values"], values, start)}
        return self.attend(queries, cache["keys"][:, :, :entries],
                           cache["values"][:, :, :entries], bias,
                           relative=self._step_relative(position, entries, x.shape[1])), cache

    def _step_relative(self, position: tf.Tensor, entries: tf.Tensor | int,
                       queries: int) -> RelativePositions | None:
        """A decode step's relative positions: from step ``position`` to each of the
        first ``entries`` cache entries, entry e being step e // ``queries``'s."""
        if not self.max_relative_position:
            return None
        return self._relative(position, tf.range(entries) // queries)


class CrossAttention(MultiHeadAttention):
    """Decoder-to-encoder attention: queries from x, keys and values from memory."""

    def build(self, input_shape=None) -> None:
        super().build(input_shape)
        self.query_kernel = self.add_weight(
            name="query_kernel", shape=(self.hidden_size, self.key_channels))
        self.key_value_kernel = self.add_weight(
            name="key_value_kernel",
            shape=(self.hidden_size, self.key_channels + self.value_channels))

    def project_memory(self, memory: tf.Tensor) -> dict[str, tf.Tensor]:
        """memory [B, S, d_model] -> {"keys": [B, h, S, d_k], "values": [B, h, S, d_v]}."""
        keys, values = self._split_keys_values(project(memory, self.key_value_kernel))
        return {"keys": keys, "values": values}

    def attend_to_memory(self, x: tf.Tensor, memory_kv: dict[str, tf.Tensor],
                         bias: tf.Tensor | None, training: bool = False,
                         return_weights: bool = False) -> tf.Tensor | tuple[tf.Tensor, tf.Tensor]:
        """Attention from x [B, L, d_model] to keys/values from ``project_memory``
        (and the weights [B, h, L, S] with ``return_weights``)."""
        queries = self._split_heads(project(x, self.query_kernel), self.key_depth)
        return self.attend(queries, memory_kv["keys"], memory_kv["values"], bias, training,
                           return_weights)

    def call(self, x: tf.Tensor, memory: tf.Tensor, bias: tf.Tensor | None = None,
             training: bool = False) -> tf.Tensor:
        """x [B, L, d_model], memory [B, S, d_model], bias [B, 1, 1, S] -> [B, L, d_model]."""
        return self.attend_to_memory(x, self.project_memory(memory), bias, training)
