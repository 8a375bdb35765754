"""Learning-rate schedules, looked up by the hparam ``learning_rate_schedule``.

Two kinds of name (``hparams/schedule_grammar.py`` checks them at parse time):

* t2t-lite's own: ``rsqrt_decay``, ``constant``, ``step_decay``, ``linear_warmup``
  (``hparams/common.py`` documents them); they read ``learning_rate``.
* tensor2tensor's product: factor names joined by ``*`` (``T2TProduct``), each
  factor in T2T's meaning. ``constant`` there is ``learning_rate_constant``, and,
  as in T2T, ``learning_rate`` is not read unless the product holds ``legacy``
  (a value of it other than the default is said in one warning line).

A lone name is always ours, also where T2T has a factor of that name, so a set
means one thing whoever wrote it. T2T's lone factor is written with a trailing
``*`` (T2T dropped empty names too): ``constant*``, ``rsqrt_decay*``. Where
T2T's lone factor differs from ours:

* ``constant``: ours is ``learning_rate``, T2T's was ``learning_rate_constant``.
  A set that gives ``learning_rate_constant`` a value of its own, other than
  ``learning_rate``, under ``constant`` is refused in one line (it cannot be told
  which it means); set ``learning_rate`` to the rate.
* ``rsqrt_decay``: ours is the paper's ``learning_rate * hidden_size^-0.5 *
  min(step^-0.5, step * warmup^-1.5)``; T2T's lone factor was ``rsqrt(max(step,
  warmup))``, here ``rsqrt_decay*`` (T2T's Adafactor sets used it).
* ``linear_warmup``: ours is step_decay's rate reached linearly; T2T's lone
  factor ``min(1, step / warmup)``, here ``linear_warmup*``.

Steps. Our schedules count steps from 1: step = the optimizer's iterations + 1,
the number of the update being made. T2T's factors read its global step, which
counts from 0, so a T2T run's k-th update used its factors at k - 1 (its first
update, under linear_warmup, at rate 0). The T2T factors here are evaluated at
our step: the same curve, one update earlier, never a zero first update. The
legacy ``noam`` scheme wrote ``step + 1`` itself, so it is T2T's update for update.

``optimizer_multistep_accumulate_steps``: T2T divided its step by it, since its
global step counted accumulated batches. Here it is gradient_accumulation_steps,
and the optimizer's iterations count updates already: nothing is divided.
"""
from __future__ import annotations

import logging
import math

import keras
import tensorflow as tf

from t2t_lite.hparam import HParams
from t2t_lite.hparams.common import SCHEDULES
from t2t_lite.hparams.schedule_grammar import t2t_factors


class RsqrtDecay(keras.optimizers.schedules.LearningRateSchedule):
    """The paper's schedule: ``scale * d^-0.5 * min(step^-0.5, step * warmup^-1.5)``.

    ``step`` counts from 1 (the optimizer's iteration count starts at 0).
    """

    def __init__(self, hidden_size: int, warmup_steps: int, scale: float = 1.0):
        self.hidden_size = hidden_size
        self.warmup_steps = warmup_steps
        self.scale = scale

    def __call__(self, step):
        step = tf.cast(step, tf.float32) + 1.0
        warmup = tf.cast(self.warmup_steps, tf.float32)
        return (self.scale * self.hidden_size ** -0.5
                * tf.minimum(tf.math.rsqrt(step), step * warmup ** -1.5))

    def get_config(self) -> dict:
        return {"hidden_size": self.hidden_size, "warmup_steps": self.warmup_steps,
                "scale": self.scale}


class Constant(keras.optimizers.schedules.LearningRateSchedule):
    """A fixed rate ``learning_rate``."""

    def __init__(self, learning_rate: float):
        self.learning_rate = learning_rate

    def __call__(self, step):
        return tf.constant(self.learning_rate, tf.float32)

    def get_config(self) -> dict:
        return {"learning_rate": self.learning_rate}


