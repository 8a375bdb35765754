"""Tests for t2t_lite.data.pipeline: token budget, length filter, padding, order."""
import random

import pytest
import tensorflow as tf

from t2t_lite.contracts.reserved_ids import EOS_ID, PAD_ID
from t2t_lite.data.pipeline import batch_examples, bucket_upper_lengths, truncate_features


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


def test_eval_keeps_the_source_order():
    # Evaluation never shuffles, not even with a fixed seed: one bucket (length_bucket_step=0)
    # gives the examples back exactly in source order, batch after batch, on every pass.
    examples = _examples(count=23, max_len=30)
    dataset = batch_examples(_dataset(examples), 150, max_length=30, training=False, seed=3,
                             length_bucket_step=0)
    for _ in range(2):
        rows = [_unpad(row) for batch in _batches(dataset) for row in batch["inputs"]]
        assert rows == [e["inputs"] for e in examples]
    # With buckets, examples of one length (always in one bucket) keep their source order.
    examples = _examples(count=60, max_len=12)
    batches = _batches(batch_examples(_dataset(examples), 64, 0, training=False))
    position = {(tuple(e["inputs"]), tuple(e["targets"])): i for i, e in enumerate(examples)}
    by_length = {}
    for batch in batches:
        for inputs, targets in zip(batch["inputs"], batch["targets"]):
            inputs, targets = _unpad(inputs), _unpad(targets)
            by_length.setdefault(max(len(inputs), len(targets)), []).append(
                position[(tuple(inputs), tuple(targets))])
    assert sum(len(p) for p in by_length.values()) == 60
    assert max(len(p) for p in by_length.values()) >= 5
    for positions in by_length.values():
        assert positions == sorted(positions)


def _epochs(seed, count=20, epochs=3):
    """Training inputs as epochs of ``count`` examples. One bucket of 150 // 30 = 5 examples a
    batch, and ``count`` a multiple of 5, so each epoch fills whole batches."""
    examples = _examples(count=count, max_len=30)
    dataset = batch_examples(_dataset(examples), 150, max_length=30, training=True,
                             shuffle_buffer=count, seed=seed, length_bucket_step=0)
    rows = [tuple(_unpad(row)) for batch in _batches(dataset.take(epochs * count // 5))
            for row in batch["inputs"]]
    return examples, [rows[i:i + count] for i in range(0, len(rows), count)]


def test_training_repeats_and_shuffles_every_epoch():
    examples, epochs = _epochs(seed=3)
    source = [tuple(e["inputs"]) for e in examples]
    assert len(set(source)) == len(source)  # distinct inputs, so orders can be compared
    for epoch in epochs:
        # Every epoch holds each example exactly once (shuffle before repeat), ...
        assert sorted(epoch) == sorted(source)
        # ... in an order of its own: not the source order, not the previous epoch's.
        assert epoch != source
    assert len({tuple(epoch) for epoch in epochs}) == len(epochs)


def test_training_order_follows_the_seed():
    # The trainer passes seed + step so that a resumed run draws a new order: the same seed
    # must give the same stream, another seed another one.
    _, first = _epochs(seed=3, epochs=2)
    _, again = _epochs(seed=3, epochs=2)
    _, other = _epochs(seed=4, epochs=2)
    assert first == again
    assert first[0] != other[0] and first[1] != other[1]


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError, match="batch_size_tokens"):
        batch_examples(_dataset(_examples(2)), 0, 0, training=False)
    with pytest.raises(ValueError, match="max_length"):
        batch_examples(_dataset(_examples(2)), 10, -1, training=False)


@pytest.mark.parametrize("training", [True, False])
def test_pipelines_run_without_autotuning(training):
    # Deleting an autotuned iterator waits out the autotuner's pause, up to a minute
    # (t2t_lite/data/no_autotune.py): no training or evaluation may pay it.
    dataset = batch_examples(_dataset(_examples(4)), 100, 30, training=training)
    assert dataset.options().autotune.enabled is False


def test_truncate_features_cuts_each_side_to_its_length_as_t2t_did():
    """T2T's max_input_seq_length / max_target_seq_length: a plain cut (EOS included)."""
    examples = [{"inputs": [3, 4, 5, EOS_ID], "targets": [6, EOS_ID]}]
    dataset = tf.data.Dataset.from_generator(
        lambda: iter(examples), output_signature={
            key: tf.TensorSpec([None], tf.int32) for key in ("inputs", "targets")})
    cut = next(iter(truncate_features(dataset, {"inputs": 2, "targets": 0})))
    assert cut["inputs"].numpy().tolist() == [3, 4]
    assert cut["targets"].numpy().tolist() == [6, EOS_ID]
    assert truncate_features(dataset, {"inputs": 0, "targets": 0}) is dataset
