"""Tests for the Transformer model, its embeddings and blocks (its registered hparams
sets: test_transformer_sets.py; decoding step by step: test_transformer_decoding.py)."""
import math

import numpy as np
import pytest
import tensorflow as tf

from t2t_lite import registry
from t2t_lite.builtins import load_builtins
from t2t_lite.decoding.input_rules import InputRules
from t2t_lite.decoding.search_decoder import BeamSearchDecoder
from t2t_lite.decoding.search_options import SearchOptions
from t2t_lite.hparam import HParamsError
from t2t_lite.hparams.transformer import transformer_base, transformer_big, transformer_tiny
from t2t_lite.layers.embedding import sinusoid_position_encoding
from t2t_lite.layers.transformer_blocks import DecoderBlock, EncoderBlock
from t2t_lite.models.base import Seq2SeqModel, shift_right
from t2t_lite.models.transformer import Transformer
from t2t_lite.precision import copy_weights, dtype_policy

from toys import tiny_transformer_hparams
from transformer_cases import (INPUTS, RELATIVE, TARGETS, VOCAB, greedy_teacher_forced, logits,
                               tiny_model)

# The methods every model must define (docs/DESIGN.md, "Model interface").
INTERFACE = {"call", "encode", "initial_decode_state", "decode_step"}


def test_registered_and_abstract_base():
    """"transformer" is the Transformer, a complete Seq2SeqModel; the base leaves each
    interface method to the model, so a model lacking any one is refused when built."""
    load_builtins()
    assert registry.models["transformer"] is Transformer
    assert issubclass(Transformer, Seq2SeqModel) and not Transformer.__abstractmethods__
    assert Seq2SeqModel.__abstractmethods__ == INTERFACE
    for missing in sorted(INTERFACE):
        defined = {name: lambda self, *args, **kwargs: None for name in INTERFACE - {missing}}
        lacking = type(f"Lacks_{missing}", (Seq2SeqModel,), defined)
        with pytest.raises(TypeError, match=f"abstract.*{missing}"):
            lacking(transformer_tiny(), VOCAB)


def test_shift_right_starts_with_pad():
    np.testing.assert_array_equal(shift_right(tf.constant([[5, 6, 1]])).numpy(), [[0, 5, 6]])


def test_logits_shape_and_causal_mask():
    model = tiny_model()
    before = logits(model, INPUTS, TARGETS)
    assert before.shape == (2, 5, VOCAB) and before.dtype == np.float32
    changed = tf.concat([TARGETS[:, :3], [[4, 4], [4, 4]]], axis=1)
    after = logits(model, INPUTS, changed)
    # targets[:, 3] is fed to position 4 only: positions 0..3 cannot see it.
    np.testing.assert_allclose(before[:, :4], after[:, :4], atol=1e-5)
    assert not np.allclose(before[:, 4], after[:, 4])


def test_extra_source_padding_changes_nothing():
    model = tiny_model()
    padded = tf.pad(INPUTS, [[0, 0], [0, 3]])
    np.testing.assert_allclose(logits(model, INPUTS, TARGETS), logits(model, padded, TARGETS),
                               atol=1e-5)


@pytest.mark.parametrize("kind", [EncoderBlock, DecoderBlock])
def test_blocks_get_config_round_trip(kind):
    config = {"hidden_size": 8, "filter_size": 16, "num_heads": 2, "key_channels": 4,
              "residual_dropout": 0.1, "normalize_before": True, "max_relative_position": 3}
    block = kind(**config, name="block")
    twin = kind.from_config(block.get_config())
    assert twin.get_config() == block.get_config()
    assert twin.self_attention.max_relative_position == 3
    if kind is DecoderBlock:  # relative positions are the self-attention's only
        assert "max_relative_position" not in twin.cross_attention.get_config()


def test_shared_embedding_is_one_scaled_variable_reused_for_softmax():
    model = tiny_model()
    matrices = [v for v in model.trainable_variables if tuple(v.shape) == (VOCAB, 16)]
    assert len(matrices) == 1
    weights = matrices[0].numpy()
    ids = tf.constant([[3, 7]])
    np.testing.assert_allclose(model.source_embedding(ids).numpy()[0],
                               weights[[3, 7]] * math.sqrt(16), rtol=1e-6)
    assert model.target_embedding is model.source_embedding is model.softmax_weights
    x = np.random.default_rng(0).normal(size=(1, 2, 16)).astype(np.float32)
    np.testing.assert_allclose(model.softmax_weights.logits(tf.constant(x)).numpy(),
                               x @ weights.T, rtol=1e-5, atol=1e-5)
    unshared = tiny_model(shared_embedding_and_softmax_weights=False)
    assert len([v for v in unshared.trainable_variables if tuple(v.shape) == (VOCAB, 16)]) == 3


