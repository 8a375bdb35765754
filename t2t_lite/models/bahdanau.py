"""Bahdanau et al. (2015), "Neural Machine Translation by Jointly Learning to Align
and Translate" (RNNsearch), with LSTM cells.

* Encoder: a bidirectional RNN; the annotation h_j of source word j is the
  forward and backward states concatenated.
* Attention (additive): e_ij = v^T tanh(W s_{i-1} + U h_j), alpha = softmax(e),
  c_i = sum_j alpha_ij h_j. U h_j is computed once per sentence.
* Decoder: s_i = LSTM(s_{i-1}, [E y_{i-1}; c_i]); s_0 = tanh(W_s h<-_1) (the
  backward encoder's state at the first word; a stacked decoder gets one such
  projection per layer, and every LSTM cell state starts at 0).
* Deep output with maxout: t~_i = U_o s_i + V_o E y_{i-1} + C_o c_i,
  t_i = max over pairs of t~_i (2 pieces, maxout_units = l = 500 in the paper),
  p(y_i) = softmax(W_o t_i). The paper's eq. (4) conditions on s_i; its
  appendix writes s_{i-1}: we follow eq. (4).

Simplifications, documented: LSTM cells where the paper used gated recurrent
units (the T2T model of this name did the same), and dropout (hparam) where
the paper used none.
Registered as ``lstm_seq2seq_attention_bahdanau``.
"""
from __future__ import annotations

import keras
import tensorflow as tf

from t2t_lite.hparam import HParams
from t2t_lite.layers.recurrent import BidirectionalLSTM, StackedLSTM, maxout
from t2t_lite.layers.recurrent_attention import RecurrentAttention
from t2t_lite.models.recurrent import (AttentionSeq2Seq, states_from_dict, states_to_dict,
                                       unroll)
from t2t_lite.registry import register_model

MAXOUT_PIECES = 2


@register_model
class LSTMSeq2seqAttentionBahdanau(AttentionSeq2Seq):
    """RNNsearch: bidirectional encoder, additive attention, maxout deep output."""

    architecture_hparams = AttentionSeq2Seq.architecture_hparams + ("attention_size", "maxout_units")

    def __init__(self, hparams: HParams, vocab_size: int, input_vocab_size: int | None = None,
                 **kwargs):
        super().__init__(hparams, vocab_size, input_vocab_size, **kwargs)
        hidden, embedding = hparams.hidden_size, hparams.embedding_size
        init = self.initializers
        self.encoder = BidirectionalLSTM(hidden, hparams.num_encoder_layers, hparams.dropout,
                                         init, name="encoder")
        self.initial_state = keras.layers.Dense(hidden * hparams.num_decoder_layers,
                                                activation="tanh", name="initial_state",
                                                **init.dense_kwargs())
        self.attention = RecurrentAttention("concat", "global", 0, hparams.attention_size,
                                            init, name="attention")
        self.decoder = StackedLSTM(hidden, hparams.num_decoder_layers, hparams.dropout, init,
                                   name="decoder")
        self.deep_output = keras.layers.Dense(MAXOUT_PIECES * hparams.maxout_units,
                                              name="deep_output", **init.dense_kwargs())
        self.build_layers([(self.encoder, embedding), (self.initial_state, hidden),
                           (self.decoder, embedding + 2 * hidden),
                           (self.deep_output, hidden + embedding + 2 * hidden),
                           (self.softmax, hparams.maxout_units)])
        self.attention.build(hidden, 2 * hidden)

    def encode(self, inputs: tf.Tensor, training: bool = False) -> dict[str, tf.Tensor]:
        """inputs [B, S] -> {"memory": annotations [B, S, 2h], "keys", "padding",
        "layer_i/h", "layer_i/c": the decoder's initial states}."""
        embedded, mask, padding = self.embed_source(inputs)
        annotations, finals = self.encoder(embedded, sequence_mask=mask, training=training)
        backward_first = finals[-1][1][0]  # h<-_1 of the top layer
        initial = tf.split(self.initial_state(backward_first), self.hparams.num_decoder_layers,
                           axis=-1)
        states = [(h, tf.zeros_like(h)) for h in initial]
        return {**self.memory_state(annotations, padding), **states_to_dict(states)}

    def _step(self, embedded: tf.Tensor, step: tf.Tensor, state: dict[str, tf.Tensor],
              training: bool = False) -> tuple[dict[str, tf.Tensor], dict[str, tf.Tensor]]:
        """E y_{i-1} [B, E] -> ({"output": s_i, "context": c_i, "weights"}, new state)."""
        states = states_from_dict(state, self.hparams.num_decoder_layers)
        context, weights = self.attend(states[-1][0], step, state)  # query s_{i-1}
        output, states = self.decoder.step(tf.concat([embedded, context], -1), states,
                                           training=training)
        return ({"output": output, "context": context, "weights": weights},
                {**state, **states_to_dict(states)})

    def _logits(self, output: tf.Tensor, embedded: tf.Tensor, context: tf.Tensor,
                training: bool = False) -> tf.Tensor:
        """The maxout deep output and softmax, for one step or a whole target."""
        hidden = self.deep_output(tf.concat([output, embedded, context], -1))
        return self.logits(maxout(hidden, MAXOUT_PIECES), training=training)

    def teacher_forced(self, features: dict[str, tf.Tensor],
                       training: bool) -> tuple[tf.Tensor, tf.Tensor]:
        state = self.encode(features["inputs"], training=training)
        embedded = self.embed_targets(features["targets"])
        steps = unroll(lambda x, t, s: self._step(x, t, s, training), embedded, state,
                       {"output": self.compute_dtype, "context": self.compute_dtype,
                        "weights": tf.float32})
        logits = self._logits(steps["output"], embedded, steps["context"], training)
        return logits, steps["weights"]

    def decode_step(self, ids: tf.Tensor, step: tf.Tensor,
                    state: dict[str, tf.Tensor]) -> tuple[tf.Tensor, dict[str, tf.Tensor]]:
        embedded = self.target_embedding(ids)
        outputs, state = self._step(embedded, step, state)
        return self._logits(outputs["output"], embedded, outputs["context"]), state
