"""Luong et al. (2015), "Effective Approaches to Attention-based Neural Machine
Translation": global and local attention over a stacked LSTM encoder-decoder.

* Encoder: a stacked LSTM over the source (reversed with reverse_source, as in
  the paper); its final states start the decoder (same number of layers). With
  bidirectional_encoder (off in the paper) each encoder layer reads the source
  both ways with hidden_size / 2 cells a direction, as OpenNMT's "brnn" does:
  a source state sees both sides of its context, and each decoder layer starts
  from its encoder layer's forward state at the last word and backward state at
  the first, concatenated.
* At each target position t the decoder's top state h_t attends over the
  encoder's top states (``RecurrentAttention``: score dot / general / concat,
  scope global / local_m / local_p with window D), giving the context c_t.
* Attentional state h~_t = tanh(W_c [c_t; h_t]); p(y_t) = softmax(W_s h~_t).
* Input feeding (hparam input_feeding, on by default): h~_{t-1} is
  concatenated to the decoder's input at t, so past alignment decisions
  inform the next ones. Without it the decoder runs over the whole target at
  once (the fused LSTM) and attention is computed for all positions together.
* Scheduled sampling (Bengio et al. 2015; hparams scheduled_sampling_prob and
  scheduled_sampling_warmup_steps, off by default): in training, each sentence's
  decoder reads at each position after the first, with that probability, a
  token drawn from its own prediction at the position before, instead of the
  true previous token, so that it learns to continue from the prefixes it will
  feed itself in decoding; draws obey the problem's decode constraint. The
  probability ramps up linearly over the warmup steps, as tensor2tensor's does.
  Evaluation and decoding are unchanged.

Registered as ``lstm_seq2seq_attention_luong``.
"""
from __future__ import annotations

import keras
import tensorflow as tf

from t2t_lite.contracts.reserved_ids import PAD_ID
from t2t_lite.hparam import HParams
from t2t_lite.layers.recurrent import BidirectionalLSTM, LSTMState, StackedLSTM
from t2t_lite.layers.recurrent_attention import RecurrentAttention
from t2t_lite.models.recurrent import (AttentionSeq2Seq, states_from_dict, states_to_dict,
                                       unroll)
from t2t_lite.registry import register_model


