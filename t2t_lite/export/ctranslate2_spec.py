"""A trained Transformer as a CTranslate2 model directory, and text in and out of it.

CTranslate2 (OpenNMT's inference engine: int8 / float16 CPU and GPU kernels) runs
OpenNMT-tf Transformers after conversion; ours convert through its own Python
specification API (``ctranslate2.specs.TransformerSpec``), which needs no PyTorch.
The mapping, ours -> CTranslate2 (its weights are [out, in], Keras kernels [in, out]):

* embeddings: the source, target and softmax matrices (one array when shared:
  CTranslate2 stores it once; separate source and target vocabularies, ours tying
  the target embedding and the softmax only, keep their own arrays and
  vocabulary files), scaled by sqrt(d_model) on input as ours
  (``scale_embeddings``); the softmax is the decoder's ``projection``, no bias;
* positions: the table given explicitly (``position_encodings``): our sinusoids
  (the paper's: sin and cos interleaved, from position 0) are not CTranslate2's
  built-in ones (sines then cosines, from position 1, T2T's frequencies);
  learned positions are their table; relative positions (Shaw et al.) are each
  self-attention's ``relative_position_keys`` / ``_values`` tables, as OpenNMT-tf's
  (the same rows, clip(j - i, -k, k) + k), and then CTranslate2 adds no absolute
  positions: a model with both is refused;
* each block: post-norm or pre-norm (``pre_norm``; pre-norm adds the stacks'
  final LayerNorms), LayerNorm epsilon 1e-6 (CTranslate2's default is 1e-5),
  self-attention Q|K|V fused as our ``qkv_kernel`` is, encoder-decoder attention's
  query and fused K|V, output projections, no attention biases; the FFN's two
  Dense layers with their biases, ReLU;
* vocabularies: each side's tokens in id order (subword pieces, or the word
  vocabulary), ``<pad>`` (PAD_ID) as the decoder start token (our decoder starts
  from PAD), ``<EOS>`` as end token, appended to every source (``add_source_eos``).

CTranslate2 takes and gives tokens, our ids' names: the sentencepiece pieces of a
subword vocabulary, the words of a word vocabulary (docs/EXPORT.md).
``translate_lines`` decodes text lines through a ``ctranslate2.Translator`` with
t2t-decoder's own orchestration (stripping, truncation, batching, length limit).
"""
from __future__ import annotations

import os
from typing import Any

import keras
import numpy as np
import tensorflow as tf

from t2t_lite.contracts.reserved_ids import EOS_ID, PAD_ID
from t2t_lite.data.encoders import TextEncoder, TokenTextEncoder
from t2t_lite.data.problem import Problem
from t2t_lite.data.subword import UNK_ID, SubwordTextEncoder
from t2t_lite.decoding.decoder import decode_lines
from t2t_lite.decoding.factory import Decoding, SearchFn
from t2t_lite.decoding.input_rules import InputRules
from t2t_lite.decoding.settings import DecodeSettings, decode_hparams
from t2t_lite.hparam import HParams
from t2t_lite.layers.embedding import sinusoid_position_encoding
from t2t_lite.layers.layer_norm import LAYER_NORM_EPSILON
from t2t_lite.models.transformer import Transformer

# Rows of the sinusoid table: CTranslate2 refuses positions beyond the table, and
# 1024 is its default max_input_length (its max_decoding_length is 256).
SINUSOID_POSITIONS = 1024


class CTranslate2ExportError(ValueError):
    """A model, vocabulary or setup CTranslate2 cannot take (one line, exit 2)."""


def _ctranslate2_specs() -> Any:
    try:
        from ctranslate2 import specs
    except ImportError:
        raise CTranslate2ExportError(
            "--format=ctranslate2 needs the ctranslate2 package: pip install ctranslate2 "
            "(or pip install 't2t-lite[ctranslate2]')") from None
    return specs


