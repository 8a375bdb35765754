"""tensor2tensor's LSTM model names, each the model of ours that computes what T2T's did.

T2T's ``tensor2tensor/models/lstm.py`` registers:

* ``lstm_seq2seq``: Sutskever et al.'s model, the source reversed. Ours has that
  name already (``models/lstm_seq2seq.py``); T2T's sets say reverse_source=true.
* ``lstm_seq2seq_attention``: the same encoder, and a decoder wrapped in
  ``tf.contrib.seq2seq.AttentionWrapper``: its top state h_t attends over the
  encoder's top states (BahdanauAttention or LuongAttention by the set), the
  attention vector W [h_t; c_t] is the output and is fed to the next step's input.
  That is our ``lstm_seq2seq_attention_luong`` (input feeding, the score by
  attention_score), registered again under T2T's name. It is not our
  ``lstm_seq2seq_attention_bahdanau``, which queries the previous state and has a
  maxout output, as the paper.
* ``lstm_seq2seq_bidirectional_encoder`` and
  ``lstm_seq2seq_attention_bidirectional_encoder``: the source in order through a
  forward and a backward stack of num_hidden_layers LSTMs of hidden_size cells
  (two separate stacks: each direction's upper layers read only that direction,
  unlike our Luong model's bidirectional_encoder, whose layers each read both),
  their top outputs concatenated as the memory, and each decoder layer, of
  2 * hidden_size cells, starting from its depth's forward and backward final
  states concatenated. The attention variant's attention vector is hidden_size
  wide. Both are models of their own here; they read the source in order whatever
  reverse_source says, as T2T's did.

The differences from T2T that no key expresses are listed in
``t2t_lite/hparams/t2t_lstm.py``, the sets of T2T's names.
"""
from __future__ import annotations

import keras
import tensorflow as tf

from t2t_lite.contracts.reserved_ids import PAD_ID
from t2t_lite.hparam import HParams
from t2t_lite.layers.recurrent import Initializers, LSTMState, StackedLSTM
from t2t_lite.layers.recurrent_attention import RecurrentAttention
from t2t_lite.models.lstm_seq2seq import LSTMSeq2seq
from t2t_lite.models.luong import LSTMSeq2seqAttentionLuong
from t2t_lite.models.recurrent import AttentionSeq2Seq, RecurrentSeq2Seq, states_to_dict
from t2t_lite.registry import models, register_model

# T2T's name for the model it computes (the same class under a second name).
register_model("lstm_seq2seq_attention")(LSTMSeq2seqAttentionLuong)

models.refuse("lstm_encoder", "an encoder-only LSTM (for classification problems); t2t-lite's "
              "models are encoder-decoders: use --model=lstm_seq2seq")
models.refuse("baseline_lstm_seq2seq", "tensor2tensor 1.0's name; later T2T and t2t-lite call "
              "it --model=lstm_seq2seq")
models.refuse("baseline_lstm_seq2seq_attention",
              "tensor2tensor 1.0's attention model (its own attention cell, queried with "
              "every layer's state); the nearest is --model=lstm_seq2seq_attention "
              "--hparams_set=lstm_attention")

# Keys the bidirectional models read and overrule (T2T's models fixed them): free to
# change between runs, so not architecture, but read, so that T2T's sets (which hold
# them for the other models) pass the check that a model reads its set.
_OVERRULED = ("reverse_source", "bidirectional_encoder")


