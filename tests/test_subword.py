"""Tests for t2t_lite.data.subword (sentencepiece BPE / unigram vocabularies)."""
import gzip
import itertools
import os

import pytest
import tensorflow as tf

from t2t_lite.contracts.reserved_ids import EOS_ID, PAD_ID
from t2t_lite.data.subword import UNK_ID, SubwordTextEncoder

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MULTI30K = os.path.join(REPO_ROOT, "..", "shared", "data", "multi30k")
LANGUAGES = ("en", "de", "fr")
TRAIN_LINES_PER_LANGUAGE = 7000  # ~20k lines in all: a few seconds of training
VOCAB_SIZE = 8000

TINY_CORPUS = ["the cat sat on the mat", "die Katze saß auf der Matte",
               "le chat était assis sur le tapis"] * 20
EDGE_CASES = ["", " ", "  two leading spaces", "trailing  ", "\ttab\tand\nnewline",
              "unseen: 日本語 ✓ 🙂 ÿ", "der Straße entlang, l'œuf…", "x"]


def _read(name, limit=None):
    path = os.path.join(MULTI30K, name)
    if not os.path.exists(path):
        pytest.skip(f"Multi30k not found at {os.path.normpath(MULTI30K)}: "
                    "put the corpus in shared/data/multi30k to run this test")
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return [line.rstrip("\n") for line in itertools.islice(f, limit)]


def _train_text():
    return [line for lang in LANGUAGES
            for line in _read(f"train.{lang}.gz", TRAIN_LINES_PER_LANGUAGE)]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    prefix = str(tmp_path_factory.mktemp("tiny") / "vocab")
    return SubwordTextEncoder.build(TINY_CORPUS, 320, path_prefix=prefix)


@pytest.fixture(scope="module")
def multi30k_encoders(tmp_path_factory):
    text = _train_text()
    root = tmp_path_factory.mktemp("multi30k")
    return {model_type: SubwordTextEncoder.build(text, VOCAB_SIZE, model_type,
                                                 path_prefix=str(root / model_type))
            for model_type in ("bpe", "unigram")}


@pytest.mark.parametrize("model_type", ["bpe", "unigram"])
def test_every_multi30k_val_sentence_round_trips(multi30k_encoders, model_type):
    encoder = multi30k_encoders[model_type]
    assert encoder.vocab_size == VOCAB_SIZE
    for lang in LANGUAGES:
        sentences = _read(f"val.{lang}.gz")
        assert len(sentences) > 1000
        for sentence in sentences:
            ids = encoder.encode(sentence)
            assert UNK_ID not in ids and PAD_ID not in ids and EOS_ID not in ids
            assert encoder.decode(ids) == sentence, (lang, sentence)


@pytest.mark.parametrize("model_type", ["bpe", "unigram"])
def test_build_is_deterministic(multi30k_encoders, model_type, tmp_path):
    again = SubwordTextEncoder.build(_train_text(), VOCAB_SIZE, model_type,
                                     path_prefix=str(tmp_path / "again"))
    first_path, again_path = str(tmp_path / "first.model"), str(tmp_path / "again.model")
    multi30k_encoders[model_type].store_to_file(first_path)
    with open(first_path, "rb") as a, open(again_path, "rb") as b:
        assert a.read() == b.read()
    sentences = _read("val.de.gz", 50)
    assert ([again.encode(s) for s in sentences]
            == [multi30k_encoders[model_type].encode(s) for s in sentences])


def test_in_graph_path_equals_python_path_on_multi30k(multi30k_encoders):
    encoder = multi30k_encoders["bpe"]
    sentences = _read("val.fr.gz", 64) + EDGE_CASES
    ragged = encoder.tf_encode(tf.constant(sentences))
    assert ragged.to_list() == [encoder.encode(s) for s in sentences]
    assert [t.decode("utf-8") for t in encoder.tf_decode(ragged).numpy()] == sentences


def test_round_trip_of_edge_cases_in_python_and_in_graph(tiny):
    for text in EDGE_CASES:
        assert tiny.decode(tiny.encode(text)) == text
    ids = tiny.tf_encode(tf.constant(EDGE_CASES))
    assert ids.to_list() == [tiny.encode(s) for s in EDGE_CASES]
    assert [t.decode("utf-8") for t in tiny.tf_decode(ids).numpy()] == EDGE_CASES


def test_decode_stops_at_eos_and_drops_pad_in_both_paths(tiny):
    the_cat, sat = tiny.encode("the cat"), tiny.encode("sat")
    row = [PAD_ID] + the_cat + sat + [EOS_ID] + the_cat + [PAD_ID, PAD_ID]
    assert tiny.decode(row) == "the cat sat"
    dense = tf.constant([row, sat + [EOS_ID] + [PAD_ID] * (len(row) - len(sat) - 1)])
    assert [t.decode() for t in tiny.tf_decode(dense).numpy()] == ["the cat sat", "sat"]


def test_tf_encode_works_inside_tf_data(tiny):
    dataset = tf.data.Dataset.from_tensor_slices(TINY_CORPUS[:3]).map(tiny.tf_encode)
    assert [x.numpy().tolist() for x in dataset] == [tiny.encode(s) for s in TINY_CORPUS[:3]]


def test_build_is_skipped_when_model_exists(tiny, tmp_path):
    prefix = str(tmp_path / "vocab")
    tiny.store_to_file(prefix + ".model")

    def must_not_be_read():
        raise AssertionError("the corpus was read although the model exists")
        yield  # pragma: no cover

    loaded = SubwordTextEncoder.build(must_not_be_read(), 999, path_prefix=prefix)
    assert loaded.vocab_size == tiny.vocab_size == 320
    assert loaded.encode("the mat") == tiny.encode("the mat")


def test_clear_errors(tiny, tmp_path):
    with pytest.raises(ValueError, match="outside the subword vocabulary"):
        tiny.decode([tiny.vocab_size + 3])
    with pytest.raises(FileNotFoundError, match="t2t-datagen"):
        SubwordTextEncoder.load_from_file(str(tmp_path / "missing.model"))
    with pytest.raises(ValueError, match="model_type 'wordpiece'"):
        SubwordTextEncoder.build(TINY_CORPUS, 320, "wordpiece", path_prefix=str(tmp_path / "a"))
    with pytest.raises(ValueError, match="could not train a 100000-token"):
        SubwordTextEncoder.build(TINY_CORPUS, 100000, path_prefix=str(tmp_path / "b"))
    assert not os.path.exists(str(tmp_path / "b.model"))


def test_the_vocabulary_sample_is_seeded_uniform_in_order_and_all_below_its_size():
    from collections import Counter

    from t2t_lite.data.subword import sample_in_order
    assert sample_in_order(iter(["b", "a", "c"]), 5, seed=1) == ["b", "a", "c"]
    drawn = sample_in_order(iter(range(1000)), 50, seed=3)
    assert len(drawn) == 50 and drawn == sorted(drawn)
    assert drawn == sample_in_order(iter(range(1000)), 50, seed=3)
    assert drawn != sample_in_order(iter(range(1000)), 50, seed=4)
    # Each of 20 items is drawn in 5 of 20 places: about 1/4 of 2,000 seeds each.
    counts = Counter(x for seed in range(2000) for x in sample_in_order(iter(range(20)), 5, seed))
    assert all(420 < counts[x] < 580 for x in range(20)), counts
