"""Tests for t2t_lite.data.pipeline: token budget, length filter, padding, order."""
import random

import pytest
import tensorflow as tf

from t2t_lite.data.encoders import EOS_ID, PAD_ID
from t2t_lite.data.pipeline import batch_examples, bucket_upper_lengths


def _examples(count=60, max_len=30, seed=0):
    rng = random.Random(seed)
    examples = []
    for _ in range(count):
        inputs = [rng.randrange(2, 50) for _ in range(rng.randint(0, max_len - 1))] + [EOS_ID]
        targets = [rng.randrange(2, 50) for _ in range(rng.randint(0, max_len - 1))] + [EOS_ID]
        examples.append({"inputs": inputs, "targets": targets})
    return examples


def _dataset(examples):
    spec = tf.TensorSpec([None], tf.int32)
    return tf.data.Dataset.from_generator(lambda: iter(examples),
                                          output_signature={"inputs": spec, "targets": spec})


def _unpad(row):
    """A padded row back to the example: everything up to and including EOS."""
    row = row.tolist()
    return row[:row.index(EOS_ID) + 1]


def _batches(dataset):
    return [{key: value.numpy() for key, value in batch.items()} for batch in dataset]


def test_bucket_upper_lengths_grow_about_ten_percent_and_end_at_max():
    uppers = bucket_upper_lengths(256)
    assert uppers[0] == 8 and uppers[-1] == 256
    assert all(b > a and b <= max(a + 1, a * 1.1) for a, b in zip(uppers, uppers[1:-1]))
    assert bucket_upper_lengths(5) == [5]


def test_bucket_step_zero_mixes_lengths_in_full_batches():
    assert bucket_upper_lengths(41, 0) == [41]
    examples = _examples(count=40, max_len=30)
    batches = _batches(batch_examples(_dataset(examples), 300, max_length=30, training=False,
                                      length_bucket_step=0))
    assert [b["inputs"].shape[0] for b in batches] == [10, 10, 10, 10]  # 300 // 30
    lengths = [len(_unpad(row)) for row in batches[0]["inputs"]]
    assert max(lengths) - min(lengths) > 10  # one batch holds short and long examples


def test_eval_batches_respect_token_budget_and_keep_every_example_once():
    examples = _examples()
    batches = _batches(batch_examples(_dataset(examples), 64, max_length=0, training=False))
    seen = []
    for batch in batches:
        size, in_len = batch["inputs"].shape
        assert size * max(in_len, batch["targets"].shape[1]) <= 64
        seen += [(tuple(_unpad(i)), tuple(_unpad(t)))
                 for i, t in zip(batch["inputs"], batch["targets"])]
    assert sorted(seen) == sorted((tuple(e["inputs"]), tuple(e["targets"])) for e in examples)
    assert any(batch["inputs"].shape[0] > 1 for batch in batches)


def test_padding_is_zero_to_the_longest_in_the_batch():
    examples = [{"inputs": [5, EOS_ID], "targets": [6, 7, 8, EOS_ID]},
                {"inputs": [5, 5, 5, EOS_ID], "targets": [9, EOS_ID]}]
    (batch,) = _batches(batch_examples(_dataset(examples), 100, 0, training=False))
    assert batch["inputs"].dtype.name == "int32"
    assert batch["inputs"].tolist() == [[5, EOS_ID, PAD_ID, PAD_ID], [5, 5, 5, EOS_ID]]
    assert batch["targets"].tolist() == [[6, 7, 8, EOS_ID], [9, EOS_ID, PAD_ID, PAD_ID]]


def test_max_length_drops_examples_with_either_side_too_long():
    examples = _examples(count=80, max_len=20)
    kept = [e for e in examples if max(len(e["inputs"]), len(e["targets"])) <= 12]
    batches = _batches(batch_examples(_dataset(examples), 50, max_length=12, training=False))
    assert sum(batch["inputs"].shape[0] for batch in batches) == len(kept) > 0
    assert max(max(b["inputs"].shape[1], b["targets"].shape[1]) for b in batches) <= 12


def test_examples_longer_than_the_budget_are_dropped():
    examples = [{"inputs": [3] * 9 + [EOS_ID], "targets": [EOS_ID]},
                {"inputs": [3, EOS_ID], "targets": [4, EOS_ID]}]
    batches = _batches(batch_examples(_dataset(examples), 8, max_length=0, training=False))
    assert [b["inputs"].tolist() for b in batches] == [[[3, EOS_ID]]]


def test_eval_order_is_deterministic():
    dataset = batch_examples(_dataset(_examples()), 64, 0, training=False)
    first, second = _batches(dataset), _batches(dataset)
    assert len(first) == len(second)
    for a, b in zip(first, second):
        assert a["inputs"].tolist() == b["inputs"].tolist()


def test_training_repeats_and_shuffles():
    examples = _examples(count=20)
    dataset = batch_examples(_dataset(examples), 64, 0, training=True, shuffle_buffer=20, seed=3)
    batches = _batches(dataset.take(40))
    assert sum(batch["inputs"].shape[0] for batch in batches) > len(examples)
    eval_batches = _batches(batch_examples(_dataset(examples), 64, 0, training=False))
    head = [row.tolist() for batch in batches[:3] for row in batch["inputs"]]
    eval_head = [row.tolist() for batch in eval_batches[:3] for row in batch["inputs"]]
    assert head != eval_head


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError, match="batch_size_tokens"):
        batch_examples(_dataset(_examples(2)), 0, 0, training=False)
    with pytest.raises(ValueError, match="max_length"):
        batch_examples(_dataset(_examples(2)), 10, -1, training=False)
