"""Tests for t2t_lite.problems.multi30k on the real Multi30k files in shared/data."""
import gzip
import itertools
import os

import pytest

from t2t_lite import registry
from t2t_lite.data.download import DownloadError, sha256_of
from t2t_lite.problems import multi30k, translate

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MULTI30K_DIR = os.path.join(REPO_ROOT, "..", "shared", "data", "multi30k")
NUM_SAMPLES = 40

needs_corpus = pytest.mark.skipif(
    not os.path.isfile(os.path.join(MULTI30K_DIR, "train.en.gz")),
    reason=f"Multi30k raw files not found in {os.path.abspath(MULTI30K_DIR)}")


class SmallEndeMulti30k(multi30k.TranslateEndeMulti30k):
    """The real vocabulary pipeline with a small vocabulary and few examples per split."""

    subword_vocab_size = 2000

    def num_shards(self, split):
        return 2 if split == "train" else 1

    def generate_samples(self, data_dir, tmp_dir, split):
        return itertools.islice(super().generate_samples(data_dir, tmp_dir, split), NUM_SAMPLES)


SmallEndeMulti30kRev = translate.reversed_problem_class(SmallEndeMulti30k)


def _raw_lines(name):
    with gzip.open(os.path.join(MULTI30K_DIR, name), "rt", encoding="utf-8") as f:
        return [line.strip() for line in itertools.islice(f, NUM_SAMPLES)]


def _as_lists(dataset):
    return [{key: value.numpy().tolist() for key, value in example.items()}
            for example in dataset]


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    if not os.path.isfile(os.path.join(MULTI30K_DIR, "train.en.gz")):
        pytest.skip(f"Multi30k raw files not found in {os.path.abspath(MULTI30K_DIR)}")
    path = str(tmp_path_factory.mktemp("multi30k_data"))
    SmallEndeMulti30k().generate_data(path, MULTI30K_DIR)
    return path


def test_registered_with_reverse_directions():
    for name in ("translate_ende_multi30k", "translate_enfr_multi30k"):
        forward, reverse = registry.problems[name](), registry.problems[name + "_rev"]()
        assert reverse.name == name + "_rev"
        assert (reverse.source_language, reverse.target_language) == \
            (forward.target_language, forward.source_language) == (forward.target_language, "en")
        assert reverse.vocab_filename == forward.vocab_filename
    assert multi30k.TranslateEnfrMulti30k().raw_filename("dev", "fr") == "val.fr.gz"
    assert multi30k.TranslateEndeMulti30k().raw_filename("test", "de") == \
        "test_2016_flickr.de.gz"


@needs_corpus
def test_generate_data_round_trips_the_sentences(data_dir):
    problem = SmallEndeMulti30k()
    assert os.path.isfile(os.path.join(data_dir, "vocab.small_ende_multi30k.model"))
    assert problem.vocab_size(data_dir) == 2000
    encoder = problem.feature_encoders(data_dir)["inputs"]
    for split, stem in (("train", "train"), ("dev", "val"), ("test", "test_2016_flickr")):
        examples = _as_lists(problem.dataset(split, data_dir))  # in written order
        assert len(examples) == NUM_SAMPLES
        assert [encoder.decode(e["inputs"]) for e in examples] == _raw_lines(f"{stem}.en.gz")
        assert [encoder.decode(e["targets"]) for e in examples] == _raw_lines(f"{stem}.de.gz")


@needs_corpus
def test_reverse_swaps_inputs_and_targets(data_dir):
    forward = _as_lists(SmallEndeMulti30k().dataset("dev", data_dir))
    reverse = _as_lists(SmallEndeMulti30kRev().dataset("dev", data_dir))
    assert reverse == [{"inputs": f["targets"], "targets": f["inputs"]} for f in forward]
    assert SmallEndeMulti30kRev().test_pairs(MULTI30K_DIR, "dev")[0] == \
        (_raw_lines("val.de.gz")[0], _raw_lines("val.en.gz")[0])


@needs_corpus
def test_second_generate_data_skips_everything(data_dir, monkeypatch):
    before = {name: os.stat(os.path.join(data_dir, name)).st_mtime_ns
              for name in os.listdir(data_dir)}

    def fail(*args):
        raise AssertionError("raw data read again")
    monkeypatch.setattr(SmallEndeMulti30k, "parallel_texts", fail)
    SmallEndeMulti30k().generate_data(data_dir, MULTI30K_DIR)
    SmallEndeMulti30kRev().generate_data(data_dir, MULTI30K_DIR)
    after = {name: os.stat(os.path.join(data_dir, name)).st_mtime_ns
             for name in os.listdir(data_dir)}
    assert after == before and SmallEndeMulti30k().vocab_filename in after


@needs_corpus
def test_eval_lines_are_the_raw_test_set():
    problem = multi30k.TranslateEndeMulti30k()
    assert problem.eval_file_names("test") == ("translate_ende_multi30k.test.en",
                                               "translate_ende_multi30k.test.de")
    sources, references = problem.eval_lines(MULTI30K_DIR, "test")
    assert len(sources) == len(references) == 1000
    assert sources[:NUM_SAMPLES] == _raw_lines("test_2016_flickr.en.gz")
    assert references[:NUM_SAMPLES] == _raw_lines("test_2016_flickr.de.gz")


def test_downloads_are_pinned_and_verified():
    problem = multi30k.TranslateEndeMulti30k()
    assert problem.raw_url(problem.raw_filename("train", "de")) == (
        "https://raw.githubusercontent.com/multi30k/dataset/"
        "c9be912dc05a3ebf9ae5bb5f7f58c1791cda43ab/data/task1/raw/train.de.gz")
    for subset in ("train", "dev", "test"):
        for language in ("en", "de", "fr"):
            filename = problem.raw_filename(subset, language)
            if os.path.isdir(MULTI30K_DIR):  # the shared copy is byte-for-byte upstream's
                assert sha256_of(os.path.join(MULTI30K_DIR, filename)) == multi30k.SHA256[
                    filename]


def test_missing_file_names_the_file_and_url(tmp_path, monkeypatch):
    problem = multi30k.TranslateEndeMulti30k()
    monkeypatch.setattr(multi30k.Multi30kProblem, "raw_url",
                        lambda self, filename: f"http://127.0.0.1:9/raw/{filename}")
    with pytest.raises(DownloadError, match=r"train\.de\.gz from http://127\.0\.0\.1:9/raw/"
                                            r"train\.de\.gz"):
        problem.generate_data(str(tmp_path / "data"), str(tmp_path / "tmp"))
    with pytest.raises(DownloadError, match=r"test_2018_flickr\.de\.gz"):
        problem.test_pairs(str(tmp_path / "tmp"), "test_2018_flickr")
