"""Encoder and decoder blocks of the Transformer (paper section 3.1).

Each sub-layer (attention or feed-forward) sits in a residual connection whose
output is dropped out before the add (section 5.4, "residual dropout"):

  post-norm (the paper, ``normalize_before=False``):  LayerNorm(x + Dropout(F(x)))
  pre-norm  (``normalize_before=True``):              x + Dropout(F(LayerNorm(x)))

With pre-norm the stack's output is not normalised; the model adds a final
LayerNorm after the last block.
"""
from __future__ import annotations

import keras
import tensorflow as tf

from t2t_lite.layers.attention import CrossAttention, SelfAttention
from t2t_lite.layers.dropout import Dropout
from t2t_lite.layers.layer_norm import layer_norm
from t2t_lite.layers.projection import project

class FeedForward(keras.layers.Layer):
    """FFN(x) = max(0, x W1 + b1) W2 + b2 (section 3.3), relu_dropout on the hidden layer."""

    def __init__(self, hidden_size: int, filter_size: int, dropout: float = 0.0, **kwargs):
        super().__init__(**kwargs)
        self.hidden_size = hidden_size
        self.filter_size = filter_size
        self.dropout = dropout
        self.filter_dense = keras.layers.Dense(filter_size, name="filter")
        self.output_dense = keras.layers.Dense(hidden_size, name="output")
        self.relu_dropout = Dropout(dropout)

    def build(self, input_shape=None) -> None:
        self.filter_dense.build((None, None, self.hidden_size))
        self.output_dense.build((None, None, self.filter_size))

    def call(self, x: tf.Tensor, training: bool = False) -> tf.Tensor:
        # The Dense layers hold the weights; ``project`` applies them without the
        # tensordot that Dense builds for 3-D inputs.
        hidden = tf.nn.relu(project(x, self.filter_dense.kernel, self.filter_dense.bias))
        hidden = self.relu_dropout(hidden, training=training)
        return project(hidden, self.output_dense.kernel, self.output_dense.bias)

    def get_config(self) -> dict:
        return {**super().get_config(), "hidden_size": self.hidden_size,
                "filter_size": self.filter_size, "dropout": self.dropout}


class _Block(keras.layers.Layer):
    """What both blocks share: self-attention, feed-forward, residual connections.

    Args: hidden_size (d_model), filter_size (d_ff), num_heads, key_channels and
    value_channels (h*d_k, h*d_v; 0 = hidden_size), residual_dropout (hparam
    layer_prepostprocess_dropout), attention_dropout, relu_dropout,
    normalize_before (pre-norm), max_relative_position (the self-attention's
    relative positions, Shaw et al.; 0 = none: see ``SelfAttention``).
    """

    def __init__(self, hidden_size: int, filter_size: int, num_heads: int,
                 key_channels: int = 0, value_channels: int = 0,
                 residual_dropout: float = 0.0, attention_dropout: float = 0.0,
                 relu_dropout: float = 0.0, normalize_before: bool = False,
                 max_relative_position: int = 0, **kwargs):
        super().__init__(**kwargs)
        self.block_config = {
            "hidden_size": hidden_size, "filter_size": filter_size, "num_heads": num_heads,
            "key_channels": key_channels, "value_channels": value_channels,
            "residual_dropout": residual_dropout, "attention_dropout": attention_dropout,
            "relu_dropout": relu_dropout, "normalize_before": normalize_before,
            "max_relative_position": max_relative_position}
        self.hidden_size = hidden_size
        self.normalize_before = normalize_before
        self.attention_args = {"hidden_size": hidden_size, "num_heads": num_heads,
                               "key_channels": key_channels, "value_channels": value_channels,
                               "dropout": attention_dropout}
        self.self_attention = SelfAttention(**self.attention_args,
                                            max_relative_position=max_relative_position,
                                            name="self_attention")
        self.self_attention_norm = layer_norm("self_attention_norm")
        self.feed_forward = FeedForward(hidden_size, filter_size, relu_dropout,
                                        name="feed_forward")
        self.feed_forward_norm = layer_norm("feed_forward_norm")
        self.residual_dropout = Dropout(residual_dropout)

    def build(self, input_shape=None) -> None:
        shape = (None, None, self.hidden_size)
        for layer in self.sublayers_to_build():
            layer.build(shape)

    def sublayers_to_build(self) -> list[keras.layers.Layer]:
        return [self.self_attention, self.self_attention_norm,
                self.feed_forward, self.feed_forward_norm]

    def sublayer_input(self, x: tf.Tensor, norm: keras.layers.Layer) -> tf.Tensor:
        """The sub-layer's input: LayerNorm(x) with pre-norm, else x."""
        return norm(x) if self.normalize_before else x

    def residual_output(self, x: tf.Tensor, sublayer_output: tf.Tensor,
                        norm: keras.layers.Layer, training: bool) -> tf.Tensor:
        """x + Dropout(sublayer_output), followed by LayerNorm with post-norm."""
        x = x + self.residual_dropout(sublayer_output, training=training)
        return x if self.normalize_before else norm(x)

    def feed_forward_residual(self, x: tf.Tensor, training: bool) -> tf.Tensor:
        y = self.feed_forward(self.sublayer_input(x, self.feed_forward_norm), training=training)
        return self.residual_output(x, y, self.feed_forward_norm, training)

    def get_config(self) -> dict:
        return {**super().get_config(), **self.block_config}


