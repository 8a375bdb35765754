"""Tests for t2t_lite.problems.translate: shared subword vocabulary, NAME_rev, test files."""
import os

import pytest

from t2t_lite import registry
from t2t_lite.data.download import DownloadError
from t2t_lite.data.subword import SubwordTextEncoder
from t2t_lite.metrics.scoring import score_decodes
from t2t_lite.problems import translate

WORDS_EN = "the a dog cat runs sleeps on under green red house tree".split()
WORDS_XX = "le un chien chat court dort sur sous vert rouge maison arbre".split()


def _corpus(subset):
    size = {"train": 300, "dev": 5, "test": 4, "extra": 3}[subset]
    offset = {"train": 0, "dev": 1000, "test": 2000, "extra": 3000}[subset]
    for i in range(offset, offset + size):
        picks = [(i * 7 + k * 5) % len(WORDS_EN) for k in range(3 + i % 4)]
        yield {"en": " ".join(WORDS_EN[j] for j in picks) + f" {i}",
               "xx": " ".join(WORDS_XX[j] for j in picks) + f" {i} é"}


@translate.register_translate_problem
class TranslateEnxxToyTest(translate.TranslateProblem):
    """In-memory pairs; records which subsets were read."""

    source_language, target_language = "en", "xx"
    subword_vocab_size = 320
    extra_test_sets = ("extra",)
    reads: list = []

    def num_shards(self, split):
        return 2 if split == "train" else 1

    def parallel_texts(self, tmp_dir, subset):
        self.reads.append(subset)
        return _corpus(subset)


def _as_lists(dataset):
    return [{key: value.numpy().tolist() for key, value in example.items()}
            for example in dataset]


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    data_dir = str(tmp_path_factory.mktemp("data"))
    TranslateEnxxToyTest().generate_data(data_dir, str(tmp_path_factory.mktemp("tmp")))
    return data_dir


def test_register_adds_reverse_direction():
    forward = registry.problems["translate_enxx_toy_test"]
    reverse = registry.problems["translate_enxx_toy_test_rev"]
    assert forward is TranslateEnxxToyTest
    assert issubclass(reverse, TranslateEnxxToyTest)
    problem = reverse()
    assert problem.name == "translate_enxx_toy_test_rev"
    assert (problem.source_language, problem.target_language) == ("xx", "en")
    assert problem.vocab_filename == forward().vocab_filename == \
        "vocab.translate_enxx_toy_test.model"
    assert problem.shard_paths("/d", "dev") == forward().shard_paths("/d", "dev")


def test_generate_data_writes_shared_vocab_and_shards(generated):
    problem = TranslateEnxxToyTest()
    encoders = problem.feature_encoders(generated)
    assert isinstance(encoders["inputs"], SubwordTextEncoder)
    assert encoders["inputs"] is encoders["targets"]
    assert problem.vocab_size(generated) == 320
    examples = _as_lists(problem.dataset("dev", generated))
    expected = list(_corpus("dev"))
    assert len(examples) == len(expected)
    for example, texts in zip(examples, expected):
        assert encoders["inputs"].decode(example["inputs"]) == texts["en"]
        assert encoders["targets"].decode(example["targets"]) == texts["xx"]


def test_reverse_reads_forward_shards_swapped(generated):
    forward = _as_lists(TranslateEnxxToyTest().dataset("test", generated))
    reverse_problem = registry.problems["translate_enxx_toy_test_rev"]()
    reverse = _as_lists(reverse_problem.dataset("test", generated))
    assert reverse == [{"inputs": f["targets"], "targets": f["inputs"]} for f in forward]
    assert forward[0]["inputs"] != forward[0]["targets"]
    samples = list(reverse_problem.generate_samples(generated, "", "test"))
    assert samples[0] == {"inputs": next(_corpus("test"))["xx"],
                          "targets": next(_corpus("test"))["en"]}


def test_reverse_generate_data_reuses_forward_files(generated):
    TranslateEnxxToyTest.reads.clear()
    registry.problems["translate_enxx_toy_test_rev"]().generate_data(generated, "unused")
    assert TranslateEnxxToyTest.reads == []  # vocab and every split already there
    assert not [f for f in os.listdir(generated) if "_rev" in f]


def test_vocab_is_deterministic(generated, tmp_path):
    TranslateEnxxToyTest().generate_data(str(tmp_path), str(tmp_path))
    name = TranslateEnxxToyTest().vocab_filename
    with open(os.path.join(generated, name), "rb") as a, \
            open(os.path.join(tmp_path, name), "rb") as b:
        assert a.read() == b.read()


def test_download_error_in_vocab_building_is_not_wrapped(tmp_path):
    class Offline(TranslateEnxxToyTest):
        def parallel_texts(self, tmp_dir, subset):
            raise DownloadError("could not download train.xx.gz from http://example/x")
            yield  # a generator, like most readers: the error comes on first use

    with pytest.raises(DownloadError, match="train.xx.gz from http://example/x"):
        Offline().generate_data(str(tmp_path / "d"), str(tmp_path / "t"))
    assert not os.path.exists(tmp_path / "d" / Offline().vocab_filename)


def test_test_pairs_and_eval_files():
    problem = registry.problems["translate_enxx_toy_test_rev"]()
    assert problem.test_sets == ("train", "dev", "test", "extra")
    pairs = problem.test_pairs("", "extra")
    assert pairs == [(t["xx"], t["en"]) for t in _corpus("extra")]
    assert problem.eval_file_names("extra") == ("translate_enxx_toy_test_rev.extra.xx",
                                                "translate_enxx_toy_test_rev.extra.en")
    assert problem.eval_lines("", "extra") == ([s for s, _ in pairs], [r for _, r in pairs])
    with pytest.raises(ValueError, match="no data set 'nope'.*train, dev, test, extra"):
        problem.test_pairs("", "nope")
    with pytest.raises(ValueError, match="no data set 'nope'"):
        problem.eval_file_names("nope")  # before any work


def test_decodes_are_scored_with_bleu_in_the_target_language():
    problem = TranslateEnxxToyTest()
    assert problem.eval_metric == "bleu" and problem.eval_metric_options() == {"language": "xx"}
    references = ["the dog runs on the green house", "a cat sleeps under a red tree"]
    lines = score_decodes(problem, references, references)
    assert len(lines) == 4 and all("100.00" in line for line in lines)
    assert score_decodes(problem, references, ["x y z", "u v w"])[0].split()[2] == "0.00"
