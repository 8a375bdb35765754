"""The optimizers and learning-rate schedules the hparams sets name."""
import keras
import pytest

from t2t_lite.hparams.lstm import lstm_bahdanau, lstm_luong_global_general, lstm_sutskever
from t2t_lite.hparams.transformer import transformer_base
from t2t_lite.training.optimizers import make_optimizer
from t2t_lite.training.schedules import StepDecay, learning_rate_schedule


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
    ("optimizer=adagrad", "'optimizer' must be one of 'adam', 'sgd', 'adadelta', got 'adagrad'"),
    ("learning_rate_schedule=cosine", "'learning_rate_schedule' must be one of 'rsqrt_decay'"),
    ("learning_rate_schedule=step_decay,learning_rate_decay_steps=0",
     "'learning_rate_decay_steps' must be >= 1"),
])
def test_unknown_names_list_the_known_ones(overrides, message):
    with pytest.raises(ValueError, match=message):
        make_optimizer(transformer_base().parse(overrides))
