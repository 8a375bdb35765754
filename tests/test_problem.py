"""Tests for t2t_lite.data.problem (and the TFRecord shards it writes through tfrecords)."""
import os

import numpy as np
import pytest

from t2t_lite import registry
from t2t_lite.contracts.reserved_ids import EOS_ID
from t2t_lite.data.encoders import ByteTextEncoder, TokenTextEncoder
from t2t_lite.data.problem import Text2TextProblem
from t2t_lite.data.tfrecords import CorruptShardError

SAMPLES = {
    "train": [{"inputs": f"in {i}", "targets": f"out {i} é"} for i in range(11)],
    "dev": [{"inputs": "a", "targets": "b"}, {"inputs": "cc", "targets": ""}],
    "test": [{"inputs": "z", "targets": "zz"}],
}


@registry.register_problem
class ToyCopyTestProblem(Text2TextProblem):
    """Fixed samples; counts how often each split is generated."""

    def __init__(self):
        self.generated = []

    def num_shards(self, split):
        return 3 if split == "train" else 1

    def generate_samples(self, data_dir, tmp_dir, split):
        self.generated.append(split)
        yield from SAMPLES[split]


class TargetsOnlyTestProblem(ToyCopyTestProblem):
    has_inputs = False


def _generate(tmp_path, problem=None):
    problem = problem or ToyCopyTestProblem()
    data_dir = str(tmp_path / "data")
    problem.generate_data(data_dir, str(tmp_path / "tmp"))
    return problem, data_dir


def _as_lists(dataset):
    return [{key: value.numpy().tolist() for key, value in example.items()}
            for example in dataset]


def test_name_is_registered_snake_case_and_overridable():
    assert ToyCopyTestProblem().name == "toy_copy_test_problem"
    assert registry.problems["toy_copy_test_problem"] is ToyCopyTestProblem

    class Renamed(ToyCopyTestProblem):
        name = "toy_copy_test_problem_rev"
    assert Renamed().name == "toy_copy_test_problem_rev"


def test_defaults():
    problem = ToyCopyTestProblem()
    assert problem.has_inputs
    assert problem.decode_hparams_defaults() == {}
    with pytest.raises(ValueError, match="unknown split 'valid'"):
        problem.shard_paths("/d", "valid")


def test_generate_data_writes_vocab_and_named_shards(tmp_path):
    problem, data_dir = _generate(tmp_path)
    assert sorted(os.listdir(data_dir)) == sorted(
        ["vocab.toy_copy_test_problem.txt", "toy_copy_test_problem.shards.json"]
        + [f"toy_copy_test_problem-train-0000{i}-of-00003" for i in range(3)]
        + ["toy_copy_test_problem-dev-00000-of-00001",
           "toy_copy_test_problem-test-00000-of-00001"])
    assert problem.generated == ["train", "dev", "test"]
    assert problem.vocab_size(data_dir) == 258
    encoders = problem.feature_encoders(data_dir)
    assert isinstance(encoders["inputs"], ByteTextEncoder)
    assert encoders["inputs"] is encoders["targets"]


def test_second_generate_data_skips_finished_splits(tmp_path):
    problem, data_dir = _generate(tmp_path)
    mtimes = {name: os.stat(os.path.join(data_dir, name)).st_mtime_ns
              for name in os.listdir(data_dir)}
    os.remove(os.path.join(data_dir, "toy_copy_test_problem-dev-00000-of-00001"))
    problem.generated.clear()
    problem.generate_data(data_dir, str(tmp_path / "tmp"))
    assert problem.generated == ["dev"]
    for name, mtime in mtimes.items():
        if "-dev-" not in name:
            assert os.stat(os.path.join(data_dir, name)).st_mtime_ns == mtime, name


def test_interrupted_generation_leaves_no_shards(tmp_path):
    class Failing(ToyCopyTestProblem):
        name = "toy_copy_test_problem"

        def generate_samples(self, data_dir, tmp_dir, split):
            yield from SAMPLES[split][:5]
            raise RuntimeError("download died")

    data_dir = str(tmp_path / "data")
    with pytest.raises(RuntimeError, match="download died"):
        Failing().generate_data(data_dir, str(tmp_path / "tmp"))
    assert sorted(os.listdir(data_dir)) == ["toy_copy_test_problem.shards.json",
                                            "vocab.toy_copy_test_problem.txt"]
    problem, _ = _generate(tmp_path)
    assert problem.generated == ["train", "dev", "test"]


def test_dataset_yields_encoded_samples_with_eos_in_order(tmp_path):
    problem, data_dir = _generate(tmp_path)
    encoder = ByteTextEncoder()
    for split, samples in SAMPLES.items():
        dataset = problem.dataset(split, data_dir)
        assert dataset.element_spec["inputs"].dtype.name == "int32"
        expected = [{key: encoder.encode(text) + [EOS_ID] for key, text in sample.items()}
                    for sample in samples]
        assert _as_lists(dataset) == expected