# Separate source and target vocabularies: 11 source ids (INPUTS fit), VOCAB target ids.
SOURCE_VOCAB = 11


@pytest.mark.parametrize("tied", [True, False])
@pytest.mark.parametrize("source_vocab", [SOURCE_VOCAB, VOCAB])
def test_separate_vocabularies_tie_the_target_embedding_and_softmax_only(tied, source_vocab):
    """As T2T: with shared_embedding_and_softmax_weights the target embedding is the
    softmax; the source, even of the same size, has a matrix of its own."""
    model = tiny_model(input_vocab_size=source_vocab, shared_embedding_and_softmax_weights=tied)
    assert not model.shares_vocabulary and model.input_vocab_size == source_vocab
    assert model.source_embedding is not model.target_embedding
    assert (model.softmax_weights is model.target_embedding) == tied
    assert tuple(model.source_embedding.embeddings.shape) == (source_vocab, 16)
    matrices = {v.path.split("/", 1)[1] for v in model.trainable_variables if len(v.shape) == 2
                and v.shape[1] == 16 and v.shape[0] in (source_vocab, VOCAB)}
    assert matrices == {"source_embedding/embeddings", "target_embedding/embeddings",
                        *(() if tied else ("softmax/embeddings",))}
    assert logits(model, INPUTS, TARGETS).shape == (2, 5, VOCAB)


def test_separate_vocabularies_decode_incrementally_as_teacher_forced():
    model = tiny_model(input_vocab_size=SOURCE_VOCAB, seed=3)
    expected = logits(model, INPUTS, TARGETS)
    np.testing.assert_allclose(greedy_teacher_forced(model, INPUTS, TARGETS, tf.constant(5)),
                               expected, atol=1e-4)


@pytest.mark.parametrize("hparams_fn, millions", [(transformer_base, 65), (transformer_big, 213)])
def test_paper_parameter_counts(hparams_fn, millions):
    # A graph-mode build creates the variables without running their initializers.
    with tf.Graph().as_default():
        count = Transformer(hparams_fn(), 37000).count_params()
    assert abs(count / 1e6 - millions) <= 0.05 * millions, count


def test_every_variable_gets_a_gradient():
    model = tiny_model(normalize_before=True, shared_embedding_and_softmax_weights=False)
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(model({"inputs": INPUTS, "targets": TARGETS}, training=True))
    gradients = tape.gradient(loss, model.trainable_variables)
    assert [v.path for v, g in zip(model.trainable_variables, gradients) if g is None] == []


def test_dropout_only_in_training():
    model = tiny_model(layer_prepostprocess_dropout=0.3, attention_dropout=0.3,
                       relu_dropout=0.3)
    features = {"inputs": INPUTS, "targets": TARGETS}
    np.testing.assert_array_equal(model(features).numpy(), model(features, training=False))
    assert not np.allclose(model(features, training=True), model(features))


