"""Word dropout: rare training words become <UNK>, in the input and in the slot that copies them."""
import numpy as np
import pytest
import tensorflow as tf

from t2t_lite.contracts.reserved_ids import EOS_ID, PAD_ID
from t2t_lite.data.pipeline import batch_examples
from t2t_lite.data.word_dropout import input_token_counts, unk_probabilities, word_dropout
from t2t_lite.hparam import HParamsError
from t2t_lite.hparams.parsing import transformer_parsing_tiny
from t2t_lite.parsing.linearize import Kind, SlotToken, token_kinds
from t2t_lite.problems.algorithmic import AlgorithmicReverseBinary40
from t2t_lite.problems.parsing import ParsingEnglishPtbSample, ParsingEnglishPtbSampleLexical

from treebank_files import TREES

UNK = 9


def test_unk_probability_is_alpha_over_alpha_plus_count():
    counts = np.array([0, 7, 3, 1, 0, 4, 0, 0, 0, 2])  # ids 0-1 reserved, 9 is <UNK>
    probabilities = unk_probabilities(counts, alpha=0.25, unk_id=UNK)
    expected = [0, 0, 0.25 / 3.25, 0.25 / 1.25, 0, 0.25 / 4.25, 0, 0, 0, 0]
    np.testing.assert_allclose(probabilities, expected, rtol=1e-6)
    with pytest.raises(ValueError, match="word_dropout"):
        unk_probabilities(counts, alpha=-1.0, unk_id=UNK)


def _vocab():
    return ["<pad>", "<EOS>", "(S", "(NP", ")", "dog", "barks", "the", ".", "<UNK>"]


def test_a_dropped_word_is_unk_in_the_input_and_in_its_target_slot():
    vocab = _vocab()
    ids = {token: i for i, token in enumerate(vocab)}
    # "the dog barks ." -> "(S (NP the dog ) barks . )": only "dog" may be dropped.
    probability = np.zeros(len(vocab), np.float32)
    probability[ids["dog"]] = 1.0
    is_word = token_kinds(vocab, slot_token=SlotToken.WORD) == Kind.WORD
    augment = word_dropout(probability, UNK, is_word)
    inputs = [ids[w] for w in "the dog barks .".split()] + [EOS_ID]
    targets = [ids[t] for t in "(S (NP the dog ) barks . )".split()] + [EOS_ID]
    example = {"inputs": tf.constant(inputs), "targets": tf.constant(targets)}
    out = augment(example, tf.constant([1, 2], tf.int64))
    assert [vocab[i] for i in out["inputs"].numpy()] == "the <UNK> barks . <EOS>".split()
    assert [vocab[i] for i in out["targets"].numpy()] == (
        "(S (NP the <UNK> ) barks . ) <EOS>".split())
    # Targets of placeholders (no copied words) are left alone.
    plain = word_dropout(probability, UNK)(example, tf.constant([1, 2], tf.int64))
    assert plain["targets"].numpy().tolist() == targets


def test_each_draw_is_seeded_and_drops_words_at_their_rate():
    vocab = _vocab()
    probability = np.zeros(len(vocab), np.float32)
    probability[5] = 0.2
    is_word = token_kinds(vocab, slot_token=SlotToken.WORD) == Kind.WORD
    augment = word_dropout(probability, UNK, is_word)
    example = {"inputs": tf.constant([5] * 1000 + [EOS_ID]),
               "targets": tf.constant([2] + [5] * 1000 + [4, EOS_ID])}
    first = augment(example, tf.constant([0, 1], tf.int64))
    again = augment(example, tf.constant([0, 1], tf.int64))
    other = augment(example, tf.constant([0, 2], tf.int64))
    dropped = first["inputs"].numpy()[:-1] == UNK
    assert 150 < dropped.sum() < 250
    np.testing.assert_array_equal(first["inputs"], again["inputs"])
    assert not np.array_equal(first["inputs"], other["inputs"])
    # Slot k of the target copies input word k, dropped or not.
    np.testing.assert_array_equal(first["targets"].numpy()[1:-2], first["inputs"].numpy()[:-1])


def test_batch_examples_draws_again_every_epoch():
    example = {"inputs": tf.constant([5, 5, 5, 5, 5, 5, 5, 5, EOS_ID]),
               "targets": tf.constant([5, EOS_ID])}
    probability = np.zeros(10, np.float32)
    probability[5] = 0.5
    dataset = tf.data.Dataset.from_tensors(example)
    batches = batch_examples(dataset, 64, 0, training=True, seed=3,
                             augment=word_dropout(probability, UNK))
    inputs = [tuple(batch["inputs"].numpy()[0]) for batch in batches.take(6)]
    assert len(set(inputs)) > 1  # one example, drawn anew each epoch
    again = batch_examples(dataset, 64, 0, training=True, seed=3,
                           augment=word_dropout(probability, UNK))
    assert [tuple(b["inputs"].numpy()[0]) for b in again.take(6)] == inputs
    assert all(PAD_ID not in row for row in inputs)


def _sample_dir(tmp_path):
    (tmp_path / "wsj_0001.mrg").write_text(TREES["02"] + TREES["22"] + TREES["22"])
    (tmp_path / "wsj_0160.mrg").write_text(TREES["23"])
    return str(tmp_path)


def test_parsing_problem_drops_rare_words_consistently(tmp_path):
    problem = ParsingEnglishPtbSampleLexical()
    data_dir = str(tmp_path / "data")
    problem.generate_data(data_dir, _sample_dir(tmp_path))
    encoder = problem.feature_encoders(data_dir)["inputs"]
    counts = input_token_counts(problem.dataset("train", data_dir), encoder.vocab_size)
    assert counts[encoder.encode("Kim")[0]] == 2 and counts[encoder.encode("dog")[0]] == 1
    hparams = transformer_parsing_tiny()
    assert problem.training_augmentation(data_dir, hparams) is None  # off by default
    hparams.word_dropout = 1000.0  # nearly every word dropped
    augment = problem.training_augmentation(data_dir, hparams)
    for index, example in enumerate(problem.dataset("train", data_dir)):
        out = augment(example, tf.constant([0, index], tf.int64))
        words = [t for t in encoder.decode(out["inputs"].numpy()).split()]
        slots = [t for t in encoder.decode(out["targets"].numpy()).split()
                 if not t.startswith("(") and t != ")"]
        assert words == slots and words.count("<UNK>") >= len(words) - 1


def test_problems_without_a_word_vocabulary_refuse_word_dropout(tmp_path):
    hparams = transformer_parsing_tiny()
    hparams.word_dropout = 0.25
    with pytest.raises(HParamsError, match="word_dropout=0.25: problem algorithmic_reverse"):
        AlgorithmicReverseBinary40().training_augmentation(str(tmp_path), hparams)
    # A placeholder parsing problem drops input words only.
    problem = ParsingEnglishPtbSample()
    data_dir = str(tmp_path / "data")
    problem.generate_data(data_dir, _sample_dir(tmp_path))
    assert problem.training_augmentation(data_dir, hparams) is not None
