"""Recurrent building blocks of the RNN encoder-decoders (Keras 3 layers).

``StackedLSTM`` runs ``keras.layers.LSTM`` layers over whole sequences (the
fused path: cuDNN on a GPU) and the same layers' ``LSTMCell``s one step at a
time, so teacher forcing and incremental decoding share every weight and every
gate computation. Dropout is on the non-recurrent connections only (each
layer's input), as in Zaremba et al. (2014) and the seq2seq papers after it.
"""
from __future__ import annotations

import dataclasses

import keras
import tensorflow as tf

from t2t_lite.contracts.reserved_ids import PAD_ID
from t2t_lite.hparams.lstm import INITIALIZERS
from t2t_lite.layers.dropout import Dropout

LSTMState = tuple[tf.Tensor, tf.Tensor]  # (h, c), each [B, units]


@dataclasses.dataclass(frozen=True)
class Initializers:
    """Initializers for every weight of a recurrent model."""
    kernel: keras.initializers.Initializer | str
    recurrent: keras.initializers.Initializer | str
    bias: keras.initializers.Initializer | str
    embedding: keras.initializers.Initializer | str
    unit_forget_bias: bool

    def lstm_kwargs(self) -> dict:
        return {"kernel_initializer": self.kernel, "recurrent_initializer": self.recurrent,
                "bias_initializer": self.bias, "unit_forget_bias": self.unit_forget_bias}

    def dense_kwargs(self) -> dict:
        return {"kernel_initializer": self.kernel, "bias_initializer": self.bias}


def make_initializers(name: str, gain: float) -> Initializers:
    """"uniform": every weight U(-gain, gain), biases included (Sutskever et al. used
    0.08, Luong et al. 0.1); "keras": Keras's defaults (Glorot kernels, orthogonal
    recurrent kernels, zero biases with the forget gate's at 1)."""
    if name == "uniform":
        uniform = keras.initializers.RandomUniform(-gain, gain)
        return Initializers(uniform, uniform, uniform, uniform, unit_forget_bias=False)
    if name == "keras":
        return Initializers("glorot_uniform", "orthogonal", "zeros", "uniform",
                            unit_forget_bias=True)
    raise ValueError(f"unknown initializer {name!r}; choose one of: {', '.join(INITIALIZERS)}")


def reverse_source(inputs: tf.Tensor, values: tf.Tensor | None = None,
                   axis: int = 1) -> tf.Tensor:
    """Sutskever et al.'s reversed source: the real tokens of each row of ``inputs``
    [B, S] in reverse order, except the last one (EOS), which stays last, as the
    padding after it stays at the end: ``a b c EOS PAD`` -> ``c b a EOS PAD``.

    With ``values`` ([B, ...], source positions on ``axis``), reorders those
    positions of ``values`` in the same way instead.
    """
    lengths = tf.reduce_sum(tf.cast(tf.not_equal(inputs, PAD_ID), tf.int32), axis=1)
    return tf.reverse_sequence(inputs if values is None else values,
                               tf.maximum(lengths - 1, 0), seq_axis=axis, batch_axis=0)


def maxout(x: tf.Tensor, pieces: int) -> tf.Tensor:
    """[..., units * pieces] -> [..., units], the max over consecutive ``pieces``."""
    shape = tf.shape(x)
    units = x.shape[-1] // pieces
    grouped = tf.reshape(x, tf.concat([shape[:-1], [units, pieces]], 0))
    return tf.reduce_max(grouped, axis=-1)


class _LayerStack(keras.layers.Layer):
    """Recurrent layers, each fed the (dropped out) output of the one below."""

    def __init__(self, layers: list[keras.layers.Layer], output_depth: int, dropout: float,
                 **kwargs):
        super().__init__(**kwargs)
        if not layers:
            raise ValueError("an LSTM stack needs at least one layer, got 0")
        self.stack = layers
        self.output_depth = output_depth
        self.dropouts = [Dropout(dropout) for _ in layers]

    def build(self, input_shape) -> None:
        depth = input_shape[-1]
        for layer in self.stack:
            layer.build((None, None, depth))
            depth = self.output_depth


class StackedLSTM(_LayerStack):
    """``num_layers`` LSTMs of ``units`` cells.

    ``call`` runs whole sequences; ``step`` advances every layer by one
    position with the same weights. States are a list of (h, c) per layer,
    bottom first.
    """

    def __init__(self, units: int, num_layers: int, dropout: float,
                 initializers: Initializers, **kwargs):
        super().__init__([keras.layers.LSTM(units, return_sequences=True, return_state=True,
                                            name=f"lstm_{i}", **initializers.lstm_kwargs())
                          for i in range(num_layers)], units, dropout, **kwargs)
        self.units = units

    def call(self, x: tf.Tensor, sequence_mask: tf.Tensor | None = None,
             initial_states: list[LSTMState] | None = None,
             training: bool = False) -> tuple[tf.Tensor, list[LSTMState]]:
        """x [B, T, depth] (sequence_mask [B, T]: False at padding, whose steps carry
        the state on) -> (top outputs [B, T, units], final (h, c) of every layer)."""
        states = []
        for i, (lstm, dropout) in enumerate(zip(self.stack, self.dropouts)):
            initial = list(initial_states[i]) if initial_states else None
            x, h, c = lstm(dropout(x, training=training), mask=sequence_mask,
                           initial_state=initial, training=training)
            states.append((h, c))
        return x, states

    def step(self, x: tf.Tensor, states: list[LSTMState],
             training: bool = False) -> tuple[tf.Tensor, list[LSTMState]]:
        """x [B, depth], one position -> (top output [B, units], new states)."""
        new_states = []
        for lstm, dropout, (h, c) in zip(self.stack, self.dropouts, states):
            x, (h, c) = lstm.cell(dropout(x, training=training), [h, c], training=training)
            new_states.append((h, c))
        return x, new_states

    def zero_states(self, batch_size: tf.Tensor) -> list[LSTMState]:
        zeros = tf.zeros([batch_size, self.units])
        return [(zeros, zeros) for _ in self.stack]


class BidirectionalLSTM(_LayerStack):
    """Bahdanau et al.'s encoder: ``num_layers`` bidirectional LSTMs, the forward and
    backward states of each position concatenated (the annotation h_j)."""

    def __init__(self, units: int, num_layers: int, dropout: float,
                 initializers: Initializers, **kwargs):
        # The inner LSTMs are named as Keras numbered them in a new process, so that
        # checkpoints keep their keys; left unnamed, a second model in one process (an
        # ensemble member) numbered them on and could not be restored.
        super().__init__([keras.layers.Bidirectional(
            keras.layers.LSTM(units, return_sequences=True, return_state=True,
                              name=f"lstm_{i}" if i else "lstm",
                              **initializers.lstm_kwargs()), name=f"bilstm_{i}")
            for i in range(num_layers)], 2 * units, dropout, **kwargs)

    def call(self, x: tf.Tensor, sequence_mask: tf.Tensor, training: bool = False
             ) -> tuple[tf.Tensor, list[tuple[LSTMState, LSTMState]]]:
        """x [B, S, depth], sequence_mask [B, S] -> (annotations [B, S, 2 * units], each
        layer's final (forward, backward) states, bottom first: the forward LSTM's
        (h, c) at the last word, the backward LSTM's at the first, h<-_1)."""
        finals = []
        for layer, dropout in zip(self.stack, self.dropouts):
            x, forward_h, forward_c, backward_h, backward_c = layer(
                dropout(x, training=training), mask=sequence_mask, training=training)
            finals.append(((forward_h, forward_c), (backward_h, backward_c)))
        return x, finals
