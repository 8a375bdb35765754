"""The optimizers and learning-rate schedules the hparams sets name."""
import keras
import numpy as np
import pytest
import tensorflow as tf

from t2t_lite.builtins import load_builtins
from t2t_lite.hparams.lstm import lstm_bahdanau, lstm_luong_global_general, lstm_sutskever
from t2t_lite.hparams.transformer import transformer_base
from t2t_lite.training.optimizers import DecoupledAdamW, make_optimizer
from t2t_lite.training.schedules import StepDecay, learning_rate_schedule
from t2t_lite.training.train_step import decayed
from toys import fixed_reverse_batches, make_trainer, training_hparams

load_builtins()


def test_sutskever_schedule_halves_every_half_epoch_after_five_epochs():
    schedule = learning_rate_schedule(lstm_sutskever())
    assert isinstance(schedule, StepDecay)
    for step, rate in [(0, 0.7), (469_999, 0.7), (470_000, 0.35), (516_999, 0.35),
                       (517_000, 0.175), (564_000, 0.0875)]:
        assert float(schedule(step)) == pytest.approx(rate, rel=1e-6), step


def test_linear_warmup_ramps_up_to_the_rate_then_decays_as_step_decay():
    hparams = lstm_sutskever().parse("learning_rate_schedule=linear_warmup,"
                                     "learning_rate_warmup_steps=100")
    schedule = learning_rate_schedule(hparams)
    for step, rate in [(0, 0.007), (49, 0.35), (99, 0.7), (5000, 0.7), (470_000, 0.35)]:
        assert float(schedule(step)) == pytest.approx(rate, rel=1e-6), step
    assert StepDecay(**schedule.get_config()).get_config() == schedule.get_config()


@pytest.mark.parametrize("make_hparams, optimizer_class", [
    (transformer_base, keras.optimizers.Adam),
    (lstm_sutskever, keras.optimizers.SGD),
    (lstm_luong_global_general, keras.optimizers.SGD),
    (lstm_bahdanau, keras.optimizers.Adadelta),
])
def test_each_paper_set_gets_its_papers_optimizer(make_hparams, optimizer_class):
    optimizer = make_optimizer(make_hparams())
    assert type(optimizer) is optimizer_class
    # Clipping is the trainer's (of the summed gradient), never Keras's per replica.
    assert optimizer.global_clipnorm is None and optimizer.clipnorm is None


def test_bahdanau_adadelta_settings():
    optimizer = make_optimizer(lstm_bahdanau())
    assert optimizer.rho == 0.95 and optimizer.epsilon == 1e-6


@pytest.mark.parametrize("overrides, message", [
    ("optimizer=adagrad", "'optimizer' must be one of 'adam', 'sgd', 'adadelta', 'adam_w', "
     "'adafactor', 'momentum', 'multistep_adam', got 'adagrad'"),
    ("learning_rate_schedule=cosine", "'learning_rate_schedule' has an unknown factor 'cosine' "
     "in 'cosine': a schedule is one of rsqrt_decay, constant, step_decay, linear_warmup, or"),
    ("learning_rate_schedule=step_decay,learning_rate_decay_steps=0",
     "'learning_rate_decay_steps' must be >= 1"),
])
def test_unknown_names_list_the_known_ones(overrides, message):
    with pytest.raises(ValueError, match=message):
        make_optimizer(transformer_base().parse(overrides))


# T2T's optimizers, one step each on a tiny variable, against their updates written out.
LR = 0.01


def step_on(optimizer_name, overrides, gradients, start):
    """The variable after one apply_gradients per gradient, under a constant rate LR."""
    hparams = transformer_base().parse(f"optimizer={optimizer_name},learning_rate={LR},"
                                       f"learning_rate_schedule=constant{overrides}")
    optimizer = make_optimizer(hparams)
    variable = keras.Variable(np.array(start, np.float32))
    for gradient in gradients:
        optimizer.apply_gradients([(tf.constant(gradient, tf.float32), variable)])
    return optimizer, variable.numpy()


