"""tensor2tensor's learning_rate_schedule products: each factor against its formula,
written out here, at our steps (iterations + 1), and the strings refused at parse time."""
import logging
import math

import numpy as np
import pytest

from t2t_lite.hparam import HParamsError
from t2t_lite.hparams.transformer import transformer_base
from t2t_lite.training.schedules import (Constant, RsqrtDecay, T2TProduct,
                                         learning_rate_schedule)

V3 = "constant*linear_warmup*rsqrt_decay*rsqrt_hidden_size"  # T2T's transformer_base_v3
BASE = "hidden_size=512,learning_rate_warmup_steps=100,learning_rate_decay_steps=50,"
ITERATIONS = [0, 1, 49, 98, 99, 100, 149, 150, 151, 400]


def hparams(overrides):
    return transformer_base().parse(BASE + overrides)


def rate(schedule_string, overrides="", iterations=ITERATIONS):
    schedule = learning_rate_schedule(hparams(f"learning_rate_schedule={schedule_string},"
                                              + overrides))
    return np.array([float(schedule(i)) for i in iterations])


def steps(iterations=ITERATIONS):
    return np.array(iterations, float) + 1.0  # our steps count from 1


W, D = 100.0, 50.0  # warmup and decay steps of BASE


def noam(s):
    return 5000.0 * 512 ** -0.5 * np.minimum(s * W ** -1.5, s ** -0.5)


def exp_warmup(s):
    return 0.01 ** ((W - s) / W)


FACTORS = [
    # A trailing '*' (T2T dropped empty names) makes a lone factor T2T's.
    ("constant*", "learning_rate_constant=0.3", lambda s: np.full_like(s, 0.3)),
    ("rsqrt_decay*", "", lambda s: 1.0 / np.sqrt(np.maximum(s, W))),
    ("linear_warmup", "", lambda s: np.minimum(1.0, s / W)),
    ("rsqrt_decay*constant", "", lambda s: 1.0 / np.sqrt(np.maximum(s, W))),
    ("rsqrt_normalized_decay", "", lambda s: np.sqrt(W) / np.sqrt(np.maximum(s, W))),
    ("rsqrt_hidden_size", "", lambda s: np.full_like(s, 512 ** -0.5)),
    ("cosdecay", "", lambda s: np.where(s <= W, 1.0, 0.5 * (1 + np.cos(math.pi * s / D)))),
    ("exp_decay", "learning_rate_decay_rate=0.5",
     lambda s: 0.5 ** np.maximum((s - W) / D, 0.0)),
    ("exp_decay", "learning_rate_decay_rate=0.5,learning_rate_decay_staircase=true",
     lambda s: 0.5 ** np.floor(np.maximum((s - W) / D, 0.0))),
    ("multi_cycle_cos_decay", "",
     lambda s: np.cos((np.maximum(s, W) - W) * math.pi / D) / 2 + 0.5),
    # legacy: learning_rate times T2T's 0.002 for Adam (transformer_base's optimizer).
    ("legacy", "learning_rate=0.2,learning_rate_decay_scheme=noam",
     lambda s: noam(s) * 0.002 * 0.2),
    ("legacy", "learning_rate=0.2,optimizer=sgd,learning_rate_decay_scheme=noam",
     lambda s: noam(s) * 0.2),
    ("legacy", "learning_rate=0.2,optimizer=adam_w",
     lambda s: np.where(s < W, exp_warmup(s), 1.0) * 0.002 * 0.2),
    ("legacy", "learning_rate=0.2,learning_rate_decay_scheme=exp,learning_rate_decay_rate=0.5",
     lambda s: np.where(s < W, exp_warmup(s), 0.5 ** ((s - W) / D)) * 0.002 * 0.2),
    ("legacy", "learning_rate=0.2,learning_rate_decay_scheme=sqrt,optimizer=momentum",
     lambda s: np.where(s < W, exp_warmup(s), 500.0 / np.sqrt(np.maximum(s - W, 1.0))) * 0.2),
    (" constant * linear_warmup ", "learning_rate_constant=3.0",
     lambda s: 3.0 * np.minimum(1.0, s / W)),
]


@pytest.mark.parametrize("schedule, overrides, formula", FACTORS)
def test_each_t2t_factor_follows_its_formula_at_our_steps(schedule, overrides, formula):
    np.testing.assert_allclose(rate(schedule, overrides), formula(steps()), rtol=1e-5)


def test_legacy_noam_is_t2ts_own_curve_update_for_update():
    """T2T's noam wrote (global_step + 1), its update's number: our step, not one on."""
    t2t_global_steps = np.array(ITERATIONS, float)  # T2T's k-th update ran at step k - 1
    np.testing.assert_allclose(
        rate("legacy", "learning_rate=0.1,learning_rate_decay_scheme=noam"),
        5000.0 * 512 ** -0.5 * np.minimum((t2t_global_steps + 1) * W ** -1.5,
                                          (t2t_global_steps + 1) ** -0.5) * 0.002 * 0.1,
        rtol=1e-5)