def _unknown_token(encoder: TextEncoder) -> str:
    """The token CTranslate2 maps unknown input tokens to; only the encoders with one
    convert (without it CTranslate2 appends a token the model has no row for)."""
    if isinstance(encoder, SubwordTextEncoder):
        return encoder.token_strings([UNK_ID])[0]
    if isinstance(encoder, TokenTextEncoder):
        return encoder.oov_token
    raise CTranslate2ExportError(
        f"{type(encoder).__name__} vocabularies do not convert to CTranslate2; subword and "
        "word vocabularies do")


def vocabulary(encoder: TextEncoder) -> list[str]:
    """CTranslate2's tokens for ``encoder``: one distinct name per id, in id order."""
    tokens = encoder.token_strings(range(encoder.vocab_size))
    if len(set(tokens)) != len(tokens):
        raise CTranslate2ExportError("the vocabulary names two ids alike, so CTranslate2 "
                                     "could not tell them apart")
    return tokens


def check_convertible(model_cls: type, hparams: HParams, problem: Problem, data_dir: str,
                      decode_overrides: str = "") -> None:
    """Raises ``CTranslate2ExportError`` (before any work) when the model, its problem
    or this Python cannot give a CTranslate2 model that decodes as t2t-decoder, or
    when decode settings are given: CTranslate2 takes them at translate time."""
    _ctranslate2_specs()
    if decode_overrides:
        raise CTranslate2ExportError(
            "decode hparams are not part of a CTranslate2 model: give beam_size and "
            "length_penalty (to sample: beam_size=1, sampling_topk=0, sampling_topp, "
            "sampling_temperature, num_hypotheses) to its translate_batch (docs/EXPORT.md)")
    if not issubclass(model_cls, Transformer):
        raise CTranslate2ExportError(
            f"CTranslate2 runs Transformers; {model_cls.__name__} is not one (CTranslate2 "
            "has no recurrent encoder-decoder): export it as a SavedModel")
    _check_shape(hparams)
    if problem.decode_constraint(data_dir) is not None:
        raise CTranslate2ExportError(
            f"problem {problem.name} constrains its decodes, which CTranslate2 cannot do: "
            "export it as a SavedModel")
    encoders = problem.feature_encoders(data_dir)
    unknown, end = ({_unknown_token(encoders[side]) for side in ("inputs", "targets")},
                    {vocabulary(encoders[side])[EOS_ID] for side in ("inputs", "targets")})
    if len(unknown) > 1 or len(end) > 1:
        # CTranslate2 names one unknown token and one end token for both vocabularies
        # (it appends the end token to every source).
        raise CTranslate2ExportError(
            f"problem {problem.name}'s source and target vocabularies name their unknown "
            f"or end tokens differently (unknown: {' / '.join(sorted(unknown))}; end: "
            f"{' / '.join(sorted(end))}); CTranslate2 takes one name of each for both: "
            "export it as a SavedModel")


def _check_shape(hparams: HParams) -> None:
    """What of a Transformer's shape CTranslate2 can take."""
    keys = hparams.attention_key_channels or hparams.hidden_size
    values = hparams.attention_value_channels or hparams.hidden_size
    if keys != values:
        raise CTranslate2ExportError(
            f"CTranslate2's heads have one depth for keys and values; this model has "
            f"attention_key_channels={keys}, attention_value_channels={values}")
    if (hparams.self_attention_type == "dot_product_relative"
            and hparams.position_embedding != "none"):
        raise CTranslate2ExportError(
            "CTranslate2 adds no absolute positions to a model with relative ones, and "
            f"this one has both (position_embedding={hparams.position_embedding}): export "
            "it as a SavedModel, or train with position_embedding=none")


def _array(variable: Any) -> np.ndarray:
    return np.ascontiguousarray(keras.ops.convert_to_numpy(variable), dtype=np.float32)


def _kernel(variable: Any) -> np.ndarray:
    """A Keras kernel [in, out] as CTranslate2's weight [out, in]."""
    return np.ascontiguousarray(_array(variable).T)


def _set_norm(spec: Any, norm: keras.layers.LayerNormalization) -> None:
    spec.gamma, spec.beta = _array(norm.gamma), _array(norm.beta)


