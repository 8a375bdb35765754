"""What the RNN encoder-decoders share: embeddings, the (reversed) source, the
softmax layer, and unrolling a decoder step over a target for teacher forcing.

Hparams keys (all typed; see ``t2t_lite/hparams/lstm.py`` for the sets):
hidden_size (LSTM cells per layer), embedding_size, num_encoder_layers,
num_decoder_layers, dropout (on non-recurrent connections: embeddings, between
layers, before the softmax), reverse_source (Sutskever et al.'s reversed
source sentence), shared_embedding (one matrix for source and target
embeddings: only for a vocabulary the inputs and targets share),
shared_embedding_and_softmax_weights (the softmax is the transposed target
embedding, as in the Transformer: its input depth must be embedding_size),
initializer ("uniform" or "keras") and initializer_gain (the uniform range).
"""
from __future__ import annotations

import abc
from typing import Callable

import keras
import tensorflow as tf

from t2t_lite.contracts.reserved_ids import PAD_ID
from t2t_lite.hparam import HParams, HParamsError
from t2t_lite.layers.dropout import Dropout
from t2t_lite.layers.projection import project
from t2t_lite.layers.recurrent import LSTMState, make_initializers, reverse_source
from t2t_lite.models.base import Seq2SeqModel, repeat_for_beams, shift_right
from t2t_lite.registry import snake_case

StepFn = Callable[[tf.Tensor, tf.Tensor, dict], tuple[dict, dict]]


def unroll(step_fn: StepFn, inputs: tf.Tensor, state: dict,
           output_dtypes: dict[str, tf.DType]) -> dict[str, tf.Tensor]:
    """Runs ``step_fn(x_t, t, state) -> (outputs, state)`` over inputs [B, T, D].

    ``outputs`` is a dict of tensors [B, ...] with the keys and dtypes of
    ``output_dtypes`` (the compute dtype for states, float32 for attention
    weights); returns each stacked over time, [B, T, ...]. A ``tf.while_loop``,
    so that teacher forcing runs exactly the decoding step of ``decode_step``.
    """
    length = tf.shape(inputs)[1]
    time_major = tf.transpose(inputs, [1, 0, 2])
    arrays = {key: tf.TensorArray(dtype, size=length) for key, dtype in output_dtypes.items()}

    def body(t, state, arrays):
        outputs, state = step_fn(time_major[t], t, state)
        return t + 1, state, {key: array.write(t, outputs[key]) for key, array in arrays.items()}

    # maximum_iterations: XLA (xla=true) needs the TensorArrays' size bounded.
    _, _, arrays = tf.while_loop(lambda t, *_: t < length, body,
                                 (tf.constant(0), state, arrays), maximum_iterations=length)
    stacked = {key: array.stack() for key, array in arrays.items()}  # [T, B, ...]
    return {key: tf.transpose(value, tf.concat([[1, 0], tf.range(2, tf.rank(value))], 0))
            for key, value in stacked.items()}


def states_to_dict(states: list[LSTMState]) -> dict[str, tf.Tensor]:
    """[(h, c), ...] -> {"layer_0/h": h, "layer_0/c": c, ...} (a flat decode state)."""
    flat = {}
    for i, (h, c) in enumerate(states):
        flat[f"layer_{i}/h"], flat[f"layer_{i}/c"] = h, c
    return flat


def states_from_dict(state: dict[str, tf.Tensor], num_layers: int) -> list[LSTMState]:
    return [(state[f"layer_{i}/h"], state[f"layer_{i}/c"]) for i in range(num_layers)]


class TiedSoftmax:
    """The softmax layer as the transposed target embedding (Press & Wolf 2017;
    T2T's shared_embedding_and_softmax_weights): logits = x E^T, no weights of its
    own. A plain object, so Keras tracks the embedding once, under its own name."""

    def __init__(self, embedding: keras.layers.Embedding):
        self.embedding = embedding

    def build(self, input_shape: tuple) -> None:
        depth, embedding_size = input_shape[-1], self.embedding.output_dim
        if depth != embedding_size:
            raise ValueError(
                f"shared_embedding_and_softmax_weights=true needs the softmax's input, "
                f"{depth} wide here (hidden_size; maxout_units in the Bahdanau model), "
                f"to be embedding_size wide ({embedding_size}): make them equal")

    def __call__(self, x: tf.Tensor) -> tf.Tensor:
        return project(x, self.embedding.embeddings, transpose_kernel=True)


