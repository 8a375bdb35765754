"""Sutskever et al. (2014), "Sequence to Sequence Learning with Neural Networks".

A stacked LSTM reads the source (reversed, with hparam reverse_source: "we
found it extremely valuable to reverse the order of the words of the input
sentence"); its final (h, c) of each layer start the decoder's layer of the
same depth; the decoder's top output feeds a softmax. No attention: the whole
source must pass through the final states. Registered as ``lstm_seq2seq``
(T2T's name).
"""
from __future__ import annotations

import tensorflow as tf

from t2t_lite.hparam import HParams
from t2t_lite.layers.recurrent import StackedLSTM
from t2t_lite.models.recurrent import RecurrentSeq2Seq, states_from_dict, states_to_dict
from t2t_lite.registry import register_model


@register_model
class LSTMSeq2seq(RecurrentSeq2Seq):
    """Encoder-decoder LSTM whose only link is the encoder's final states."""

    def __init__(self, hparams: HParams, vocab_size: int, input_vocab_size: int | None = None,
                 **kwargs):
        super().__init__(hparams, vocab_size, input_vocab_size, **kwargs)
        self.check_layers_match()
        layer_args = (hparams.hidden_size, hparams.num_encoder_layers, hparams.dropout,
                      self.initializers)
        self.encoder = StackedLSTM(*layer_args, name="encoder")
        self.decoder = StackedLSTM(*layer_args, name="decoder")
        self.build_layers([(self.encoder, hparams.embedding_size),
                           (self.decoder, hparams.embedding_size),
                           (self.softmax, hparams.hidden_size)])

    def encode(self, inputs: tf.Tensor, training: bool = False) -> dict[str, tf.Tensor]:
        """inputs [B, S] -> the encoder's final states {"layer_i/h", "layer_i/c"}, [B, units]."""
        embedded, mask, _ = self.embed_source(inputs)
        _, states = self.encoder(embedded, sequence_mask=mask, training=training)
        return states_to_dict(states)

    def call(self, features: dict[str, tf.Tensor], training: bool = False) -> tf.Tensor:
        encoded = self.encode(features["inputs"], training=training)
        outputs, _ = self.decoder(
            self.embed_targets(features["targets"]),
            initial_states=states_from_dict(encoded, self.hparams.num_decoder_layers),
            training=training)
        return self.logits(outputs, training=training)

    def decode_step(self, ids: tf.Tensor, step: tf.Tensor,
                    state: dict[str, tf.Tensor]) -> tuple[tf.Tensor, dict[str, tf.Tensor]]:
        states = states_from_dict(state, self.hparams.num_decoder_layers)
        output, states = self.decoder.step(self.target_embedding(ids), states)
        return self.logits(output), states_to_dict(states)