class EncoderBlock(_Block):
    """Self-attention over the source, then the feed-forward network."""

    def call(self, x: tf.Tensor, padding_bias: tf.Tensor, training: bool = False,
             return_attention: bool = False):
        """x [B, S, d_model], padding_bias [B, 1, 1, S] -> [B, S, d_model]; with
        ``return_attention`` also {"encoder_self": weights [B, h, S, S]}."""
        y, weights = self.self_attention(self.sublayer_input(x, self.self_attention_norm),
                                         padding_bias, training=training, return_weights=True)
        x = self.residual_output(x, y, self.self_attention_norm, training)
        x = self.feed_forward_residual(x, training)
        return (x, {"encoder_self": weights}) if return_attention else x


class DecoderBlock(_Block):
    """Masked self-attention, attention over the encoder output, feed-forward.

    ``call`` runs all target positions at once (teacher forcing);
    ``decode_step`` runs one position with a cache from ``initial_cache``.
    """

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.cross_attention = CrossAttention(**self.attention_args, name="cross_attention")
        self.cross_attention_norm = layer_norm("cross_attention_norm")

    def sublayers_to_build(self) -> list[keras.layers.Layer]:
        return super().sublayers_to_build() + [self.cross_attention, self.cross_attention_norm]

    def call(self, x: tf.Tensor, self_attention_bias: tf.Tensor, memory: tf.Tensor,
             memory_bias: tf.Tensor, training: bool = False, return_attention: bool = False):
        """x [B, T, d], causal bias [1, 1, T, T], memory [B, S, d], bias [B, 1, 1, S] ->
        [B, T, d]; with ``return_attention`` also {"decoder_self": [B, h, T, T],
        "encoder_decoder": [B, h, T, S]}."""
        y, self_weights = self.self_attention(
            self.sublayer_input(x, self.self_attention_norm), self_attention_bias,
            training=training, return_weights=True)
        x = self.residual_output(x, y, self.self_attention_norm, training)
        memory_kv = self.cross_attention.project_memory(memory)
        x, memory_weights = self._attend_memory_and_feed_forward(x, memory_kv, memory_bias,
                                                                 training)
        weights = {"decoder_self": self_weights, "encoder_decoder": memory_weights}
        return (x, weights) if return_attention else x

    def _attend_memory_and_feed_forward(self, x: tf.Tensor, memory_kv: dict[str, tf.Tensor],
                                        memory_bias: tf.Tensor, training: bool
                                        ) -> tuple[tf.Tensor, tf.Tensor]:
        """-> (output, the attention weights over the memory [B, h, T, S])."""
        y, weights = self.cross_attention.attend_to_memory(
            self.sublayer_input(x, self.cross_attention_norm), memory_kv, memory_bias,
            training=training, return_weights=True)
        x = self.residual_output(x, y, self.cross_attention_norm, training)
        return self.feed_forward_residual(x, training), weights

    def initial_cache(self, memory: tf.Tensor, cache_length: tf.Tensor | int,
                      queries: int = 1) -> dict[str, tf.Tensor]:
        """Projected memory keys/values and self-attention caches, all leading dim B.

        Keys: "memory_keys" [B, h, S, d_k], "memory_values" [B, h, S, d_v],
        "keys" [B, h, cache_length * queries, d_k], "values" [.., d_v] (buffers of
        ``cache_length`` steps of ``queries`` hypotheses an item: see
        ``SelfAttention.decode_step``).
        """
        memory_kv = self.cross_attention.project_memory(memory)
        cache = self.self_attention.cache_buffers(tf.shape(memory)[0], memory.dtype,
                                                cache_length, queries)
        return {**cache, "memory_keys": memory_kv["keys"], "memory_values": memory_kv["values"]}

    def decode_step(self, x: tf.Tensor, cache: dict[str, tf.Tensor], memory_bias: tf.Tensor,
                    position: tf.Tensor, self_bias: tf.Tensor | None = None,
                    entries: tf.Tensor | None = None) -> tuple[tf.Tensor, dict[str, tf.Tensor]]:
        """x [B, Q, d]: decode step ``position`` of Q hypotheses of each item -> ([B, Q, d],
        cache with this step written; ``self_bias`` and ``entries``: see
        ``SelfAttention.decode_step``)."""
        y, self_cache = self.self_attention.decode_step(
            self.sublayer_input(x, self.self_attention_norm),
            {"keys": cache["keys"], "values": cache["values"]}, position, self_bias, entries)
        x = self.residual_output(x, y, self.self_attention_norm, training=False)
        memory_kv = {"keys": cache["memory_keys"], "values": cache["memory_values"]}
        x, _ = self._attend_memory_and_feed_forward(x, memory_kv, memory_bias, training=False)
        return x, {**cache, **self_cache}
