"""t2t-exporter --format=ctranslate2: a CTranslate2 model that decodes as t2t-decoder."""
import os
import sys

import ctranslate2  # the "test" extra installs it
import keras
import numpy as np
import pytest
import tensorflow as tf

from t2t_lite import registry
from t2t_lite.builtins import load_builtins
from t2t_lite.bin import t2t_decoder, t2t_exporter, t2t_trainer
from t2t_lite.data.encoders import TokenTextEncoder
from t2t_lite.export.ctranslate2_spec import (CTranslate2ExportError, check_convertible,
                                              transformer_spec, translate_lines, vocabulary)
from t2t_lite.models.transformer import Transformer
from toys import TranslateEnxxExportTest  # registers PROBLEM: upper-cased sentences

TINY = "hidden_size=32,filter_size=64,num_encoder_layers=2,num_decoder_layers=2"
PROBLEM = "translate_enxx_export_test"
# Training sentences (a tiny model trained briefly learns those) and a new one.
WORDS = TranslateEnxxExportTest.words
LINES = [" ".join(WORDS[(i * 7 + k * 5) % len(WORDS)] for k in range(2 + i % 4))
         for i in (3, 10, 17, 41)]
LINES += ["", "the dog runs"]
# Shaw et al.'s relative positions, clipped at 2, without absolute ones: what CTranslate2
# takes (its relative models have no position table).
RELATIVE = "self_attention_type=dot_product_relative,max_relative_position=2,position_embedding=none"


def train(root, model, hparams_set, hparams, steps):
    output_dir = str(root / "train")
    assert t2t_trainer.main([f"--problem={PROBLEM}", f"--model={model}",
                             f"--hparams_set={hparams_set}", f"--hparams={hparams}",
                             f"--data_dir={root / 'data'}", f"--output_dir={output_dir}",
                             f"--tmp_dir={root / 'data'}", "--generate_data",
                             f"--train_steps={steps}", "--eval_batches=1",
                             "--log_every_steps=100"]) == 0
    return output_dir


def decode(output_dir, root, decode_hparams):
    source, target = root / "lines.txt", root / f"decoded-{decode_hparams}.txt"
    source.write_text("".join(line + "\n" for line in LINES), encoding="utf-8")
    assert t2t_decoder.main([f"--output_dir={output_dir}",
                             f"--decode_hparams={decode_hparams}",
                             f"--decode_from_file={source}",
                             f"--decode_to_file={target}"]) == 0
    return target.read_text(encoding="utf-8").splitlines()


@pytest.fixture(scope="session")
def trained(tmp_path_factory):
    """A trained tiny Transformer (the paper's post-norm), its CTranslate2 export and
    its encoder. Pre-norm and the other shapes are checked weight by weight below
    (test_log_probs_equal_ctranslate2_scores), without training."""
    root = tmp_path_factory.mktemp("ct2")
    one_layer = TINY.replace("layers=2", "layers=1")  # each key once: a repeat is refused
    output_dir = train(root, "transformer", "transformer_tiny",
                       f"{one_layer},normalize_before=false,learning_rate=0.4,"
                       "learning_rate_warmup_steps=100,batch_size=512", steps=250)
    export_dir = str(root / "train" / "export" / "ct2")
    assert t2t_exporter.main([f"--output_dir={output_dir}", f"--export_dir={export_dir}",
                              "--format=ctranslate2"]) == 0
    encoder = registry.problems[PROBLEM]().feature_encoders(str(root / "data"))["inputs"]
    return output_dir, root, export_dir, encoder


@pytest.mark.slow
def test_greedy_outputs_equal_the_decoder_in_float32(trained):
    output_dir, root, export_dir, encoder = trained
    decoded = decode(output_dir, root, "beam_size=1,alpha=0")
    translator = ctranslate2.Translator(export_dir, compute_type="float32")
    assert translate_lines(translator, encoder, LINES, beam_size=1) == decoded
    # Trained: upper-case words, not noise (a few hundred steps do not make it exact).
    assert all(decoded[i] and decoded[i] == decoded[i].upper() for i in range(4))


@pytest.mark.slow
def test_beam_outputs_equal_the_decoder_without_length_penalty(trained):
    """Our alpha=0 and CTranslate2's length_penalty=0 both rank finished hypotheses
    by their log-probability (docs/EXPORT.md)."""
    output_dir, root, export_dir, encoder = trained
    decoded = decode(output_dir, root, "beam_size=4,alpha=0")
    translator = ctranslate2.Translator(export_dir, compute_type="float32")
    assert translate_lines(translator, encoder, LINES, beam_size=4,
                           length_penalty=0.0) == decoded


@pytest.mark.slow
def test_int8_is_one_flag(trained):
    _, _, export_dir, encoder = trained
    translator = ctranslate2.Translator(export_dir, compute_type="int8")
    outputs = translate_lines(translator, encoder, LINES, beam_size=4)
    assert len(outputs) == len(LINES) and outputs[4] == ""
    assert all(outputs[i] for i in range(len(LINES)) if LINES[i])


@pytest.mark.slow
def test_sentencepiece_pieces_are_the_model_tokens(trained):
    """What docs/EXPORT.md tells users: tokenize with the problem's sentencepiece
    model (out_type=str), detokenize with decode_pieces."""
    import sentencepiece as spm
    _, root, export_dir, encoder = trained
    vocab_file = registry.problems[PROBLEM]().vocab_filename
    processor = spm.SentencePieceProcessor(model_file=str(root / "data" / vocab_file))
    translator = ctranslate2.Translator(export_dir)
    pieces = processor.encode(LINES[0], out_type=str)
    assert pieces == [vocabulary(encoder)[i] for i in encoder.encode(LINES[0])]
    output = translator.translate_batch([pieces], beam_size=1)[0].hypotheses[0]
    assert processor.decode_pieces(output) == translate_lines(translator, encoder, LINES[:1],
                                                              beam_size=1)[0]


