"""The Transformer of "Attention Is All You Need" (Vaswani et al. 2017).

An encoder stack and a decoder stack of ``EncoderBlock`` / ``DecoderBlock``;
token embeddings scaled by sqrt(d_model) plus position signals (none with
relative positions only: Shaw et al. 2018, in the blocks' self-attention), dropped out
(hparam layer_prepostprocess_dropout); with pre-norm a final LayerNorm on each
stack's output; logits from the (optionally shared) embedding matrix. Reads the
hparams keys documented in ``t2t_lite/hparams/transformer.py``.
"""
from __future__ import annotations

import keras
import tensorflow as tf

from t2t_lite.contracts.reserved_ids import PAD_ID
from t2t_lite.hparam import HParams
from t2t_lite.hparams.transformer import POSITION_EMBEDDINGS, SELF_ATTENTION_TYPES
from t2t_lite.layers.attention import (ancestry_bias, causal_bias, padding_bias,
                                       write_entries)
from t2t_lite.layers.dropout import Dropout
from t2t_lite.layers.embedding import (LearnedPositionEmbedding, SinusoidPositionEncoding,
                                       TokenEmbedding, step_logits)
from t2t_lite.layers.layer_norm import layer_norm
from t2t_lite.layers.transformer_blocks import DecoderBlock, EncoderBlock
from t2t_lite.models.base import Seq2SeqModel, shift_right
from t2t_lite.registry import register_model

# Without XLA a decode step attends over whole blocks of this many steps (the
# bias hides entries not written yet): oneDNN keeps state for every matmul shape
# it meets, and a new shape every step left a decode holding 1.4x its caches (base,
# beam 4, 256 tokens, 2-core Intel Xeon: peak 2,187 MB, blocks of 32 steps 2,010).
# Blocks of 8 cost 1% more memory than 32 and attend over at most 7 masked steps:
# a 20-token sentence attends over 24 steps, not 32 (on an AVX2 CPU a step's
# batched products over 160 entries took 3.4x those over 80: git show
# 5b76ac0:docs/SPEED.md).
ATTENDED_STEP_BLOCK = 8


