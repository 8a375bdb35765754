"""A NaN or Inf loss: the run stops naming the step and keeps its last good checkpoint,
or, with skip_nonfinite_steps, the bad step leaves the weights untouched (on one
device and on two replicas alike)."""
import numpy as np
import pytest
import tensorflow as tf

from t2t_lite.training import train_step as train_step_module
from t2t_lite.training.checkpoints import restore_model
from t2t_lite.training.loop_state import NonFiniteLossError
from toys import make_trainer, training_hparams

BATCH = {"inputs": tf.constant([[2, 3, 3, 1], [3, 2, 1, 0]]),
         "targets": tf.constant([[3, 3, 2, 1], [2, 3, 1, 0]])}


def poison(monkeypatch, when):
    """The training loss becomes NaN whenever ``when()`` (a traced bool) holds."""
    original = train_step_module.smoothed_cross_entropy

    def loss(logits, targets, smoothing):
        value, tokens = original(logits, targets, smoothing)
        return tf.where(when(), tf.constant(float("nan")), value), tokens
    monkeypatch.setattr(train_step_module, "smoothed_cross_entropy", loss)


def all_finite(weights):
    return all(np.all(np.isfinite(w)) for w in weights)


def test_a_nan_stops_the_run_and_keeps_the_last_good_checkpoint(reverse_data, tmp_path,
                                                                monkeypatch):
    trainer = make_trainer(reverse_data, tmp_path, training_hparams(), train_steps=8,
                           save_checkpoints_steps=2, eval_every_steps=1000, log_every_steps=1)
    poison(monkeypatch, lambda: trainer.optimizer.iterations >= 4)  # the 5th step is bad
    with pytest.raises(NonFiniteLossError, match=r"at step 5; stopped without saving, so "
                                                 r".*ckpt-4 is the last good checkpoint"):
        trainer.train()
    assert tf.train.latest_checkpoint(str(tmp_path)).endswith("ckpt-4")
    model = trainer.experiment.build_model()
    restore_model(model, str(tmp_path))
    assert all_finite(model.get_weights())


@pytest.mark.parametrize("replicas", [1, 2])
def test_a_skipped_step_leaves_the_weights_untouched(reverse_data, tmp_path, monkeypatch,
                                                     replicas, request):
    strategy = request.getfixturevalue("two_cpu_strategy") if replicas == 2 else None
    trainer = make_trainer(reverse_data, tmp_path, training_hparams("skip_nonfinite_steps=true"),
                           strategy)
    bad = tf.Variable(True)
    poison(monkeypatch, lambda: bad)
    dataset = tf.data.Dataset.from_tensors(BATCH).repeat()
    before = trainer.model.get_weights()
    trainer.train_on(dataset, 1)
    assert trainer.step == 0
    for old, new in zip(before, trainer.model.get_weights()):
        np.testing.assert_array_equal(old, new)
    bad.assign(False)
    trainer.train_on(dataset, 1)
    assert trainer.step == 1 and all_finite(trainer.model.get_weights())
    # The good step after the skipped one is the step a run without it would take.
    fresh = make_trainer(reverse_data, tmp_path / "fresh", training_hparams(), strategy)
    fresh.model.set_weights(before)
    fresh.train_on(dataset, 1)
    for expected, got in zip(fresh.model.get_weights(), trainer.model.get_weights()):
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-7)


def test_skipping_gives_up_on_a_run_of_bad_steps(reverse_data, tmp_path, monkeypatch):
    trainer = make_trainer(reverse_data, tmp_path, training_hparams("skip_nonfinite_steps=true"),
                           train_steps=50, save_checkpoints_steps=1000, eval_every_steps=1000)
    poison(monkeypatch, lambda: trainer.optimizer.iterations >= 2)
    with pytest.raises(NonFiniteLossError, match="20 batches in a row .* after step 2"):
        trainer.train()
    assert trainer.step == 2
