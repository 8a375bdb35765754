"""Separate source and target vocabularies through the stack: the problem says so, the
Experiment builds and records the model with both, and the commands read each side
with its own vocabulary (NumberWordsToDigits: number words in, digits out)."""
import json
import os
import shutil

import pytest
import tensorflow as tf

from t2t_lite import registry
from t2t_lite.bin import t2t_attention, t2t_decoder, t2t_exporter, t2t_trainer
from t2t_lite.experiment import Experiment, ExperimentError
from t2t_lite.export.ctranslate2_spec import translate_lines
from t2t_lite.models.transformer import Transformer
from t2t_lite.training.checkpoint_state import recorded_architecture
from cli_helpers import error_of
from toys import (NumberWordsToDigits, NumberWordsToDigitsSameSize, SmallReverse,
                  generated_data, tiny_transformer_hparams)

PROBLEM = "number_words_to_digits"
HPARAMS = "hidden_size=16,filter_size=32,num_encoder_layers=1,num_decoder_layers=1"


@pytest.mark.parametrize("problem, sizes", [(NumberWordsToDigits, (15, 13)),
                                            (NumberWordsToDigitsSameSize, (13, 13))])
def test_the_problem_tells_its_two_vocabularies(tmp_path, reverse_data, problem, sizes):
    data_dir = generated_data(problem(), str(tmp_path))
    assert (problem().vocab_size(data_dir), problem().input_vocab_size(data_dir)) == sizes
    assert not problem().shares_vocabulary(data_dir)
    reverse = SmallReverse()
    assert reverse.shares_vocabulary(reverse_data)
    assert reverse.input_vocab_size(reverse_data) == reverse.vocab_size(reverse_data)


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    root = tmp_path_factory.mktemp("separate_vocabularies")
    data_dir, output_dir = str(root / "data"), str(root / "train")
    assert t2t_trainer.main([f"--problem={PROBLEM}", "--model=transformer",
                             "--hparams_set=transformer_tiny", f"--hparams={HPARAMS}",
                             f"--data_dir={data_dir}", f"--output_dir={output_dir}",
                             f"--tmp_dir={data_dir}", "--generate_data", "--train_steps=2",
                             "--eval_batches=1", "--log_every_steps=1"]) == 0
    return data_dir, output_dir


def test_the_run_and_its_checkpoint_record_both_vocabularies(trained):
    _, output_dir = trained
    with open(os.path.join(output_dir, "hparams.json")) as f:
        record = json.load(f)
    recorded = recorded_architecture(tf.train.latest_checkpoint(output_dir))
    for each in (record, recorded):
        assert (each["vocab_size"], each["input_vocab_size"], each["shared_vocabulary"]) == (
            15, 13, False)


def test_decoding_reads_words_and_writes_digits(trained, tmp_path, caplog):
    """The source through the words' vocabulary (a digit there is unknown), the
    output in the digits'; scores by teacher forcing read each side with its own."""
    _, output_dir = trained
    source = tmp_path / "source.txt"
    source.write_text("one two\nnine\n7\n")
    decoded = tmp_path / "decoded.txt"
    assert t2t_decoder.main([f"--output_dir={output_dir}", f"--decode_from_file={source}",
                             f"--decode_to_file={decoded}",
                             "--decode_hparams=beam_size=2,extra_length=3"]) == 0
    assert "1 token in 1 line is not in the vocabulary (first: '7' line 3)" in caplog.text
    caplog.clear()
    lines = decoded.read_text().splitlines()
    digits = set(NumberWordsToDigits.target_tokens) | {"<UNK>"}
    assert len(lines) == 3 and all(set(line.split()) <= digits for line in lines)
    pairs = tmp_path / "pairs.tsv"
    pairs.write_text("one two\t2 1\nthree\tthree\n")
    scores = tmp_path / "scores.txt"
    assert t2t_decoder.main([f"--output_dir={output_dir}", f"--score_file={pairs}",
                             f"--decode_to_file={scores}"]) == 0
    # A word is no target token, a digit no source one.
    assert "1 token in 1 line is not in the vocabulary (first: 'three' line 2)" in caplog.text
    assert len(scores.read_text().splitlines()) == 2