def test_transformer_v3_string_is_our_rsqrt_decay_at_every_step():
    """T2T's transformer_base_v3 (learning_rate_constant=2.0) is our rsqrt_decay with
    learning_rate=2.0 at each of our steps, 1 on. (T2T's own count starts at 0, where
    its linear_warmup gives a first update at rate 0; ours has no step 0.)"""
    iterations = np.arange(0, 30_000, dtype=np.int64)
    t2t = learning_rate_schedule(transformer_base().parse(
        f"learning_rate_schedule={V3},learning_rate_constant=2.0,"
        "learning_rate_warmup_steps=8000"))
    ours = learning_rate_schedule(transformer_base().parse(
        "learning_rate_schedule=rsqrt_decay,learning_rate=2.0,learning_rate_warmup_steps=8000"))
    assert isinstance(t2t, T2TProduct) and isinstance(ours, RsqrtDecay)
    np.testing.assert_allclose(t2t(iterations).numpy(), ours(iterations).numpy(), rtol=1e-5)
    s = iterations[:3] + 1.0
    np.testing.assert_allclose(t2t(iterations[:3]).numpy(),
                               2.0 * 512 ** -0.5 * s * 8000 ** -1.5, rtol=1e-5)


def test_product_string_parses_from_the_command_line():
    h = transformer_base().parse(f"learning_rate_schedule={V3}", source="--hparams")
    assert h.learning_rate_schedule == V3


@pytest.mark.parametrize("overrides, message", [
    (f"learning_rate_schedule={V3}*bogus",
     r"--hparams: hparam 'learning_rate_schedule' has an unknown factor 'bogus' in .*"
     r"T2T's factors joined by '\*': constant, linear_warmup, rsqrt_decay, "
     r"rsqrt_normalized_decay, rsqrt_hidden_size, cosdecay, exp_decay"),
    ("learning_rate_schedule=constant*linear_decay",
     "T2T's factor 'linear_decay' is not offered: it reads train_steps, which is the "
     "--train_steps flag here, not an hparam: use exp_decay or multi_cycle_cos_decay"),
    ("learning_rate_schedule=linear_warmup*single_cycle_cos_decay",
     "'single_cycle_cos_decay' is not offered: .* use multi_cycle_cos_decay with "
     "learning_rate_decay_steps = train_steps - learning_rate_warmup_steps"),
    ("learning_rate_schedule=cosine", "unknown factor 'cosine'"),
    ("learning_rate_decay_scheme=cosine", "hparam 'learning_rate_decay_scheme' must be one "
     "of 'none', 'noam', 'exp', 'sqrt', got 'cosine'"),
    ("optimizer=Adam", "hparam 'optimizer' is 'adam' here: 'Adam' is older T2T's spelling, "
     "write optimizer=adam"),
    ("optimizer=Adafactor", "write optimizer=adafactor"),
    ("optimizer=true_adam", "T2T's 'true_adam' is not offered; write optimizer=adam"),
    ("optimizer=rms_prop", "hparam 'optimizer' must be one of 'adam', 'sgd', 'adadelta', "
     "'adam_w', 'adafactor', 'momentum', 'multistep_adam', got 'rms_prop'"),
])
def test_bad_strings_are_refused_at_parse_time_in_one_line(overrides, message):
    h = transformer_base()
    before = h.values()
    with pytest.raises(HParamsError, match=message) as raised:
        h.parse(overrides, source="--hparams")
    assert "\n" not in str(raised.value)
    assert h.values() == before


def test_lone_constant_is_ours_and_t2ts_meaning_is_not_guessed():
    """Our lone "constant" is learning_rate; T2T's was learning_rate_constant. A set
    that gives the two different rates under it is refused, naming both."""
    lone = learning_rate_schedule(hparams("learning_rate_schedule=constant,learning_rate=0.5"))
    assert isinstance(lone, Constant) and float(lone(7)) == 0.5
    same = learning_rate_schedule(hparams("learning_rate_schedule=constant,learning_rate=0.5,"
                                          "learning_rate_constant=0.5"))
    assert float(same(7)) == 0.5
    with pytest.raises(ValueError, match=r"learning_rate_schedule=constant is the rate "
                       r"learning_rate \(0.5\) here, while T2T's lone 'constant' was "
                       r"learning_rate_constant \(2\): set learning_rate=2"):
        learning_rate_schedule(hparams("learning_rate_schedule=constant,learning_rate=0.5,"
                                       "learning_rate_constant=2.0"))
    # In a product, "constant" is T2T's factor: learning_rate_constant, never learning_rate.
    np.testing.assert_allclose(rate("constant*rsqrt_hidden_size", "learning_rate_constant=2.0"),
                               2.0 * 512 ** -0.5, rtol=1e-6)


def test_ignored_learning_rate_is_said_once(caplog):
    with caplog.at_level(logging.WARNING):
        schedule = learning_rate_schedule(hparams(f"learning_rate_schedule={V3},"
                                                  "learning_rate=0.2"))
        schedule(0), schedule(5)
    said = [r.getMessage() for r in caplog.records if "is ignored" in r.getMessage()]
    assert said == [f"learning_rate=0.2 is ignored under learning_rate_schedule={V3}, as in "
                    "tensor2tensor: its rate is learning_rate_constant=1"]
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        learning_rate_schedule(hparams(f"learning_rate_schedule={V3}"))  # the default: silent
        learning_rate_schedule(hparams("learning_rate_schedule=legacy,learning_rate=0.2"))
    assert not [r for r in caplog.records if "is ignored" in r.getMessage()]


def test_product_schedule_config_round_trips():
    schedule = learning_rate_schedule(hparams("learning_rate_schedule=legacy*exp_decay,"
                                              "learning_rate_decay_scheme=noam"))
    twin = T2TProduct(**schedule.get_config())
    assert twin.get_config() == schedule.get_config()
    assert float(twin(123)) == pytest.approx(float(schedule(123)))
