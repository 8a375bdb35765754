"""Tests for t2t_lite.problems.wmt, with tensorflow-datasets mocked (random examples)."""
import os

import pytest
import tensorflow_datasets as tfds

from t2t_lite import registry
from t2t_lite.data.download import DownloadError
from t2t_lite.problems import translate, wmt

NUM_EXAMPLES = 24
SETUPS = {  # name: (tfds builder/config, vocabulary size, subword model)
    "translate_ende_wmt32k": ("wmt_t2t_translate/de-en", 32768, "bpe"),
    "translate_enfr_wmt32k": ("wmt14_translate/fr-en", 32768, "unigram"),
    "translate_ende_wmt14_bpe37k": ("wmt14_translate/de-en", 37000, "bpe"),
    "translate_enfr_wmt14_wp32k": ("wmt14_translate/fr-en", 32000, "unigram"),
}


class SmallEndeWmt14(wmt.TranslateEndeWmt14Bpe37k):
    """The paper's En-De setup with a vocabulary small enough for mock data."""

    subword_vocab_size = 280

    def num_shards(self, split):
        return 2 if split == "train" else 1


class SmallEnfrWmt14(wmt.TranslateEnfrWmt14Wp32k):
    subword_vocab_size = 280


def _as_lists(dataset):
    return [{key: value.numpy().tolist() for key, value in example.items()}
            for example in dataset]


def test_registered_setups_and_reverse_directions():
    for name, (tfds_id, vocab_size, model_type) in SETUPS.items():
        problem = registry.problems[name]()
        assert f"{problem.tfds_name}/{problem.tfds_config}" == tfds_id
        assert (problem.subword_vocab_size, problem.subword_model_type) == (vocab_size, model_type)
        reverse = registry.problems[name + "_rev"]()
        assert reverse.tfds_config == problem.tfds_config
        assert (reverse.source_language, reverse.target_language) == \
            (problem.target_language, "en")
        assert reverse.shard_paths("/d", "train") == problem.shard_paths("/d", "train")
        assert len(problem.shard_paths("/d", "train")) == 100


def test_generate_data_with_mock_tfds(tmp_path):
    problem = SmallEndeWmt14()
    data_dir, tmp_dir = str(tmp_path / "data"), str(tmp_path / "tmp")
    with tfds.testing.mock_data(num_examples=NUM_EXAMPLES):
        problem.generate_data(data_dir, tmp_dir)
        expected = problem.test_pairs(tmp_dir, "dev")
    assert len(expected) == NUM_EXAMPLES and expected[0][0] != expected[0][1]
    encoder = problem.feature_encoders(data_dir)["targets"]
    assert encoder.vocab_size == 280
    for split in ("train", "dev", "test"):
        assert len(_as_lists(problem.dataset(split, data_dir))) == NUM_EXAMPLES
    examples = _as_lists(problem.dataset("dev", data_dir))
    assert [(encoder.decode(e["inputs"]), encoder.decode(e["targets"]))
            for e in examples] == expected
    reverse = _as_lists(translate.reversed_problem_class(SmallEndeWmt14)().dataset("dev",
                                                                                   data_dir))
    assert reverse[0] == {"inputs": examples[0]["targets"], "targets": examples[0]["inputs"]}


def test_enfr_reads_french_and_english(tmp_path):
    with tfds.testing.mock_data(num_examples=3):
        pairs = translate.reversed_problem_class(SmallEnfrWmt14)().test_pairs(str(tmp_path))
        builder = SmallEnfrWmt14().prepared_builder(str(tmp_path))
        raw = [(e["fr"].decode(), e["en"].decode())
               for e in tfds.as_numpy(builder.as_dataset(split="test", shuffle_files=False))]
    assert pairs == [(fr.strip(), en.strip()) for fr, en in raw]


def test_failed_download_names_builder_and_urls(tmp_path, monkeypatch):
    prepared_in = []

    def offline(self, *args, **kwargs):
        prepared_in.append(self.data_dir)
        raise ConnectionError("Failed to get url http://www.statmt.org/x.tgz\nmore detail")
    monkeypatch.setattr(tfds.core.DatasetBuilder, "download_and_prepare", offline)
    with pytest.raises(DownloadError) as error:
        SmallEndeWmt14().generate_data(str(tmp_path / "data"), str(tmp_path / "tmp"))
    tfds_dir = os.path.join(str(tmp_path / "tmp"), "tensorflow_datasets")
    assert prepared_in == [os.path.join(tfds_dir, "wmt14_translate", "de-en", "1.0.0")]
    message = str(error.value)
    assert "wmt14_translate/de-en" in message
    assert tfds_dir in message
    assert "(Failed to get url http://www.statmt.org/x.tgz)" in message
    assert message.count("/dev.tgz") == 1 and "training-parallel-nc-v9.tgz" in message
    assert not os.listdir(tmp_path / "data")