def test_sinusoids_follow_the_paper_formula():
    depth = 8
    table = sinusoid_position_encoding(tf.range(60), depth).numpy()
    for position in (1, 7, 59):
        for i in range(depth // 2):
            angle = position / 10000 ** (2 * i / depth)
            assert table[position, 2 * i] == pytest.approx(math.sin(angle), abs=1e-5)
            assert table[position, 2 * i + 1] == pytest.approx(math.cos(angle), abs=1e-5)


def test_position_errors():
    with pytest.raises(ValueError, match="position_embedding"):
        tiny_model(position_embedding="rotary")
    model = tiny_model(position_embedding="learned", max_length=4)
    with pytest.raises(tf.errors.InvalidArgumentError, match="max_length"):
        model.encode(tf.ones([1, 5], tf.int32))


def test_relative_positions_replace_or_join_absolute_ones():
    """Relative positions add two tables [2k+1, d_head] to each self-attention, none to
    the cross-attention; with position_embedding=none the model has no position layer,
    and neither bounds the lengths it takes."""
    model = tiny_model(**RELATIVE)
    relative = sorted(v.path for v in model.variables if "relative" in v.path)
    assert len(relative) == 2 * (2 + 2) and not any("cross" in path for path in relative)
    assert all(tuple(v.shape) == (5, 8) for v in model.variables if "relative" in v.path)
    assert model.positions is None and model.max_positions is None
    both = tiny_model(**{**RELATIVE, "position_embedding": "timing"})
    assert both.positions is not None
    assert "max_relative_position" in Transformer.architecture_keys(model.hparams)
    features = {"inputs": INPUTS, "targets": TARGETS}
    assert not np.allclose(model(features).numpy(), both(features).numpy(), atol=1e-3)


def test_relative_positions_compute_in_bfloat16():
    """Under mixed bfloat16 (float32 tables, cast where used) the logits are the float32
    model's to bfloat16's precision, and the inference model (bfloat16 tables) decodes
    step by step what the mixed one computes at once."""
    full = tiny_model(**RELATIVE)
    hparams = tiny_transformer_hparams(max_length=16, dtype="mixed_bfloat16", **RELATIVE)
    with dtype_policy("mixed_bfloat16"):
        mixed = Transformer(hparams, VOCAB)
    mixed.set_weights(full.get_weights())
    expected, forced = logits(full, INPUTS, TARGETS), logits(mixed, INPUTS, TARGETS)
    tolerance = 0.05 * np.abs(expected).max()
    np.testing.assert_allclose(forced, expected, atol=tolerance)
    with dtype_policy("mixed_bfloat16", inference=True):
        inference = Transformer(hparams, VOCAB)
    copy_weights(mixed, inference)
    table = inference.decoder_blocks[0].self_attention.relative_position_keys
    assert table.dtype == "bfloat16"
    stepped = greedy_teacher_forced(inference, INPUTS, TARGETS, tf.constant(5)).numpy()
    np.testing.assert_allclose(stepped, forced, atol=tolerance)


@pytest.mark.parametrize("overrides, complaint", [
    ("self_attention_type=dot_product_relative,max_relative_position=0",
     "self_attention_type=dot_product_relative needs max_relative_position >= 1"),
    ("max_relative_position=20", "max_relative_position=20 is read only with "
                                 "self_attention_type=dot_product_relative"),
    ("position_embedding=none", "position_embedding=none leaves a Transformer with "
                                "self_attention_type=dot_product blind to word order"),
    ("self_attention_type=relative", "'self_attention_type' must be one of 'dot_product', "
                                     "'dot_product_relative'"),
    ("max_relative_position=-1", "'max_relative_position' must be >= 0")])
def test_relative_position_hparams_are_refused_where_they_would_mislead(overrides, complaint):
    hparams = transformer_tiny()
    with pytest.raises(HParamsError, match=complaint):
        hparams.parse(overrides, "--hparams")
    assert hparams == transformer_tiny()  # nothing changed


def test_learned_positions_bound_decoding_and_the_checkpoint_shape():
    model = tiny_model(position_embedding="learned", max_length=6)
    assert model.max_positions == 6 and tiny_model().max_positions is None
    assert "max_length" in Transformer.architecture_keys(model.hparams)
    assert "max_length" not in Transformer.architecture_keys(tiny_model().hparams)
    search = BeamSearchDecoder(model, SearchOptions(beam_size=2, allow_eos=False))
    rules = InputRules.for_model(0, model.hparams.max_length, model.max_positions)
    ids, _ = search(tf.constant([[3, 4, 1]]), rules.decode_length(50))  # the last position
    assert ids.shape[-1] == 6
    with pytest.raises(ValueError, match="an input of 7 tokens is longer than the 6 positions"):
        search(tf.ones([1, 7], tf.int32), 6)
    with pytest.raises(ValueError, match="a decode of up to 50 tokens is longer than the 6 "):
        search(tf.constant([[3, 4, 1]]), 50)


def test_attention_weights_are_softmaxes_that_respect_padding_and_causality():
    model = tiny_model(num_encoder_layers=2, num_decoder_layers=3)
    features = {"inputs": INPUTS, "targets": TARGETS}
    weights = {kind: w.numpy() for kind, w in model.attention_weights(features).items()}
    assert {kind: w.shape for kind, w in weights.items()} == {
        "encoder_self": (2, 2, 2, 4, 4), "decoder_self": (2, 3, 2, 5, 5),
        "encoder_decoder": (2, 3, 2, 5, 4)}
    for kind, w in weights.items():
        np.testing.assert_allclose(w.sum(-1), 1.0, atol=1e-5, err_msg=kind)
    # Source padding (INPUTS[0, 3], INPUTS[1, 2:]) is never attended to.
    for kind in ("encoder_self", "encoder_decoder"):
        assert np.all(weights[kind][0, ..., 3] == 0.0) and np.all(weights[kind][1, ..., 2:] == 0)
    # Decoder self-attention sees no later position.
    assert np.all(np.triu(np.ones((5, 5)), k=1)[None, None, None] * weights["decoder_self"] == 0)
    assert np.all(weights["decoder_self"][..., 1, 1] > 0.0)
    # Asking for the weights changes nothing else.
    np.testing.assert_array_equal(model(features).numpy(),
                                  model._teacher_forced(features, False, []).numpy())
