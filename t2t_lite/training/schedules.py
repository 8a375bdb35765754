"""Learning-rate schedules, looked up by the hparam ``learning_rate_schedule``."""
from __future__ import annotations

import keras
import tensorflow as tf

from t2t_lite.hparam import HParams
from t2t_lite.hparams.common import SCHEDULES


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


def learning_rate_schedule(hparams: HParams) -> keras.optimizers.schedules.LearningRateSchedule:
    """The schedule named by ``hparams.learning_rate_schedule``."""
    name = hparams.learning_rate_schedule
    if name == "rsqrt_decay":
        return RsqrtDecay(hparams.hidden_size, hparams.learning_rate_warmup_steps,
                          hparams.learning_rate)
    if name == "constant":
        return Constant(hparams.learning_rate)
    if name in ("step_decay", "linear_warmup"):
        warmup = hparams.learning_rate_warmup_steps if name == "linear_warmup" else 0
        return StepDecay(hparams.learning_rate, hparams.learning_rate_decay_start_step,
                         hparams.learning_rate_decay_steps, hparams.learning_rate_decay_rate,
                         warmup)
    raise ValueError(f"unknown learning_rate_schedule {name!r}; "
                     f"choose one of: {', '.join(SCHEDULES)}")