def test_adam_w_decays_each_weight_by_weight_decay_not_by_the_rate():
    """T2T's AdamW (TensorFlow's): w -= weight_decay * w, then Adam's step. With a zero
    gradient Adam's step is 0, so the decay shows alone; Keras's AdamW would take off
    weight_decay * LR * w."""
    optimizer, after = step_on("adam_w", ",weight_decay=0.1", [[0.0, 0.0]], [1.0, -2.0])
    assert type(optimizer) is DecoupledAdamW
    np.testing.assert_allclose(after, [0.9, -1.8], rtol=1e-6)
    _, moved = step_on("adam_w", ",weight_decay=0.1", [[1.0, -1.0]], [1.0, -2.0])
    # Adam's first step is LR * sign(g) (m / sqrt(v) = 1), after the decay.
    np.testing.assert_allclose(moved, [0.9 - LR, -1.8 + LR], rtol=1e-5)


def test_multistep_adam_is_adam():
    optimizer, after = step_on("multistep_adam", "", [[1.0, -1.0]], [1.0, -2.0])
    assert type(optimizer) is keras.optimizers.Adam
    np.testing.assert_allclose(after, [1.0 - LR, -2.0 + LR], rtol=1e-5)


@pytest.mark.parametrize("nesterov, expected", [
    # TensorFlow's MomentumOptimizer: a = m * a + g; w -= LR * a (Nesterov's: LR * (g + m * a)).
    (False, lambda g, m: 1.0 - LR * g - LR * (m * g + g)),
    (True, lambda g, m: 1.0 - LR * (g + m * g) - LR * (g + m * (m * g + g))),
])
def test_momentum_follows_tensorflows_momentum_at_a_constant_rate(nesterov, expected):
    optimizer, after = step_on("momentum", f",optimizer_momentum_momentum=0.5,"
                               f"optimizer_momentum_nesterov={nesterov}", [[2.0], [2.0]], [1.0])
    assert type(optimizer) is keras.optimizers.SGD and optimizer.nesterov is nesterov
    np.testing.assert_allclose(after, [expected(2.0, 0.5)], rtol=1e-5)


def t2t_adafactor(w, gradients, lr, exponent, threshold):
    """T2T's Adafactor update, factored (rank 2), no first moment, parameter scale."""
    vr = np.zeros(w.shape[0])
    vc = np.zeros(w.shape[1])
    for step, g in enumerate(gradients):
        decay = 1.0 - (step + 1.0) ** -exponent
        squared = g ** 2 + 1e-30
        vr = decay * vr + (1 - decay) * squared.mean(-1)
        vc = decay * vc + (1 - decay) * squared.mean(-2)
        x = g / np.sqrt(vr / vr.mean())[:, None] / np.sqrt(vc)[None, :]
        x /= max(1.0, np.sqrt(np.mean(x ** 2)) / threshold)
        w = w - lr * max(np.sqrt(np.mean(w ** 2)), 1e-3) * x
    return w


def test_adafactor_takes_t2ts_steps():
    start = np.array([[0.5, -1.0, 2.0], [1.5, 0.2, -0.3]])
    gradients = [np.array([[0.1, -0.4, 0.3], [0.2, 0.0, -1.0]]),
                 np.array([[-0.2, 0.1, 0.3], [0.5, 0.4, 0.1]])]
    optimizer, after = step_on("adafactor", ",optimizer_adafactor_memory_exponent=0.7,"
                               "optimizer_adafactor_clipping_threshold=1.5", gradients, start)
    assert type(optimizer) is keras.optimizers.Adafactor
    np.testing.assert_allclose(after, t2t_adafactor(start, gradients, LR, 0.7, 1.5), rtol=1e-4)