@register_model
class LSTMSeq2seqAttentionLuong(AttentionSeq2Seq):
    """Stacked LSTMs with Luong attention and (optionally) input feeding."""

    architecture_hparams = AttentionSeq2Seq.architecture_hparams + (
        "attention_size", "attention_score", "attention_scope", "input_feeding",
        "bidirectional_encoder")
    required_hparams = AttentionSeq2Seq.required_hparams + (
        "attention_window", "scheduled_sampling_prob", "scheduled_sampling_warmup_steps")

    @classmethod
    def architecture_keys(cls, hparams: HParams) -> tuple[str, ...]:
        # A local scope's window decides which source states the weights combine;
        # global attention ignores it.
        local = hparams.attention_scope != "global"
        return cls.architecture_hparams + (("attention_window",) if local else ())

    def __init__(self, hparams: HParams, vocab_size: int, input_vocab_size: int | None = None,
                 **kwargs):
        super().__init__(hparams, vocab_size, input_vocab_size, **kwargs)
        self.check_layers_match()
        hidden, embedding = hparams.hidden_size, hparams.embedding_size
        init = self.initializers
        if hparams.bidirectional_encoder and hidden % 2:
            raise ValueError(f"bidirectional_encoder=true gives each direction hidden_size / 2 "
                             f"cells: hidden_size must be even, got {hidden}")
        encoder = BidirectionalLSTM if hparams.bidirectional_encoder else StackedLSTM
        self.encoder = encoder(hidden // 2 if hparams.bidirectional_encoder else hidden,
                               hparams.num_encoder_layers, hparams.dropout, init, name="encoder")
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
        # Only a sampling model has the draw's seed state (in its checkpoints).
        self.sampling_seed = (keras.random.SeedGenerator(name="scheduled_sampling")
                              if hparams.scheduled_sampling_prob else None)

    def encode(self, inputs: tf.Tensor, training: bool = False) -> dict[str, tf.Tensor]:
        """inputs [B, S] -> {"memory": top encoder states [B, S, h], "keys", "padding",
        "layer_i/h", "layer_i/c": final encoder states, and with input feeding
        "attentional": h~_0 = 0}."""
        embedded, mask, padding = self.embed_source(inputs)
        memory, states = self.encoder(embedded, sequence_mask=mask, training=training)
        if self.hparams.bidirectional_encoder:
            states = [_joined(forward, backward) for forward, backward in states]
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
        if training and self.sampling_seed is not None:
            return self._scheduled_sampling(features, state, self.sampling_probability())
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

    @property
    def feeds_itself_in_training(self) -> bool:
        return self.sampling_seed is not None

    def sampling_probability(self) -> tf.Tensor:
        """Scheduled sampling's probability now: scheduled_sampling_prob, reached
        linearly over the first scheduled_sampling_warmup_steps of ``training_step``
        (the whole of it at once without a warmup or outside a trainer)."""
        top = tf.constant(self.hparams.scheduled_sampling_prob, tf.float32)
        warmup = self.hparams.scheduled_sampling_warmup_steps
        if not warmup or self.training_step is None:
            return top
        return top * tf.minimum(1.0, tf.cast(self.training_step(), tf.float32) / warmup)

    def _scheduled_sampling(self, features: dict[str, tf.Tensor], state: dict[str, tf.Tensor],
                            probability: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        """Training logits [B, T, V] and weights when the decoder reads, at each
        position after the first, with ``probability`` per sentence and position, a
        token drawn from its own logits one position back instead of the true one.
        Draws obey ``sampling_constraint`` (the problem's decode constraint, which
        the trainer sets: a parser draws only well-formed continuations, with each
        word slot's input word, as its decoding does). The loop computes the logits
        itself, since each draw needs the last ones."""
        targets = tf.cast(features["targets"], tf.int32)
        batch = tf.shape(targets)[0]
        constraint = self.sampling_constraint
        state = {**state, "fed": tf.fill([batch], PAD_ID)}  # the start symbol
        if constraint is not None:
            state["constraint"] = constraint.initial_state(
                features["inputs"], 1, tf.constant(self.hparams.max_length, tf.int32))

        def step(target: tf.Tensor, t: tf.Tensor, state: dict[str, tf.Tensor]):
            outputs, state = self._step(self.target_embedding(state["fed"]), t, state,
                                        training=True)
            logits = self.logits(outputs["attentional"], training=True)
            scores = logits
            if constraint is not None:
                scores = constraint.constrain(state["constraint"], tf.nn.log_softmax(logits))
            drawn = tf.cast(keras.random.categorical(scores, 1, seed=self.sampling_seed)[:, 0],
                            tf.int32)
            own = keras.random.uniform([batch], seed=self.sampling_seed) < probability
            fed = tf.where(own, drawn, target[:, 0])
            state = {**state, "fed": fed}
            if constraint is not None:
                state["constraint"] = constraint.update(state["constraint"], fed)
            return {"logits": logits, "weights": outputs["weights"]}, state

        # Each step reads the true token of its position (targets[:, t]) and embeds
        # what it was fed.
        steps = unroll(step, targets[:, :, None], state,
                       {"logits": tf.float32, "weights": tf.float32})
        return steps["logits"], steps["weights"]

    def decode_step(self, ids: tf.Tensor, step: tf.Tensor,
                    state: dict[str, tf.Tensor]) -> tuple[tf.Tensor, dict[str, tf.Tensor]]:
        outputs, state = self._step(self.target_embedding(ids), step, state)
        return self.logits(outputs["attentional"]), state


def _joined(forward: LSTMState, backward: LSTMState) -> LSTMState:
    """A bidirectional layer's final (h, c) in each direction -> one (h, c) of twice the depth."""
    return tf.concat([forward[0], backward[0]], -1), tf.concat([forward[1], backward[1]], -1)