class RecurrentSeq2Seq(Seq2SeqModel):
    """Embeddings, source handling and the softmax of the RNN models."""

    # reverse_source too: weights trained on a reversed source mean nothing on the
    # source in order.
    architecture_hparams = ("hidden_size", "embedding_size", "num_encoder_layers",
                            "num_decoder_layers", "shared_embedding",
                            "shared_embedding_and_softmax_weights", "reverse_source")
    required_hparams = ("dropout", "initializer", "initializer_gain")

    def __init__(self, hparams: HParams, vocab_size: int, input_vocab_size: int | None = None,
                 **kwargs):
        super().__init__(hparams, vocab_size, input_vocab_size, **kwargs)
        if hparams.shared_embedding and not self.shares_vocabulary:
            raise HParamsError(
                "shared_embedding=true ties the source and target embeddings, but the inputs "
                f"and targets have separate vocabularies ({self.input_vocab_size} and "
                f"{vocab_size} ids): set shared_embedding=false (the target embedding and the "
                "softmax still tie with shared_embedding_and_softmax_weights=true)")
        self.initializers = make_initializers(hparams.initializer, hparams.initializer_gain)
        embedding = {"embeddings_initializer": self.initializers.embedding}
        self.source_embedding = keras.layers.Embedding(
            self.input_vocab_size, hparams.embedding_size, name="source_embedding", **embedding)
        self.target_embedding = self.source_embedding if hparams.shared_embedding else (
            keras.layers.Embedding(vocab_size, hparams.embedding_size,
                                   name="target_embedding", **embedding))
        self.output_dropout = Dropout(hparams.dropout)
        self.softmax = (TiedSoftmax(self.target_embedding)
                        if hparams.shared_embedding_and_softmax_weights else
                        keras.layers.Dense(vocab_size, name="softmax",
                                           **self.initializers.dense_kwargs()))

    def check_layers_match(self) -> None:
        """For models whose decoder layers start from the encoder layers' final states."""
        hparams = self.hparams
        if hparams.num_encoder_layers != hparams.num_decoder_layers:
            raise ValueError(f"{snake_case(type(self).__name__)} starts each decoder layer from "
                             "the final state of the encoder layer of the same depth: set "
                             f"num_encoder_layers == num_decoder_layers (got "
                             f"{hparams.num_encoder_layers} and {hparams.num_decoder_layers})")

    def initial_decode_state(self, encoded: dict[str, tf.Tensor], max_decode_length: tf.Tensor,
                             beam_size: int = 1) -> dict[str, tf.Tensor]:
        """An RNN's decode state starts as what ``encode`` returns, a copy for each
        hypothesis (no cache to size)."""
        return repeat_for_beams(encoded, beam_size)

    def build_layers(self, layers_and_depths: list[tuple[keras.layers.Layer | TiedSoftmax, int]]
                     ) -> None:
        """Creates every variable now (decoding may come before any ``call``):
        the embeddings and each (layer, input depth) given."""
        for embedding in (self.source_embedding, self.target_embedding):
            if not embedding.built:
                embedding.build((None, None))
        for layer, depth in layers_and_depths:
            layer.build((None, None, depth))

    def embed_source(self, inputs: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
        """inputs [B, S] -> (embeddings [B, S, E] of the source as the encoder reads
        it (reversed with reverse_source), mask [B, S] bool, padding float32 [B, S])."""
        if self.hparams.reverse_source:
            inputs = reverse_source(inputs)
        mask = tf.not_equal(inputs, PAD_ID)
        return self.source_embedding(inputs), mask, 1.0 - tf.cast(mask, tf.float32)

    def embed_targets(self, targets: tf.Tensor) -> tf.Tensor:
        """The teacher-forced decoder inputs: embeddings of shift_right(targets)."""
        return self.target_embedding(shift_right(targets))

    def logits(self, x: tf.Tensor, training: bool = False) -> tf.Tensor:
        """Decoder outputs [..., d] -> float32 logits [..., vocab_size]."""
        return tf.cast(self.softmax(self.output_dropout(x, training=training)), tf.float32)

    def source_order(self, weights: tf.Tensor, inputs: tf.Tensor) -> tf.Tensor:
        """Attention weights [B, T, S] over the encoder's (maybe reversed) source ->
        the same weights over the positions of ``inputs``."""
        if not self.hparams.reverse_source:
            return weights
        # Reversing the real tokens is its own inverse.
        return reverse_source(inputs, weights, axis=2)


class AttentionSeq2Seq(RecurrentSeq2Seq):
    """An RNN model whose decoder attends over the encoder's states.

    Subclasses create ``self.attention`` (a ``RecurrentAttention``) and define
    ``teacher_forced(features, training) -> (logits [B, T, V], weights [B, T, S])``;
    the decode state holds "memory" [B, S, d], its projection "keys" and the
    source "padding" [B, S] beside the decoder's own tensors.
    """

    def fixed_decode_state_keys(self) -> frozenset[str]:
        return frozenset(("memory", "keys", "padding"))

    def memory_state(self, memory: tf.Tensor, padding: tf.Tensor) -> dict[str, tf.Tensor]:
        """What every step attends over, projected once per sentence."""
        return {"memory": memory, "keys": self.attention.project_memory(memory),
                "padding": padding}

    def attend(self, query: tf.Tensor, step: tf.Tensor,
               state: dict[str, tf.Tensor]) -> tuple[tf.Tensor, tf.Tensor]:
        """One decoder state [B, d] at target position ``step`` -> (context [B, d_memory],
        weights [B, S])."""
        context, weights = self.attention(query[:, None], state["memory"], state["keys"],
                                          state["padding"], positions=step[None])
        return context[:, 0], weights[:, 0]

    @abc.abstractmethod
    def teacher_forced(self, features: dict[str, tf.Tensor],
                       training: bool) -> tuple[tf.Tensor, tf.Tensor]:
        """(logits [B, T, V], attention weights [B, T, S] over the encoder's source)."""

    def call(self, features: dict[str, tf.Tensor], training: bool = False) -> tf.Tensor:
        return self.teacher_forced(features, training)[0]

    def attention_weights(self, features: dict[str, tf.Tensor]) -> dict[str, tf.Tensor]:
        """{"encoder_decoder": [B, 1, 1, T, S]}: one layer, one head."""
        weights = self.teacher_forced(features, training=False)[1]
        return {"encoder_decoder": self.source_order(weights, features["inputs"])[:, None, None]}