@pytest.mark.parametrize("overrides", ["optimizer_adafactor_beta1=0.9",
                                       "optimizer_adafactor_factored=false",
                                       "optimizer_adafactor_multiply_by_parameter_scale=false",
                                       "optimizer_adafactor_decay_type=adam"])
def test_adafactor_choices_keras_does_not_have_are_refused(overrides):
    with pytest.raises(ValueError, match="hparam 'optimizer_adafactor_"):
        transformer_base().parse(overrides)


def test_biases_and_norm_shifts_are_not_decayed():
    assert not decayed(keras.Variable(np.zeros(3, np.float32), name="bias"))
    assert not decayed(keras.Variable(np.zeros(3, np.float32), name="beta"))
    assert decayed(keras.Variable(np.zeros(3, np.float32), name="gamma"))
    assert decayed(keras.Variable(np.zeros((2, 3), np.float32), name="kernel"))


def weight_decay_step(reverse_data, folder, overrides, strategy=None):
    """A tiny Transformer's trainer under SGD at the constant rate 0.5."""
    hparams = training_hparams("optimizer=sgd,learning_rate_schedule=constant,"
                               "learning_rate=0.5," + overrides)
    return make_trainer(reverse_data, folder, hparams, strategy)


def test_weight_decay_adds_t2ts_l2_term_to_the_loss(reverse_data, tmp_path, two_cpu_strategy):
    """SGD: w -= LR * (g + weight_decay * w) for the decayed weights, w -= LR * g for
    biases and norm shifts, on one device and on two replicas alike."""
    plain = weight_decay_step(reverse_data, tmp_path / "plain", "weight_decay=0.0")
    decaying = weight_decay_step(reverse_data, tmp_path / "decay", "weight_decay=0.1")
    mirrored = weight_decay_step(reverse_data, tmp_path / "two", "weight_decay=0.1",
                                 two_cpu_strategy)
    start = plain.model.get_weights()
    decaying.model.set_weights(start)
    mirrored.model.set_weights(start)
    for trainer in (plain, decaying, mirrored):
        trainer.train_on(fixed_reverse_batches(), 1)
    assert {decayed(v) for v in plain.model.trainable_variables} == {True, False}
    by_name = {v.path: w for v, w in zip(plain.model.weights, start)}
    for without, with_decay, two in zip(plain.model.trainable_variables,
                                        decaying.model.trainable_variables,
                                        mirrored.model.trainable_variables):
        w0 = by_name[without.path]
        expected = without.numpy() - (0.5 * 0.1 * w0 if decayed(without) else 0.0)
        np.testing.assert_allclose(with_decay.numpy(), expected, rtol=1e-4, atol=1e-6)
        np.testing.assert_allclose(two.numpy(), expected, rtol=1e-4, atol=1e-6)


def test_weight_decay_is_scaled_with_the_loss_under_float16(reverse_data, tmp_path):
    """Under loss scaling the gradient the optimizer gets is scaled; so is the L2 term's."""
    plain = weight_decay_step(reverse_data, tmp_path / "plain",
                              "weight_decay=0.0,dtype=mixed_float16")
    decaying = weight_decay_step(reverse_data, tmp_path / "decay",
                                 "weight_decay=0.1,dtype=mixed_float16")
    start = plain.model.get_weights()
    decaying.model.set_weights(start)
    for trainer in (plain, decaying):
        trainer.optimizer.dynamic_scale.assign(8.0)  # no overflow: the first step is taken
        trainer.train_on(fixed_reverse_batches(), 1)
        assert int(trainer.optimizer.iterations) == 1
    by_name = {v.path: w for v, w in zip(plain.model.weights, start)}
    for without, with_decay in zip(plain.model.trainable_variables,
                                   decaying.model.trainable_variables):
        expected = without.numpy() - (0.05 * by_name[without.path] if decayed(without) else 0.0)
        np.testing.assert_allclose(with_decay.numpy(), expected, rtol=1e-4, atol=1e-6)