def _without_overruled(keys: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(key for key in keys if key not in _OVERRULED)


class T2TBidirectionalEncoder(keras.layers.Layer):
    """T2T's ``lstm_bid_encoder``: a forward stack over the source and a backward
    stack over each source reversed by its length, EOS included (as
    ``bidirectional_dynamic_rnn`` reverses it)."""

    def __init__(self, units: int, num_layers: int, dropout: float,
                 initializers: Initializers, **kwargs):
        super().__init__(**kwargs)
        self.forward = StackedLSTM(units, num_layers, dropout, initializers, name="forward")
        self.backward = StackedLSTM(units, num_layers, dropout, initializers, name="backward")

    def build(self, input_shape) -> None:
        self.forward.build(input_shape)
        self.backward.build(input_shape)

    def call(self, x: tf.Tensor, sequence_mask: tf.Tensor, training: bool = False
             ) -> tuple[tf.Tensor, list[LSTMState]]:
        """x [B, S, depth], sequence_mask [B, S] -> (the top outputs of both directions
        [B, S, 2 * units], each position's own; each layer's final (h, c), forward and
        backward concatenated, bottom first)."""
        lengths = tf.reduce_sum(tf.cast(sequence_mask, tf.int32), axis=1)

        def reverse(values: tf.Tensor) -> tf.Tensor:
            return tf.reverse_sequence(values, lengths, seq_axis=1, batch_axis=0)

        forward, forward_states = self.forward(x, sequence_mask=sequence_mask,
                                               training=training)
        # Reversed by length, the padding stays at the end, where the mask has it.
        backward, backward_states = self.backward(reverse(x), sequence_mask=sequence_mask,
                                                  training=training)
        states = [(tf.concat([fh, bh], -1), tf.concat([fc, bc], -1))
                  for (fh, fc), (bh, bc) in zip(forward_states, backward_states)]
        return tf.concat([forward, reverse(backward)], -1), states


class _SourceInOrder:
    """T2T's bidirectional models read the source in order, whatever reverse_source."""

    def embed_source(self, inputs: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
        mask = tf.not_equal(inputs, PAD_ID)
        return self.source_embedding(inputs), mask, 1.0 - tf.cast(mask, tf.float32)

    def source_order(self, weights: tf.Tensor, inputs: tf.Tensor) -> tf.Tensor:
        return weights


@register_model
class LSTMSeq2seqBidirectionalEncoder(_SourceInOrder, LSTMSeq2seq):
    """T2T's ``lstm_seq2seq_bidirectional_encoder``: no attention; the decoder, of
    2 * hidden_size cells, starts from both directions' final states."""

    architecture_hparams = _without_overruled(LSTMSeq2seq.architecture_hparams)
    required_hparams = LSTMSeq2seq.required_hparams + ("reverse_source",)

    def __init__(self, hparams: HParams, vocab_size: int, input_vocab_size: int | None = None,
                 **kwargs):
        # LSTMSeq2seq's own __init__ would build encoder and decoder of hidden_size;
        # its encode is replaced and its call / decode_step are reused as they are.
        RecurrentSeq2Seq.__init__(self, hparams, vocab_size, input_vocab_size, **kwargs)
        self.check_layers_match()
        hidden, layers = hparams.hidden_size, hparams.num_encoder_layers
        self.encoder = T2TBidirectionalEncoder(hidden, layers, hparams.dropout,
                                               self.initializers, name="encoder")
        self.decoder = StackedLSTM(2 * hidden, layers, hparams.dropout, self.initializers,
                                   name="decoder")
        self.build_layers([(self.encoder, hparams.embedding_size),
                           (self.decoder, hparams.embedding_size),
                           (self.softmax, 2 * hidden)])

    def encode(self, inputs: tf.Tensor, training: bool = False) -> dict[str, tf.Tensor]:
        """inputs [B, S] -> each decoder layer's initial (h, c), [B, 2 * hidden_size]."""
        embedded, mask, _ = self.embed_source(inputs)
        _, states = self.encoder(embedded, sequence_mask=mask, training=training)
        return states_to_dict(states)


@register_model
class LSTMSeq2seqAttentionBidirectionalEncoder(_SourceInOrder, LSTMSeq2seqAttentionLuong):
    """T2T's ``lstm_seq2seq_attention_bidirectional_encoder``: Luong's decoder (input
    feeding, the set's score) of 2 * hidden_size cells over T2T's bidirectional
    encoder; the attention vector tanh(W [c_t; h_t]) is hidden_size wide, as T2T's
    (attention_layer_size, the set's hidden_size)."""

    architecture_hparams = _without_overruled(LSTMSeq2seqAttentionLuong.architecture_hparams)
    required_hparams = LSTMSeq2seqAttentionLuong.required_hparams + _OVERRULED

    def __init__(self, hparams: HParams, vocab_size: int, input_vocab_size: int | None = None,
                 **kwargs):
        # The Luong model's __init__ makes every layer hidden_size wide (and would
        # build weights of those shapes): this one builds its own and reuses the
        # Luong model's steps, teacher forcing, scheduled sampling and decoding.
        AttentionSeq2Seq.__init__(self, hparams, vocab_size, input_vocab_size, **kwargs)
        self.check_layers_match()
        hidden, embedding = hparams.hidden_size, hparams.embedding_size
        init = self.initializers
        self.encoder = T2TBidirectionalEncoder(hidden, hparams.num_encoder_layers,
                                               hparams.dropout, init, name="encoder")
        self.decoder = StackedLSTM(2 * hidden, hparams.num_decoder_layers, hparams.dropout,
                                   init, name="decoder")
        self.attention = RecurrentAttention(hparams.attention_score, hparams.attention_scope,
                                            hparams.attention_window, hparams.attention_size,
                                            init, reversed_source=False, name="attention")
        self.attentional = keras.layers.Dense(hidden, activation="tanh", use_bias=False,
                                              name="attentional", kernel_initializer=init.kernel)
        decoder_input = embedding + (hidden if hparams.input_feeding else 0)
        self.build_layers([(self.encoder, embedding), (self.decoder, decoder_input),
                           (self.attentional, 4 * hidden), (self.softmax, hidden)])
        self.attention.build(2 * hidden, 2 * hidden)
        self.sampling_seed = (keras.random.SeedGenerator(name="scheduled_sampling")
                              if hparams.scheduled_sampling_prob else None)

    def encode(self, inputs: tf.Tensor, training: bool = False) -> dict[str, tf.Tensor]:
        """inputs [B, S] -> {"memory" [B, S, 2h], "keys", "padding", "layer_i/h",
        "layer_i/c" [B, 2h], and with input feeding "attentional": h~_0 = 0 [B, h]}."""
        embedded, mask, padding = self.embed_source(inputs)
        memory, states = self.encoder(embedded, sequence_mask=mask, training=training)
        encoded = {**self.memory_state(memory, padding), **states_to_dict(states)}
        if self.hparams.input_feeding:
            encoded["attentional"] = tf.zeros_like(states[-1][0][:, :self.hparams.hidden_size])
        return encoded