def _set_feed_forward(spec: Any, block: Any) -> None:
    _set_norm(spec.layer_norm, block.feed_forward_norm)
    for linear, dense in ((spec.linear_0, block.feed_forward.filter_dense),
                          (spec.linear_1, block.feed_forward.output_dense)):
        linear.weight, linear.bias = _kernel(dense.kernel), _array(dense.bias)


def _set_self_attention(spec: Any, block: Any) -> None:
    _set_norm(spec.layer_norm, block.self_attention_norm)
    attention = block.self_attention
    spec.linear[0].weight = _kernel(attention.qkv_kernel)
    spec.linear[1].weight = _kernel(attention.output_kernel)
    if attention.max_relative_position:
        spec.relative_position_keys = _array(attention.relative_position_keys)
        spec.relative_position_values = _array(attention.relative_position_values)


def _set_cross_attention(spec: Any, block: Any) -> None:
    _set_norm(spec.layer_norm, block.cross_attention_norm)
    spec.linear[0].weight = _kernel(block.cross_attention.query_kernel)
    spec.linear[1].weight = _kernel(block.cross_attention.key_value_kernel)
    spec.linear[2].weight = _kernel(block.cross_attention.output_kernel)


def _position_table(model: Transformer) -> np.ndarray:
    if model.hparams.position_embedding == "learned":
        return _array(model.positions.embeddings)
    rows = max(SINUSOID_POSITIONS, model.hparams.max_length)
    return _array(sinusoid_position_encoding(tf.range(rows), model.hparams.hidden_size))


def transformer_spec(model: Transformer, source: TextEncoder, target: TextEncoder) -> Any:
    """``model``'s weights and ``source`` / ``target`` vocabularies as a validated
    ``ctranslate2.specs.TransformerSpec``."""
    specs = _ctranslate2_specs()
    hparams = model.hparams
    _check_shape(hparams)
    head_dim = (hparams.attention_key_channels or hparams.hidden_size) // hparams.num_heads
    relative = hparams.self_attention_type == "dot_product_relative"
    shape = {"num_heads": hparams.num_heads, "pre_norm": hparams.normalize_before,
             "head_dim": head_dim, "relative_position": relative}
    encoder = specs.TransformerEncoderSpec(hparams.num_encoder_layers, **shape)
    decoder = specs.TransformerDecoderSpec(hparams.num_decoder_layers, **shape)
    encoder.embeddings[0].weight = _array(model.source_embedding.embeddings)
    decoder.embeddings.weight = _array(model.target_embedding.embeddings)
    if not relative:  # CTranslate2's relative specs have no position table
        positions = _position_table(model)
        encoder.position_encodings.encodings = positions
        decoder.position_encodings.encodings = positions
    decoder.projection.weight = _array(model.softmax_weights.embeddings)
    if hparams.normalize_before:
        _set_norm(encoder.layer_norm, model.encoder_norm)
        _set_norm(decoder.layer_norm, model.decoder_norm)
    for spec, block in zip(encoder.layer, model.encoder_blocks):
        _set_self_attention(spec.self_attention, block)
        _set_feed_forward(spec.ffn, block)
    for spec, block in zip(decoder.layer, model.decoder_blocks):
        _set_self_attention(spec.self_attention, block)
        _set_cross_attention(spec.attention, block)
        _set_feed_forward(spec.ffn, block)

    spec = specs.TransformerSpec(encoder, decoder)
    source_tokens, target_tokens = vocabulary(source), vocabulary(target)
    for side, tokens, rows in (("inputs", source_tokens, model.input_vocab_size),
                               ("targets", target_tokens, model.vocab_size)):
        if len(tokens) != rows:
            raise CTranslate2ExportError(f"the {side} vocabulary has {len(tokens)} tokens "
                                         f"but the model {rows} rows")
    spec.register_source_vocabulary(source_tokens)
    spec.register_target_vocabulary(target_tokens)
    config = spec.config
    config.layer_norm_epsilon = LAYER_NORM_EPSILON
    config.decoder_start_token = config.bos_token = target_tokens[PAD_ID]
    config.eos_token = target_tokens[EOS_ID]
    config.unk_token = _unknown_token(target)
    config.add_source_eos = True
    spec.validate()
    return spec