@pytest.mark.parametrize("hparams, source_words", [
    ("normalize_before=false", None), ("normalize_before=true", None),
    ("position_embedding=learned,shared_embedding_and_softmax_weights=false", None),
    ("attention_key_channels=16,attention_value_channels=16,num_heads=2", None),
    ("num_encoder_layers=1,num_decoder_layers=3,normalize_before=false", None),
    # Separate vocabularies (a tied target embedding and softmax, or none tied).
    ("normalize_before=false", 14),
    ("shared_embedding_and_softmax_weights=false", 20),
    (f"{RELATIVE},normalize_before=true", None), (f"{RELATIVE},normalize_before=false", None)])
def test_log_probs_equal_ctranslate2_scores(tmp_path, hparams, source_words):
    """Every weight lands where CTranslate2 reads it: teacher-forced log-probs of an
    untrained model (norms and biases made non-trivial, relative tables too) equal
    score_batch's (relative positions: sentences longer than the clipping distance).
    ``source_words``: a source vocabulary of that many words of its own."""
    load_builtins()
    model_hparams = registry.hparams_sets["transformer_tiny"]()
    model_hparams.parse(f"{TINY},num_heads=4", "test")
    model_hparams.parse(hparams, "test")
    target_encoder = TokenTextEncoder([f"w{i}" for i in range(20)])
    encoder = (TokenTextEncoder([f"s{i}" for i in range(source_words)]) if source_words
               else target_encoder)
    keras.utils.set_random_seed(1)
    model = Transformer(model_hparams, target_encoder.vocab_size,
                        encoder.vocab_size if source_words else None)
    rng = np.random.default_rng(0)
    for variable in model.variables:
        if variable.name in ("gamma", "beta", "bias") or "relative" in variable.name:
            variable.assign(rng.normal(0.5 if variable.name == "gamma" else 0.0, 0.3,
                                       variable.shape).astype(np.float32))
    spec = transformer_spec(model, encoder, target_encoder)
    spec.optimize()
    spec.save(str(tmp_path))
    vocabularies = {"source_vocabulary.json", "target_vocabulary.json"} if source_words else {
        "shared_vocabulary.json"}
    assert vocabularies <= set(os.listdir(tmp_path))
    sources, targets = [[3, 5, 7, 9, 1], [4, 4, 6, 1, 0]], [[8, 9, 10, 1], [11, 12, 1, 0]]
    log_probs = tf.nn.log_softmax(model({"inputs": tf.constant(sources),
                                         "targets": tf.constant(targets)})).numpy()
    names, target_names = vocabulary(encoder), vocabulary(target_encoder)
    scored = ctranslate2.Translator(str(tmp_path)).score_batch(
        [[names[i] for i in row if i > 1] for row in sources],
        [[target_names[i] for i in row if i > 1] for row in targets])
    for row, result in enumerate(scored):
        ours = [log_probs[row, t, i] for t, i in enumerate(targets[row]) if i]
        np.testing.assert_allclose(result.log_probs, ours, atol=1e-5)


def test_relative_and_absolute_positions_together_are_refused_in_one_line():
    load_builtins()
    hparams = registry.hparams_sets["transformer_tiny"]()
    hparams.parse(f"{TINY},{RELATIVE.replace('=none', '=timing')}", "test")
    problem = registry.problems[PROBLEM]()
    with pytest.raises(CTranslate2ExportError) as info:
        check_convertible(Transformer, hparams, problem, "unused")
    assert str(info.value) == (
        "CTranslate2 adds no absolute positions to a model with relative ones, and this one "
        "has both (position_embedding=timing): export it as a SavedModel, or train with "
        "position_embedding=none")


@pytest.fixture(scope="session")
def lstm(tmp_path_factory):
    root = tmp_path_factory.mktemp("ct2_lstm")
    return train(root, "lstm_seq2seq", "lstm_sutskever",
                 "hidden_size=16,embedding_size=16,num_encoder_layers=1,num_decoder_layers=1",
                 steps=1)


def refused(capsys, argv):
    assert t2t_exporter.main(argv) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1
    return lines[0]


def test_an_lstm_is_refused_in_one_line(lstm, capsys, tmp_path):
    export_dir = tmp_path / "ct2"
    error = refused(capsys, [f"--output_dir={lstm}", f"--export_dir={export_dir}",
                             "--format=ctranslate2"])
    assert "CTranslate2 runs Transformers; LSTMSeq2seq is not one" in error
    assert not export_dir.exists()


def test_without_ctranslate2_says_how_to_install(lstm, capsys, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "ctranslate2", None)  # import fails
    error = refused(capsys, [f"--output_dir={lstm}", f"--export_dir={tmp_path / 'ct2'}",
                             "--format=ctranslate2"])
    assert "pip install ctranslate2" in error


def test_decode_hparams_are_refused(lstm, capsys, tmp_path):
    error = refused(capsys, [f"--output_dir={lstm}", f"--export_dir={tmp_path / 'ct2'}",
                             "--format=ctranslate2", "--decode_hparams=beam_size=2"])
    assert "translate_batch" in error