def test_dataset_with_shuffled_files_has_the_same_examples(tmp_path):
    problem, data_dir = _generate(tmp_path)
    ordered = _as_lists(problem.dataset("train", data_dir))
    shuffled = _as_lists(problem.dataset("train", data_dir, shuffle_files=True))
    key = lambda example: (example["inputs"], example["targets"])  # noqa: E731
    assert sorted(shuffled, key=key) == sorted(ordered, key=key)


def test_targets_only_problem(tmp_path):
    problem, data_dir = _generate(tmp_path, TargetsOnlyTestProblem())
    examples = _as_lists(problem.dataset("test", data_dir))
    assert examples == [{"targets": ByteTextEncoder().encode("zz") + [EOS_ID]}]
    assert list(problem.feature_encoders(data_dir)) == ["targets"]


def test_missing_data_names_files_and_datagen_command(tmp_path):
    problem = ToyCopyTestProblem()
    data_dir = str(tmp_path / "empty")
    with pytest.raises(FileNotFoundError) as info:
        problem.dataset("dev", data_dir)
    message = str(info.value)
    assert os.path.join(data_dir, "toy_copy_test_problem-dev-?????-of-00001") in message
    assert f"t2t-datagen --problem=toy_copy_test_problem --data_dir={data_dir} --tmp_dir=" \
        in message
    with pytest.raises(FileNotFoundError, match="t2t-datagen --problem=toy_copy_test_problem"):
        problem.feature_encoders(data_dir)


@pytest.mark.parametrize("damage", ["truncate", "flip"])
def test_corrupt_shard_error_names_the_shard(tmp_path, damage):
    problem, data_dir = _generate(tmp_path)
    shard = problem.shard_paths(data_dir, "train")[1]
    data = bytearray(open(shard, "rb").read())
    if damage == "truncate":
        data = data[:-3]
    else:
        data[len(data) // 2] ^= 0xFF
    open(shard, "wb").write(bytes(data))
    with pytest.raises(CorruptShardError) as info:
        problem.dataset("train", data_dir)
    assert shard in str(info.value) and "t2t-datagen" in str(info.value)


def test_vocab_of_the_wrong_class_is_refused(tmp_path):
    class Mismatched(ToyCopyTestProblem):
        encoder_class = TokenTextEncoder

    with pytest.raises(TypeError, match="encoder_class is TokenTextEncoder"):
        _generate(tmp_path, Mismatched())


def test_sample_without_targets_is_refused(tmp_path):
    class NoTargets(ToyCopyTestProblem):
        def generate_samples(self, data_dir, tmp_dir, split):
            yield {"inputs": "x"}

    with pytest.raises(KeyError, match="without \\['targets'\\]"):
        _generate(tmp_path, NoTargets())


def test_dataset_examples_are_numpy_int32(tmp_path):
    problem, data_dir = _generate(tmp_path)
    example = next(iter(problem.dataset("dev", data_dir)))
    assert example["targets"].numpy().dtype == np.int32


class ToyWordsTestProblem(ToyCopyTestProblem):
    """The toy samples over a word vocabulary (a file of tokens, one a line)."""
    encoder_class = TokenTextEncoder

    def build_vocab(self, data_dir, tmp_dir):
        words = {word for sample in SAMPLES["train"] for text in sample.values()
                 for word in text.split()}
        return TokenTextEncoder(sorted(words) + ["a", "b", "cc", "z", "zz"])


def test_shards_encoded_with_another_vocabulary_are_refused(tmp_path):
    problem, data_dir = ToyWordsTestProblem(), str(tmp_path / "data")
    problem.generate_data(data_dir, str(tmp_path / "tmp"))
    assert os.path.exists(problem.shards_record_path(data_dir))
    vocab = tmp_path / "data" / problem.vocab_filename
    tokens = vocab.read_text().splitlines()
    tokens[-1], tokens[-2] = tokens[-2], tokens[-1]  # rebuilt: same size, other ids
    vocab.write_text("\n".join(tokens) + "\n")
    shards = {path: open(path, "rb").read() for split in ("train", "dev", "test")
              for path in problem.shard_paths(data_dir, split)}
    for call in (lambda: problem.generate_data(data_dir, str(tmp_path / "tmp")),
                 lambda: problem.require_data("train", data_dir),
                 lambda: problem.dataset("dev", data_dir)):
        with pytest.raises(ValueError, match="shards in .* were encoded with another vocabulary"):
            call()
    assert shards == {path: open(path, "rb").read() for path in shards}
    for path in [*shards, problem.shards_record_path(data_dir)]:
        os.remove(path)
    problem.generate_data(data_dir, str(tmp_path / "tmp"))  # what the error says to do
    assert len(list(problem.dataset("train", data_dir))) == len(SAMPLES["train"])