def export_ctranslate2(model: Any, problem: Problem, data_dir: str, export_dir: str,
                       decode_overrides: str = "") -> int:
    """Writes ``model`` as a CTranslate2 model directory (model.bin, config.json, the
    vocabulary) into the existing folder ``export_dir``, weights in float32: the user
    picks int8 or float16 at load time (``compute_type``). Returns its size in bytes."""
    check_convertible(type(model), model.hparams, problem, data_dir, decode_overrides)
    encoders = problem.feature_encoders(data_dir)
    spec = transformer_spec(model, encoders["inputs"], encoders["targets"])
    spec.optimize()  # shared matrices stored once
    spec.save(export_dir)
    return sum(os.path.getsize(os.path.join(export_dir, name))
               for name in os.listdir(export_dir))


def ctranslate2_search(translator: Any, source: TextEncoder, target: TextEncoder,
                       beam_size: int, length_penalty: float) -> SearchFn:
    """A t2t-decoder search function (``decode_lines``) that runs ``translator`` (a
    ``ctranslate2.Translator`` of an export): ids [B, S] -> tokens -> its best
    hypothesis -> (ids [B, 1, L], scores [B, 1]). It searches, never samples:
    CTranslate2 draws from one random stream per process (``set_random_seed`` seeds
    the Translators made after it), so its samples would depend on the batches and
    the calls before, where t2t-decoder's depend on the seed and the line alone."""
    source_names = vocabulary(source)
    target_ids = {token: i for i, token in enumerate(vocabulary(target))}

    def search(inputs: np.ndarray, max_decode_length: int,
               line_numbers: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        # Each row is its ids, EOS, PAD: CTranslate2 is given the ids and appends EOS.
        batch = [[source_names[i] for i in row[:list(row).index(EOS_ID)]] for row in inputs]
        results = translator.translate_batch(
            batch, beam_size=beam_size, length_penalty=length_penalty,
            max_decoding_length=max_decode_length, max_input_length=0, return_scores=True)
        ids = np.full((len(batch), 1, max_decode_length + 1), PAD_ID, np.int32)
        scores = np.zeros((len(batch), 1), np.float32)
        for row, result in enumerate(results):
            hypothesis = [target_ids[token] for token in result.hypotheses[0]] + [EOS_ID]
            ids[row, 0, :len(hypothesis)] = hypothesis
            scores[row, 0] = result.scores[0]
        return ids, scores
    return search


def ctranslate2_decoding(translator: Any, encoder: TextEncoder, *, beam_size: int = 4,
                         length_penalty: float = 0.0, extra_length: int = 50,
                         max_input_length: int = 0, batch_size: int = 32,
                         target_encoder: TextEncoder | None = None) -> Decoding:
    """``translator`` as a t2t-decoder ``Decoding``: lines go through it as through
    t2t-decoder (``decode_lines``, ``decode_from_file``: stripping, truncation at
    ``max_input_length``, EOS, batches longest first, each decoding up to its longest
    input plus ``extra_length`` tokens). ``length_penalty`` is CTranslate2's:
    docs/EXPORT.md says where it and our ``alpha`` agree."""
    target_encoder = target_encoder or encoder
    search = ctranslate2_search(translator, encoder, target_encoder, beam_size,
                                length_penalty)
    settings = DecodeSettings(  # checked as --decode_hparams are; CTranslate2 runs no XLA
        **decode_hparams(f"beam_size={beam_size},extra_length={extra_length},"
                         f"batch_size={batch_size},max_input_length={max_input_length}",
                         source="ctranslate2_decoding").values(), xla=False)
    rules = InputRules(max_input_length, max_positions=None)
    return Decoding(search, settings, rules, encoder, target_encoder)


def translate_lines(translator: Any, encoder: TextEncoder, lines: list[str],
                    **options: Any) -> list[str]:
    """One output line per input line through ``translator``; ``options`` are
    ``ctranslate2_decoding``'s."""
    return decode_lines(lines, ctranslate2_decoding(translator, encoder, **options))
