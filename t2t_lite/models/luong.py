"""Luong et al. (2015), "Effective Approaches to Attention-based Neural Machine
Translation": global and local attention over a stacked LSTM encoder-decoder.

* Encoder: a stacked LSTM over the source (reversed with reverse_source, as in
  the paper); its final states start the decoder (same number of layers).
* At each target position t the decoder's top state h_t attends over the
  encoder's top states (``RecurrentAttention``: score dot / general / concat,
  scope global / local_m / local_p with window D), giving the context c_t.
* Attentional state h~_t = tanh(W_c [c_t; h_t]); p(y_t) = softmax(W_s h~_t).
* Input feeding (hparam input_feeding, on by default): h~_{t-1} is
  concatenated to the decoder's input at t, so past alignment decisions
  inform the next ones. Without it the decoder runs over the whole target at
  once (the fused LSTM) and attention is computed for all positions together.

Registered as ``lstm_seq2seq_attention_luong``.
"""
from __future__ import annotations

import keras
import tensorflow as tf

from t2t_lite.hparam import HParams
from t2t_lite.layers.recurrent import StackedLSTM
from t2t_lite.layers.recurrent_attention import RecurrentAttention
from t2t_lite.models.recurrent import (AttentionSeq2Seq, states_from_dict, states_to_dict,
                                       unroll)
from t2t_lite.registry import register_model


@register_model
class LSTMSeq2seqAttentionLuong(AttentionSeq2Seq):
    """Stacked LSTMs with Luong attention and (optionally) input feeding."""

    architecture_hparams = AttentionSeq2Seq.architecture_hparams + (
        "attention_size", "attention_score", "attention_scope", "input_feeding")
    required_hparams = AttentionSeq2Seq.required_hparams + ("attention_window",)

    @classmethod
    def architecture_keys(cls, hparams: HParams) -> tuple[str, ...]:
        # A local scope's window decides which source states the weights combine;
        # global attention ignores it.
        local = hparams.attention_scope != "global"
        return cls.architecture_hparams + (("attention_window",) if local else ())

    def __init__(self, hparams: HParams, vocab_size: int, **kwargs):
        super().__init__(hparams, vocab_size, **kwargs)
        self.check_layers_match()
        hidden, embedding = hparams.hidden_size, hparams.embedding_size
        init = self.initializers
        self.encoder = StackedLSTM(hidden, hparams.num_encoder_layers, hparams.dropout, init,
                                   name="encoder")
        self.decoder = StackedLSTM(hidden, hparams.num_decoder_layers, hparams.dropout, init,
                                   name="decoder")
        self.attention = RecurrentAttention(hparams.attention_score, hparams.attention_scope,
                                            hparams.attention_window, hparams.attention_size,
                                            init, reversed_source=hparams.reverse_source,
                                            name="attention")
        self.attentional = keras.layers.Dense(hidden, activation="tanh", use_bias=False,
                                              name="attentional",
                                              kernel_initializer=init.kernel)
        decoder_input = embedding + (hidden if hparams.input_feeding else 0)
        self.build_layers([(self.encoder, embedding), (self.decoder, decoder_input),
                           (self.attentional, 2 * hidden), (self.softmax, hidden)])
        self.attention.build(hidden, hidden)

    def encode(self, inputs: tf.Tensor, training: bool = False) -> dict[str, tf.Tensor]:
        """inputs [B, S] -> {"memory": top encoder states [B, S, h], "keys", "padding",
        "layer_i/h", "layer_i/c": final encoder states, and with input feeding
        "attentional": h~_0 = 0}."""
        embedded, mask, padding = self.embed_source(inputs)
        memory, states = self.encoder(embedded, sequence_mask=mask, training=training)
        encoded = {**self.memory_state(memory, padding), **states_to_dict(states)}
        if self.hparams.input_feeding:
            encoded["attentional"] = tf.zeros_like(states[-1][0])
        return encoded

    def _attentional(self, context: tf.Tensor, output: tf.Tensor) -> tf.Tensor:
        """h~ = tanh(W_c [c; h])."""
        return self.attentional(tf.concat([context, output], -1))

    def _step(self, embedded: tf.Tensor, step: tf.Tensor, state: dict[str, tf.Tensor],
              training: bool = False) -> tuple[dict[str, tf.Tensor], dict[str, tf.Tensor]]:
        """E y_{t-1} [B, E] -> ({"attentional": h~_t, "weights"}, new state)."""
        states = states_from_dict(state, self.hparams.num_decoder_layers)
        if self.hparams.input_feeding:
            embedded = tf.concat([embedded, state["attentional"]], -1)
        output, states = self.decoder.step(embedded, states, training=training)
        context, weights = self.attend(output, step, state)
        attentional = self._attentional(context, output)
        new_state = {**state, **states_to_dict(states)}
        if self.hparams.input_feeding:
            new_state["attentional"] = attentional
        return {"attentional": attentional, "weights": weights}, new_state

    def teacher_forced(self, features: dict[str, tf.Tensor],
                       training: bool) -> tuple[tf.Tensor, tf.Tensor]:
        state = self.encode(features["inputs"], training=training)
        embedded = self.embed_targets(features["targets"])
        if self.hparams.input_feeding:
            steps = unroll(lambda x, t, s: self._step(x, t, s, training), embedded, state,
                           {"attentional": self.compute_dtype, "weights": tf.float32})
            attentional, weights = steps["attentional"], steps["weights"]
        else:
            outputs, _ = self.decoder(
                embedded, initial_states=states_from_dict(state, self.hparams.num_decoder_layers),
                training=training)
            context, weights = self.attention(outputs, state["memory"], state["keys"],
                                              state["padding"],
                                              positions=tf.range(tf.shape(outputs)[1]))
            attentional = self._attentional(context, outputs)
        return self.logits(attentional, training=training), weights

    def decode_step(self, ids: tf.Tensor, step: tf.Tensor,
                    state: dict[str, tf.Tensor]) -> tuple[tf.Tensor, dict[str, tf.Tensor]]:
        outputs, state = self._step(self.target_embedding(ids), step, state)
        return self.logits(outputs["attentional"]), state
