"""Tests for t2t_lite.problems.algorithmic: registration, sample correctness, data files."""
import pytest

from t2t_lite import registry
from t2t_lite.builtins import load_builtins
from t2t_lite.contracts.reserved_ids import EOS_ID
from t2t_lite.problems.algorithmic import (AlgorithmicAdditionDecimal40,
                                           AlgorithmicIdentityDecimal40,
                                           AlgorithmicReverseBinary40)

PROBLEMS = [AlgorithmicReverseBinary40, AlgorithmicIdentityDecimal40,
            AlgorithmicAdditionDecimal40]


def _samples(problem, split="train"):
    return list(problem.generate_samples("", "", split))


def _small(problem_class, train=300):
    problem = problem_class()
    problem.split_sizes = {"train": train, "dev": 20, "test": 10}
    return problem


def test_registered_names():
    load_builtins()
    for name, cls in [("algorithmic_reverse_binary40", AlgorithmicReverseBinary40),
                      ("algorithmic_identity_decimal40", AlgorithmicIdentityDecimal40),
                      ("algorithmic_addition_decimal40", AlgorithmicAdditionDecimal40)]:
        assert registry.problems[name] is cls
        assert cls().name == name


def test_default_split_sizes():
    assert AlgorithmicReverseBinary40.split_sizes == {"train": 100_000, "dev": 1000, "test": 1000}


def test_reverse_targets_are_reversed_binary_inputs_of_1_to_40():
    samples = _samples(_small(AlgorithmicReverseBinary40, train=2000))
    assert len(samples) == 2000
    lengths = set()
    for sample in samples:
        inputs = sample["inputs"].split()
        assert sample["targets"].split() == inputs[::-1]
        assert set(inputs) <= {"0", "1"}
        lengths.add(len(inputs))
    assert min(lengths) == 1 and max(lengths) == 40


def test_identity_targets_equal_decimal_inputs():
    samples = _samples(_small(AlgorithmicIdentityDecimal40), "dev")
    assert len(samples) == 20
    for sample in samples:
        assert sample["targets"] == sample["inputs"]
        assert 1 <= len(sample["inputs"].split()) <= 40
    assert set("".join(s["inputs"] for s in samples).replace(" ", "")) == set("0123456789")


def test_addition_targets_are_the_big_endian_sum():
    samples = _samples(_small(AlgorithmicAdditionDecimal40, train=500))
    for sample in samples:
        tokens = sample["inputs"].split()
        assert len(tokens) <= 40 and tokens.count("+") == 1
        plus = tokens.index("+")
        a, b = tokens[:plus], tokens[plus + 1:]
        assert a and b and (a[0] != "0" or a == ["0"]) and (b[0] != "0" or b == ["0"])
        assert int("".join(sample["targets"].split())) == int("".join(a)) + int("".join(b))
    assert max(len(s["targets"].split()) for s in samples) >= 19


@pytest.mark.parametrize("problem_class", PROBLEMS)
def test_generation_is_reproducible_and_splits_differ(problem_class):
    problem = _small(problem_class)
    assert _samples(problem, "dev") == _samples(_small(problem_class), "dev")
    assert _samples(problem, "dev") != _samples(problem, "test")
    assert _samples(problem, "train")[:20] != _samples(problem, "dev")


def test_generate_data_and_read_back(tmp_path):
    problem = _small(AlgorithmicAdditionDecimal40, train=30)
    data_dir = str(tmp_path / "data")
    problem.generate_data(data_dir, str(tmp_path / "tmp"))
    encoder = problem.feature_encoders(data_dir)["targets"]
    assert problem.vocab_size(data_dir) == 2 + 10 + 1 + 1  # reserved, digits, "+", <UNK>
    examples = list(problem.dataset("dev", data_dir))
    assert len(examples) == 20
    for example, sample in zip(examples, _samples(problem, "dev")):
        inputs, targets = example["inputs"].numpy().tolist(), example["targets"].numpy().tolist()
        assert inputs[-1] == EOS_ID and targets[-1] == EOS_ID
        assert encoder.oov_id not in inputs + targets
        assert encoder.decode(inputs) == sample["inputs"]
        assert encoder.decode(targets) == sample["targets"]


def test_binary_vocabulary_size(tmp_path):
    problem = _small(AlgorithmicReverseBinary40, train=10)
    problem.generate_data(str(tmp_path), str(tmp_path / "tmp"))
    assert problem.vocab_size(str(tmp_path)) == 5  # <pad> <EOS> 0 1 <UNK>