class StepDecay(keras.optimizers.schedules.LearningRateSchedule):
    """The RNN papers' schedule: ``learning_rate`` until ``start_step``, then
    multiplied by ``rate`` every ``decay_steps`` (staircase).

    Sutskever et al. halved SGD's 0.7 every half epoch after 5 epochs; Luong et
    al. halved 1.0 every epoch after 5. Steps count from 0 (the optimizer's
    iteration count), so ``learning_rate * rate`` first applies at step
    ``start_step``.
    """

    def __init__(self, learning_rate: float, start_step: int, decay_steps: int, rate: float,
                 warmup_steps: int = 0):
        if decay_steps < 1:
            raise ValueError(f"hparam learning_rate_decay_steps must be >= 1, got {decay_steps}")
        self.learning_rate = learning_rate
        self.start_step = start_step
        self.decay_steps = decay_steps
        self.rate = rate
        self.warmup_steps = warmup_steps

    def __call__(self, step):
        step = tf.cast(step, tf.float32)
        past = step - float(self.start_step)
        decays = tf.where(past < 0.0, 0.0, tf.floor(past / float(self.decay_steps)) + 1.0)
        rate = self.learning_rate * tf.pow(tf.constant(self.rate, tf.float32), decays)
        if not self.warmup_steps:
            return rate
        # Linear from learning_rate / warmup_steps at step 0 to the full rate.
        return rate * tf.minimum(1.0, (step + 1.0) / float(self.warmup_steps))

    def get_config(self) -> dict:
        return {"learning_rate": self.learning_rate, "start_step": self.start_step,
                "decay_steps": self.decay_steps, "rate": self.rate,
                "warmup_steps": self.warmup_steps}


class T2TProduct(keras.optimizers.schedules.LearningRateSchedule):
    """tensor2tensor's ``learning_rate_schedule`` product: the ``factors`` in T2T's
    meaning, multiplied, at step = iterations + 1 (the module docstring says why).

    ``learning_rate`` and ``decay_scheme`` are read by ``legacy`` only;
    ``adam_correction`` is T2T's 0.002 for an optimizer named with "adam" there.
    """

    def __init__(self, factors: list[str] | tuple[str, ...], constant: float,
                 warmup_steps: int, hidden_size: int, decay_steps: int, decay_rate: float,
                 staircase: bool, learning_rate: float = 1.0, decay_scheme: str = "none",
                 adam_correction: bool = False):
        self.factors = list(factors)
        self.constant = constant
        self.warmup_steps = warmup_steps
        self.hidden_size = hidden_size
        self.decay_steps = decay_steps
        self.decay_rate = decay_rate
        self.staircase = staircase
        self.learning_rate = learning_rate
        self.decay_scheme = decay_scheme
        self.adam_correction = adam_correction

    def __call__(self, step):
        step = tf.cast(step, tf.float32) + 1.0
        rate = tf.constant(1.0, tf.float32)
        for name in self.factors:
            rate *= self._factor(name, step)
        return rate

    def _factor(self, name: str, step: tf.Tensor) -> tf.Tensor:
        warmup = float(self.warmup_steps)
        if name == "constant":
            return tf.constant(self.constant, tf.float32)
        if name == "linear_warmup":
            return tf.minimum(1.0, step / warmup)
        if name == "rsqrt_decay":
            return tf.math.rsqrt(tf.maximum(step, warmup))
        if name == "rsqrt_normalized_decay":
            return math.sqrt(warmup) * tf.math.rsqrt(tf.maximum(step, warmup))
        if name == "rsqrt_hidden_size":
            return tf.constant(self.hidden_size ** -0.5, tf.float32)
        if name == "cosdecay":  # T2T's "openai gpt": 1 through warmup, then the cosine
            cosine = 0.5 * (1.0 + tf.cos(math.pi * step / float(self.decay_steps)))
            return tf.where(step <= warmup, 1.0, cosine)
        if name == "exp_decay":
            return self._exp_decay(tf.maximum((step - warmup) / float(self.decay_steps), 0.0))
        if name == "multi_cycle_cos_decay":
            past = tf.maximum(step, warmup) - warmup
            return tf.cos(past * math.pi / float(self.decay_steps)) / 2.0 + 0.5
        if name == "legacy":
            return self._legacy(step)
        raise ValueError(f"unknown learning rate factor {name!r}")  # the grammar admits none

    def _exp_decay(self, power: tf.Tensor) -> tf.Tensor:
        if self.staircase:
            power = tf.floor(power)
        return tf.pow(tf.constant(self.decay_rate, tf.float32), power)

    def _legacy(self, step: tf.Tensor) -> tf.Tensor:
        """T2T's legacy_learning_rate_schedule: its warmup, then its decay scheme."""
        warmup = float(self.warmup_steps)
        if self.decay_scheme == "noam":
            # T2T's (global_step + 1) is our step.
            rate = 5000.0 * self.hidden_size ** -0.5 * tf.minimum(
                step * warmup ** -1.5, tf.math.rsqrt(step))
        else:
            # T2T's exponential warmup from 0.01 to 1 (its only one under legacy).
            rising = tf.pow(0.01, (warmup - step) / warmup)
            rate = tf.where(step < warmup, rising, self._legacy_decay(step))
        correction = 0.002 if self.adam_correction else 1.0
        return rate * correction * self.learning_rate

    def _legacy_decay(self, step: tf.Tensor) -> tf.Tensor:
        past = step - float(self.warmup_steps)
        if self.decay_scheme == "exp":
            return self._exp_decay(past / float(self.decay_steps))
        if self.decay_scheme == "sqrt":
            return 500.0 / tf.sqrt(tf.maximum(past, 1.0))
        return tf.constant(1.0, tf.float32)  # "none"

    def get_config(self) -> dict:
        return {"factors": self.factors, "constant": self.constant,
                "warmup_steps": self.warmup_steps, "hidden_size": self.hidden_size,
                "decay_steps": self.decay_steps, "decay_rate": self.decay_rate,
                "staircase": self.staircase, "learning_rate": self.learning_rate,
                "decay_scheme": self.decay_scheme, "adam_correction": self.adam_correction}


