import math

import numpy as np
import pytest
import tensorflow as tf

from t2t_lite.hparams.transformer import transformer_base
from t2t_lite.training.losses import smoothed_cross_entropy
from t2t_lite.training.schedules import RsqrtDecay, learning_rate_schedule


def test_unsmoothed_loss_is_cross_entropy_over_nonpadding():
    logits = tf.constant(np.random.RandomState(0).randn(2, 3, 5), tf.float32)
    targets = tf.constant([[2, 3, 0], [4, 1, 0]])
    loss_sum, count = smoothed_cross_entropy(logits, targets, 0.0)
    log_probs = tf.nn.log_softmax(logits).numpy()
    expected = -sum(log_probs[b, t, targets[b, t]] for b in range(2) for t in range(2))
    assert count.numpy() == 4
    np.testing.assert_allclose(loss_sum.numpy(), expected, rtol=1e-5)


def test_smoothed_loss_is_zero_at_the_smoothed_target():
    vocab, ls = 6, 0.1
    target_dist = np.full(vocab, ls / (vocab - 1))
    target_dist[3] = 1 - ls
    logits = tf.constant(np.log(target_dist)[None, None, :], tf.float32)
    loss_sum, _ = smoothed_cross_entropy(logits, tf.constant([[3]]), ls)
    assert abs(loss_sum.numpy()) < 1e-5
    worse, _ = smoothed_cross_entropy(logits, tf.constant([[2]]), ls)
    assert worse.numpy() > 0.5


@pytest.mark.parametrize("ls", [0.0, 0.1])
def test_loss_gradient_is_the_gradient_of_its_formula(ls):
    """The hand-written gradient (p - q) against autodiff of the smoothed loss as a
    formula, padding included."""
    vocab = 7
    logits = tf.constant(np.random.RandomState(1).randn(2, 4, vocab) * 3, tf.float32)
    targets = tf.constant([[2, 5, 1, 0], [6, 3, 0, 0]])
    low = ls / (vocab - 1)
    target_distribution = tf.one_hot(targets, vocab, on_value=1.0 - ls, off_value=low)
    weights = tf.cast(targets != 0, tf.float32)[..., None]
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(logits)
        loss_sum, _ = smoothed_cross_entropy(logits, targets, ls)
        formula = -tf.reduce_sum(tf.nn.log_softmax(logits) * target_distribution * weights)
    np.testing.assert_allclose(tape.gradient(loss_sum, logits).numpy(),
                               tape.gradient(formula, logits).numpy(), atol=1e-6)


@pytest.mark.parametrize("ls", [1.0, -0.1])
def test_label_smoothing_outside_its_range_is_refused(ls):
    with pytest.raises(ValueError, match=r"label_smoothing must be in \[0, 1\)"):
        smoothed_cross_entropy(tf.zeros([1, 1, 4]), tf.constant([[2]]), ls)


def test_rsqrt_decay_matches_the_paper_formula():
    schedule = learning_rate_schedule(transformer_base())
    assert isinstance(schedule, RsqrtDecay)
    for step in (1, 100, 4000, 10000):
        expected = 512 ** -0.5 * min(step ** -0.5, step * 4000 ** -1.5)
        assert math.isclose(float(schedule(step - 1)), expected, rel_tol=1e-5)