def test_attention_pictures_label_each_side_with_its_vocabulary(trained, tmp_path, capsys):
    _, output_dir = trained
    assert t2t_attention.main([f"--output_dir={output_dir}", "--input=one two",
                               "--target=2 1", f"--to={tmp_path / 'pictures'}"]) == 0
    page = (tmp_path / "pictures" / "index.html").read_text()
    assert '"queries": ["2", "1", "<EOS>"], "keys": ["one", "two", "<EOS>"]' in page


def test_the_ctranslate2_export_holds_a_vocabulary_a_side(trained, tmp_path):
    ctranslate2 = pytest.importorskip("ctranslate2")
    data_dir, output_dir = trained
    export_dir = tmp_path / "ct2"
    assert t2t_exporter.main([f"--output_dir={output_dir}", f"--export_dir={export_dir}",
                              "--format=ctranslate2"]) == 0
    encoders = NumberWordsToDigits().feature_encoders(data_dir)
    for name, side in (("source", "inputs"), ("target", "targets")):
        with open(export_dir / f"{name}_vocabulary.json") as f:
            assert json.load(f) == encoders[side].tokens
    outputs = translate_lines(ctranslate2.Translator(str(export_dir)), encoders["inputs"],
                              ["one two", "nine"], target_encoder=encoders["targets"])
    digits = set(NumberWordsToDigits.target_tokens) | {"<UNK>"}
    assert all(set(line.split()) <= digits for line in outputs)


def test_a_run_of_other_vocabularies_is_refused(trained, tmp_path, capsys):
    """Data whose target vocabulary grew: refused naming the sizes, before decoding;
    a run recorded before the sizes were (no input_vocab_size) still decodes."""
    data_dir, output_dir = trained
    other = tmp_path / "data"
    shutil.copytree(data_dir, other)
    targets = other / NumberWordsToDigits().target_vocab_filename
    targets.write_text(targets.read_text() + "*\n")
    source = tmp_path / "source.txt"
    source.write_text("one\n")
    line = error_of(capsys, t2t_decoder.main, [f"--output_dir={output_dir}",
                                               f"--data_dir={other}",
                                               f"--decode_from_file={source}"])
    assert "is not the one" in line and "vocab_size=15 there, 16 here" in line
    old_run = tmp_path / "old_run"
    shutil.copytree(output_dir, old_run)
    record = json.loads((old_run / "hparams.json").read_text())
    del record["input_vocab_size"], record["shared_vocabulary"]
    (old_run / "hparams.json").write_text(json.dumps(record))
    assert t2t_decoder.main([f"--output_dir={old_run}", f"--decode_from_file={source}",
                             f"--decode_to_file={tmp_path / 'out.txt'}"]) == 0


class OneVocabularyModel(Transformer):
    """A user's model of the two-argument signature (one shared vocabulary)."""

    def __init__(self, hparams, vocab_size):
        super().__init__(hparams, vocab_size)


def test_a_model_of_one_vocabulary_is_refused_separate_ones(tmp_path, reverse_data,
                                                            monkeypatch):
    monkeypatch.setitem(registry.models._entries, "one_vocabulary_model", OneVocabularyModel)
    data_dir = generated_data(NumberWordsToDigitsSameSize(), str(tmp_path))
    hparams = tiny_transformer_hparams()
    separate = Experiment(NumberWordsToDigitsSameSize(), "one_vocabulary_model", "t", hparams,
                          data_dir, str(tmp_path / "run"))
    with pytest.raises(ExperimentError, match="separate source and target vocabularies, but "
                       "model one_vocabulary_model is built as cls"):
        separate.build_model()
    shared = Experiment(SmallReverse(), "one_vocabulary_model", "t", hparams, reverse_data,
                        str(tmp_path / "run"))
    assert shared.build_model().shares_vocabulary
