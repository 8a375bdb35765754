"""Tests for t2t_lite.training.averaging and the t2t-avg-all command."""
import json
import logging
import os

import keras
import numpy as np
import pytest
import tensorflow as tf

from t2t_lite.bin import t2t_avg_all
from t2t_lite.training import averaging
from t2t_lite.training.checkpoint_state import CheckpointStateError
from toys import tiny_transformer

VALUES = (1.0, 2.0, 6.0)  # checkpoint k holds weights scaled by VALUES[k]
STEPS = (100, 200, 300)


def _objects():
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
    optimizer = keras.optimizers.Adam(1e-3)
    optimizer.build(model.trainable_variables)
    scalar = tf.Variable(0.0)
    step = tf.Variable(0, dtype=tf.int64)
    checkpoint = tf.train.Checkpoint(model=model, optimizer=optimizer, step=step,
                                     scalar=scalar)
    return checkpoint, model, optimizer, step, scalar


def _base_weights(model):
    return [np.arange(np.prod(v.shape), dtype=np.float32).reshape(v.shape) + 1
            for v in model.weights]


def _write_training_dir(model_dir, count=3):
    """Saves ``count`` checkpoints whose float values are known multiples."""
    checkpoint, model, optimizer, step, scalar = _objects()
    manager = tf.train.CheckpointManager(checkpoint, model_dir, max_to_keep=10)
    for value, step_value in list(zip(VALUES, STEPS))[:count]:
        for var, base in zip(model.weights, _base_weights(model)):
            var.assign(base * value)
        scalar.assign(value)
        step.assign(step_value)
        optimizer.iterations.assign(step_value)
        manager.save(checkpoint_number=step_value)
    with open(os.path.join(model_dir, "hparams.json"), "w") as f:
        json.dump({"model": "transformer", "hidden_size": 8}, f)


@pytest.fixture
def model_dir(tmp_path):
    path = str(tmp_path / "train")
    _write_training_dir(path)
    return path


def test_average_restores_into_fresh_objects_with_mean_values(model_dir, tmp_path):
    output_dir = str(tmp_path / "avg")
    result = averaging.average_last_checkpoints(model_dir, output_dir, n=3)
    assert [os.path.basename(p) for p in result.sources] == ["ckpt-100", "ckpt-200", "ckpt-300"]
    assert tf.train.latest_checkpoint(output_dir) == result.path == os.path.join(output_dir,
                                                                                 "ckpt-300")
    checkpoint, model, optimizer, step, scalar = _objects()
    checkpoint.restore(result.path).assert_existing_objects_matched()
    mean = np.mean(VALUES)
    for var, base in zip(model.weights, _base_weights(model)):
        np.testing.assert_allclose(var.numpy(), base * mean, rtol=1e-6)
    assert scalar.numpy() == pytest.approx(mean)
    assert step.numpy() == 300 and optimizer.iterations.numpy() == 300  # copied from newest
    assert json.load(open(os.path.join(output_dir, "hparams.json")))["hidden_size"] == 8


def test_last_n_only(model_dir, tmp_path):
    result = averaging.average_last_checkpoints(model_dir, str(tmp_path / "avg"), n=2)
    checkpoint, _, _, _, scalar = _objects()
    checkpoint.restore(result.path).expect_partial()
    assert scalar.numpy() == pytest.approx(np.mean(VALUES[1:]))


def test_fewer_checkpoints_than_asked_averages_them_with_warning(model_dir, tmp_path, caplog):
    with caplog.at_level(logging.WARNING, logger=averaging.__name__):
        result = averaging.average_last_checkpoints(model_dir, str(tmp_path / "avg"), n=5)
    assert len(result.sources) == 3
    assert "only 3" in caplog.text


def test_clear_errors(model_dir, tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        averaging.average_last_checkpoints(str(tmp_path / "nope"), str(tmp_path / "avg"))
    os.makedirs(tmp_path / "empty")
    with pytest.raises(FileNotFoundError, match="no 'checkpoint' state file"):
        averaging.average_last_checkpoints(str(tmp_path / "empty"), str(tmp_path / "avg"))
    with pytest.raises(ValueError, match="must differ"):
        averaging.average_last_checkpoints(model_dir, model_dir)


def test_checkpoints_of_different_models_are_refused(tmp_path):
    first = tf.train.Checkpoint(v=tf.Variable([1.0, 2.0])).write(str(tmp_path / "a" / "ckpt-1"))
    second = tf.train.Checkpoint(v=tf.Variable([1.0])).write(str(tmp_path / "b" / "ckpt-2"))
    with pytest.raises(ValueError, match="different variables or shapes"):
        averaging.average_checkpoints([first, second], str(tmp_path / "out" / "ckpt-2"))


def test_cli(model_dir, tmp_path, capsys):
    output_dir = str(tmp_path / "avg")
    assert t2t_avg_all.main([f"--model_dir={model_dir}", f"--output_dir={output_dir}",
                             "--n=2"]) == 0
    assert "averaged 2 checkpoints" in capsys.readouterr().out
    assert tf.train.latest_checkpoint(output_dir).endswith("ckpt-300")
    assert t2t_avg_all.main([f"--model_dir={tmp_path / 'missing'}",
                             f"--output_dir={output_dir}"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "does not exist" in err


def test_relative_model_dir_as_the_benchmarks_pass_it(model_dir, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = averaging.average_last_checkpoints("train", "avg", n=2)
    assert [os.path.basename(p) for p in result.sources] == ["ckpt-200", "ckpt-300"]
    assert tf.train.latest_checkpoint("avg") == result.path


def test_averaged_transformer_checkpoint_restores_like_a_trained_one(tmp_path):
    """The trainer's checkpoint layout, averaged, loads into a fresh model with restore_model."""
    from t2t_lite.training.checkpoints import restore_model, training_checkpoint

    batch = {"inputs": tf.constant([[3, 4, 1]]), "targets": tf.constant([[5, 1]])}
    model = tiny_transformer(12)
    model(batch)
    optimizer = keras.optimizers.Adam(1e-3)
    optimizer.build(model.trainable_variables)
    model_dir = str(tmp_path / "train")
    identity = {"problem": "reverse", "vocab_fingerprint": "f1"}
    manager = tf.train.CheckpointManager(training_checkpoint(model, optimizer, identity),
                                         model_dir, max_to_keep=5)
    initial = [v.numpy() for v in model.weights]
    for step, scale in zip(STEPS, VALUES):
        for var, value in zip(model.weights, initial):
            var.assign(value * scale)
        manager.save(checkpoint_number=step)
    result = averaging.average_last_checkpoints(model_dir, str(tmp_path / "avg"), n=3)

    fresh = tiny_transformer(12)
    fresh(batch)
    assert restore_model(fresh, str(tmp_path / "avg"), data_identity=identity) == result.path
    for var, value in zip(fresh.weights, initial):
        np.testing.assert_allclose(var.numpy(), value * np.mean(VALUES), rtol=1e-5, atol=1e-6)
    # The average keeps the problem and vocabulary its weights mean.
    for other, says in (({"vocab_fingerprint": "f2"}, "with another vocabulary"),
                        ({"problem": "copy"}, "trained on problem reverse")):
        with pytest.raises(CheckpointStateError, match=says):
            restore_model(fresh, str(tmp_path / "avg"), data_identity={**identity, **other})