def _default(hparams: HParams, key: str, fallback: float) -> float:
    allowed = hparams.range_of(key)
    return allowed.default if allowed is not None else fallback


def learning_rate_schedule(hparams: HParams) -> keras.optimizers.schedules.LearningRateSchedule:
    """The schedule named by ``hparams.learning_rate_schedule``."""
    name = hparams.learning_rate_schedule
    factors = t2t_factors(name)
    if factors is not None:
        return _t2t_product(hparams, factors)
    if name == "rsqrt_decay":
        return RsqrtDecay(hparams.hidden_size, hparams.learning_rate_warmup_steps,
                          hparams.learning_rate)
    if name == "constant":
        constant = hparams.learning_rate_constant
        if constant != _default(hparams, "learning_rate_constant", 1.0) \
                and constant != hparams.learning_rate:
            raise ValueError(
                f"learning_rate_schedule=constant is the rate learning_rate "
                f"({hparams.learning_rate:g}) here, while T2T's lone 'constant' was "
                f"learning_rate_constant ({constant:g}): set learning_rate={constant:g}, or "
                f"write learning_rate_schedule=constant* for T2T's factor")
        return Constant(hparams.learning_rate)
    if name in ("step_decay", "linear_warmup"):
        warmup = hparams.learning_rate_warmup_steps if name == "linear_warmup" else 0
        return StepDecay(hparams.learning_rate, hparams.learning_rate_decay_start_step,
                         hparams.learning_rate_decay_steps, hparams.learning_rate_decay_rate,
                         warmup)
    raise ValueError(f"unknown learning_rate_schedule {name!r}; "
                     f"choose one of: {', '.join(SCHEDULES)}")


def _t2t_product(hparams: HParams, factors: tuple[str, ...]) -> T2TProduct:
    legacy = "legacy" in factors
    default_rate = _default(hparams, "learning_rate", 1.0)
    if not legacy and hparams.learning_rate != default_rate:
        logging.warning("learning_rate=%g is ignored under learning_rate_schedule=%s, as in "
                        "tensor2tensor: its rate is learning_rate_constant=%g",
                        hparams.learning_rate, hparams.learning_rate_schedule,
                        hparams.learning_rate_constant)
    return T2TProduct(
        factors, constant=hparams.learning_rate_constant,
        warmup_steps=hparams.learning_rate_warmup_steps, hidden_size=hparams.hidden_size,
        decay_steps=hparams.learning_rate_decay_steps,
        decay_rate=hparams.learning_rate_decay_rate,
        staircase=hparams.learning_rate_decay_staircase,
        learning_rate=hparams.learning_rate if legacy else 1.0,
        decay_scheme=hparams.learning_rate_decay_scheme,
        # T2T tested the optimizer's name for "adam": adam, adam_w, multistep_adam.
        adam_correction="adam" in hparams.optimizer)