def _whole_blocks(steps: tf.Tensor | int) -> tf.Tensor | int:
    """``steps`` rounded up to whole ``ATTENDED_STEP_BLOCK``s."""
    return -(-steps // ATTENDED_STEP_BLOCK) * ATTENDED_STEP_BLOCK


@register_model
class Transformer(Seq2SeqModel):
    """Encoder-decoder Transformer, post-norm (the paper) or pre-norm."""

    architecture_hparams = ("hidden_size", "filter_size", "num_heads", "num_encoder_layers",
                     "num_decoder_layers", "attention_key_channels",
                     "attention_value_channels", "normalize_before", "position_embedding",
                     "shared_embedding_and_softmax_weights", "self_attention_type",
                     "max_relative_position")
    required_hparams = ("layer_prepostprocess_dropout", "attention_dropout", "relu_dropout",
                        "xla")

    @classmethod
    def architecture_keys(cls, hparams: HParams) -> tuple[str, ...]:
        # Learned positions have one vector per position up to max_length.
        learned = hparams.position_embedding == "learned"
        return cls.architecture_hparams + (("max_length",) if learned else ())

    @property
    def max_positions(self) -> int | None:
        learned = self.hparams.position_embedding == "learned"
        return self.hparams.max_length if learned else None

    def __init__(self, hparams: HParams, vocab_size: int, input_vocab_size: int | None = None,
                 **kwargs):
        super().__init__(hparams, vocab_size, input_vocab_size, **kwargs)
        hidden_size = hparams.hidden_size
        for key, choices in (("position_embedding", POSITION_EMBEDDINGS),
                             ("self_attention_type", SELF_ATTENTION_TYPES)):
            if getattr(hparams, key) not in choices:
                raise ValueError(f"unknown {key}={getattr(hparams, key)!r}; "
                                 f"use one of {', '.join(choices)}")
        self.source_embedding, self.target_embedding, self.softmax_weights = (
            self._token_embeddings())
        self.positions = None
        if hparams.position_embedding == "timing":
            self.positions = SinusoidPositionEncoding(hidden_size, name="positions")
        elif hparams.position_embedding == "learned":
            self.positions = LearnedPositionEmbedding(hparams.max_length, hidden_size,
                                                      name="positions")
        relative = hparams.self_attention_type == "dot_product_relative"
        self.embedding_dropout = Dropout(hparams.layer_prepostprocess_dropout)
        block_args = {
            "hidden_size": hidden_size, "filter_size": hparams.filter_size,
            "num_heads": hparams.num_heads, "key_channels": hparams.attention_key_channels,
            "value_channels": hparams.attention_value_channels,
            "residual_dropout": hparams.layer_prepostprocess_dropout,
            "attention_dropout": hparams.attention_dropout,
            "relu_dropout": hparams.relu_dropout, "normalize_before": hparams.normalize_before,
            "max_relative_position": hparams.max_relative_position if relative else 0}
        self.encoder_blocks = [EncoderBlock(**block_args, name=f"encoder_{i}")
                               for i in range(hparams.num_encoder_layers)]
        self.decoder_blocks = [DecoderBlock(**block_args, name=f"decoder_{i}")
                               for i in range(hparams.num_decoder_layers)]
        if hparams.normalize_before:
            self.encoder_norm = layer_norm("encoder_norm")
            self.decoder_norm = layer_norm("decoder_norm")
        self.build()

    def _token_embeddings(self) -> tuple[TokenEmbedding, TokenEmbedding, TokenEmbedding]:
        """(source embedding, target embedding, softmax): with
        shared_embedding_and_softmax_weights one matrix for all three when the
        vocabulary is shared; for separate vocabularies, as in T2T, the target
        embedding and the softmax (one vocabulary) and the source's of its own."""
        vocab_size, hidden_size = self.vocab_size, self.hparams.hidden_size
        tied = self.hparams.shared_embedding_and_softmax_weights
        if tied and self.shares_vocabulary:
            shared = TokenEmbedding(vocab_size, hidden_size, name="shared_embedding")
            return shared, shared, shared
        source = TokenEmbedding(self.input_vocab_size, hidden_size, name="source_embedding")
        target = TokenEmbedding(vocab_size, hidden_size, name="target_embedding")
        softmax = target if tied else TokenEmbedding(vocab_size, hidden_size, name="softmax")
        return source, target, softmax

    def build(self, input_shape=None) -> None:
        """Creates every variable now: decoding may come before any ``call``."""
        shape = (None, None, self.hparams.hidden_size)
        positions = [self.positions] if self.positions is not None else []
        layers = [self.source_embedding, self.target_embedding, self.softmax_weights,
                  *positions, *self.encoder_blocks, *self.decoder_blocks]
        if self.hparams.normalize_before:
            layers += [self.encoder_norm, self.decoder_norm]
        for layer in layers:
            if not layer.built:
                layer.build(shape)

    def _embed(self, embedding: TokenEmbedding, ids: tf.Tensor, positions: tf.Tensor,
               training: bool) -> tf.Tensor:
        """sqrt(d)-scaled token embeddings plus position signals, dropped out."""
        x = embedding(ids)
        if self.positions is not None:
            x += self.positions(positions)
        return self.embedding_dropout(x, training=training)

    def encode(self, inputs: tf.Tensor, training: bool = False) -> dict[str, tf.Tensor]:
        """inputs [B, S] -> {"encoder_output": [B, S, d_model], "encoder_padding": [B, S]}.

        encoder_padding is float32, 1.0 where inputs == PAD_ID.
        """
        return self._encode(inputs, training, attention=None)

    def _encode(self, inputs: tf.Tensor, training: bool,
                attention: list[dict] | None) -> dict[str, tf.Tensor]:
        """``encode``; each block's attention weights are appended to ``attention``
        when it is a list."""
        padding = tf.cast(tf.equal(inputs, PAD_ID), tf.float32)
        x = self._embed(self.source_embedding, inputs, tf.range(tf.shape(inputs)[1]), training)
        bias = padding_bias(padding)
        for block in self.encoder_blocks:
            if attention is None:
                x = block(x, bias, training=training)
            else:
                x, weights = block(x, bias, training=training, return_attention=True)
                attention.append(weights)
        if self.hparams.normalize_before:
            x = self.encoder_norm(x)
        return {"encoder_output": x, "encoder_padding": padding}

    def _logits(self, x: tf.Tensor, output_rows: tf.Tensor | None = None) -> tf.Tensor:
        """Decoder outputs [B, T, d] -> float32 logits [B, T, V]; for a decode step
        (T = 1) with ``output_rows`` (``output_subset``'s), [B, 1, K] of those rows."""
        if self.hparams.normalize_before:
            x = self.decoder_norm(x)
        if output_rows is not None:
            logits = step_logits(x[:, 0], tf.cast(output_rows, x.dtype))[:, None]
            return tf.cast(logits, tf.float32)
        return tf.cast(self.softmax_weights.logits(x), tf.float32)

    def call(self, features: dict[str, tf.Tensor], training: bool = False) -> tf.Tensor:
        """{"inputs": [B, S], "targets": [B, T]} -> logits [B, T, vocab_size]."""
        return self._teacher_forced(features, training, attention=None)

    def _teacher_forced(self, features: dict[str, tf.Tensor], training: bool,
                        attention: list[dict] | None) -> tf.Tensor:
        encoded = self._encode(features["inputs"], training, attention)
        targets = features["targets"]
        length = tf.shape(targets)[1]
        x = self._embed(self.target_embedding, shift_right(targets), tf.range(length), training)
        self_bias = causal_bias(length)
        memory_bias = padding_bias(encoded["encoder_padding"])
        for block in self.decoder_blocks:
            if attention is None:
                x = block(x, self_bias, encoded["encoder_output"], memory_bias,
                          training=training)
            else:
                x, weights = block(x, self_bias, encoded["encoder_output"], memory_bias,
                                   training=training, return_attention=True)
                attention.append(weights)
        return self._logits(x)

    def logits_and_cross_attention(self, features: dict[str, tf.Tensor], training: bool,
                                   layer: int) -> tuple[tf.Tensor, tf.Tensor]:
        """``call``'s logits and decoder ``layer``'s (Python's indexing, clamped to the
        stack) weights over the encoder output, [B, heads, T, S], from one pass: what
        guided alignment training supervises."""
        attention: list[dict] = []
        logits = self._teacher_forced(features, training, attention)
        layers = [weights["encoder_decoder"] for weights in attention
                  if "encoder_decoder" in weights]
        index = max(len(layers) + layer, 0) if layer < 0 else min(layer, len(layers) - 1)
        return logits, layers[index]

    def attention_weights(self, features: dict[str, tf.Tensor]) -> dict[str, tf.Tensor]:
        """{"encoder_self": [B, layers, heads, S, S], "decoder_self": [.., T, T],
        "encoder_decoder": [.., T, S]}, from one teacher-forced pass."""
        attention: list[dict] = []
        self._teacher_forced(features, training=False, attention=attention)
        kinds = ("encoder_self", "decoder_self", "encoder_decoder")
        return {kind: tf.stack([weights[kind] for weights in attention if kind in weights],
                               axis=1) for kind in kinds}

    def initial_decode_state(self, encoded: dict[str, tf.Tensor], max_decode_length: tf.Tensor,
                             beam_size: int = 1) -> dict[str, tf.Tensor]:
        """A flat dict, every tensor once per input (B rows), however many hypotheses:
        "encoder_padding" [B, S]; for decoder block i, "decoder_{i}/memory_keys" and
        "/memory_values" [B, h, S, d] (the encoder output projected once; fixed) and
        "/keys", "/values" [B, h, steps * beam_size, d], self-attention cache buffers
        that each step writes ``beam_size`` entries into, in place, and that are never
        reordered; "ancestry" int32 [B, beam, steps]: for each hypothesis and step,
        the hypothesis of that step it descends from (-1: not decoded yet;
        ``t2t_lite.layers.attention.ancestry_bias``). ``steps`` is
        ``max_decode_length`` (under ``xla``, where the search sizes the buffers) or
        that rounded up to whole ``ATTENDED_STEP_BLOCK``s. The buffers hold the
        decode's length from the start, so memory stays flat as it goes."""
        steps = max_decode_length if self.hparams.xla else _whole_blocks(max_decode_length)
        padding = encoded["encoder_padding"]
        state = {"encoder_padding": padding,
                 "ancestry": tf.fill([tf.shape(padding)[0], beam_size, steps], -1)}
        for block in self.decoder_blocks:
            cache = block.initial_cache(encoded["encoder_output"], steps, beam_size)
            state.update({f"{block.name}/{key}": value for key, value in cache.items()})
        return state

    def fixed_decode_state_keys(self) -> frozenset[str]:
        return frozenset(["encoder_padding"] + [
            f"{block.name}/{key}" for block in self.decoder_blocks
            for key in ("memory_keys", "memory_values")])

    def reorder_decode_state(self, state: dict[str, tf.Tensor],
                             rows: tf.Tensor) -> dict[str, tf.Tensor]:
        """Only the ancestry moves: each hypothesis takes its parent's (the caches
        keep every entry where it was written)."""
        beam_size = state["ancestry"].shape[1]
        parents = tf.reshape(rows, [-1, beam_size]) % beam_size
        return {**state, "ancestry": tf.gather(state["ancestry"], parents, batch_dims=1)}

    def select_decode_items(self, state: dict[str, tf.Tensor], items: tf.Tensor,
                            beam_size: int, batch_size: tf.Tensor) -> dict[str, tf.Tensor]:
        """Every tensor holds one row per input: the rows of ``items``."""
        return {key: tf.gather(value, items) for key, value in state.items()}

    def resize_decode_state(self, state: dict[str, tf.Tensor],
                            length: int) -> dict[str, tf.Tensor]:
        """Under ``xla``, the self-attention buffers padded with zeros to ``length``
        steps and the ancestry with -1: a compiled step attends over its whole
        buffer, masked, so the search starts with short buffers and makes them
        longer (``t2t_lite.decoding.search_decoder.cache_lengths``). Without
        ``xla`` a step attends over the blocks written so far: nothing to do."""
        if not self.hparams.xla:
            return state
        ancestry = state["ancestry"]
        resized = {**state, "ancestry": tf.pad(ancestry, [[0, 0], [0, 0],
                                                          [0, length - ancestry.shape[2]]],
                                                constant_values=-1)}
        for block in self.decoder_blocks:
            names = {key: f"{block.name}/{key}" for key in ("keys", "values")}
            padded = block.self_attention.pad_cache(
                {key: state[name] for key, name in names.items()}, length, ancestry.shape[1])
            resized.update({name: padded[key] for key, name in names.items()})
        return resized

    def decode_step(self, ids: tf.Tensor, step: tf.Tensor,
                    state: dict[str, tf.Tensor]) -> tuple[tf.Tensor, dict[str, tf.Tensor]]:
        """ids [B * beam] (previous tokens), step (int32 scalar) -> (logits [B * beam, V],
        new state). The beam's hypotheses of one input run as the positions of one
        row ([B, beam, d]), so each step reads an input's memory and cache once."""
        x, new_state = self._decoder_output(ids, step, state)
        return self._logits(x)[:, 0], new_state

    def output_subset(self, output_ids: tf.Tensor) -> tf.Tensor:
        """The softmax matrix's rows of ``output_ids`` [K, d], gathered once a batch."""
        return tf.gather(self.softmax_weights.embeddings, output_ids)

    def decode_step_over(self, ids: tf.Tensor, step: tf.Tensor, state: dict[str, tf.Tensor],
                         output_subset: tf.Tensor) -> tuple[tf.Tensor, dict[str, tf.Tensor]]:
        """``decode_step`` projecting onto ``output_subset``'s rows only."""
        x, new_state = self._decoder_output(ids, step, state)
        return self._logits(x, output_subset)[:, 0], new_state

    def _decoder_output(self, ids: tf.Tensor, step: tf.Tensor, state: dict[str, tf.Tensor]
                        ) -> tuple[tf.Tensor, dict[str, tf.Tensor]]:
        """A decode step's top decoder output [B * beam, 1, d] and the new state."""
        beam_size = state["ancestry"].shape[1]
        ids = tf.reshape(ids, [-1, beam_size])
        ancestry, self_bias, entries = self._step_ancestry(state["ancestry"], ids, step)
        x = self._embed(self.target_embedding, ids, step, training=False)
        memory_bias = padding_bias(state["encoder_padding"])
        new_state = {**state, "ancestry": ancestry}
        for block in self.decoder_blocks:
            prefix = f"{block.name}/"
            cache = {key[len(prefix):]: value for key, value in state.items()
                     if key.startswith(prefix)}
            x, cache = block.decode_step(x, cache, memory_bias, step, self_bias, entries)
            new_state.update({prefix + key: value for key, value in cache.items()})
        return tf.reshape(x, [-1, 1, self.hparams.hidden_size]), new_state

    def _step_ancestry(self, ancestry: tf.Tensor, ids: tf.Tensor, step: tf.Tensor
                       ) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor | None]:
        """The ancestry with this step's entries (each hypothesis its own), the
        self-attention bias, and how many cache entries the step attends over: the
        whole ``ATTENDED_STEP_BLOCK``s written so far, or under ``xla`` (None) the
        whole buffer. The bias hides the entries not written yet and those of other
        hypotheses' ancestors."""
        beam_size = ancestry.shape[1]
        own = tf.zeros_like(ids) + tf.range(beam_size)  # [B, beam]
        if not self.hparams.xla:
            ancestry = write_entries(ancestry, own[:, :, None], step)
            steps = _whole_blocks(step + 1)
            return (ancestry, ancestry_bias(ancestry[:, :, :steps], beam_size, steps * beam_size),
                    steps * beam_size)
        # Static in the XLA search (buffer_lengths); dynamic only when stepped by hand.
        length = ancestry.shape[2] if ancestry.shape[2] is not None else tf.shape(ancestry)[2]
        ancestry = tf.where(tf.equal(tf.range(length), step), own[:, :, None], ancestry)
        return ancestry, ancestry_bias(ancestry, beam_size, length * beam_size), None
