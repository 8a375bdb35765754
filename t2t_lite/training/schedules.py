"""Learning-rate schedules, looked up by the hparam ``learning_rate_schedule``."""
from __future__ import annotations

import keras
import tensorflow as tf

from t2t_lite.hparam import HParams


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
    """A fixed rate ``learning_rate`` (used by RNN baselines and tests)."""

    def __init__(self, learning_rate: float):
        self.learning_rate = learning_rate

    def __call__(self, step):
        return tf.constant(self.learning_rate, tf.float32)

    def get_config(self) -> dict:
        return {"learning_rate": self.learning_rate}


SCHEDULES = ("rsqrt_decay", "constant")


def learning_rate_schedule(hparams: HParams) -> keras.optimizers.schedules.LearningRateSchedule:
    """The schedule named by ``hparams.learning_rate_schedule``."""
    name = hparams.learning_rate_schedule
    if name == "rsqrt_decay":
        return RsqrtDecay(hparams.hidden_size, hparams.learning_rate_warmup_steps,
                          hparams.learning_rate)
    if name == "constant":
        return Constant(hparams.learning_rate)
    raise ValueError(f"unknown learning_rate_schedule {name!r}; "
                     f"choose one of: {', '.join(SCHEDULES)}")


def adam_optimizer(hparams: HParams) -> keras.optimizers.Optimizer:
    """Adam with the hparams' betas, epsilon, schedule and optional clipping."""
    return keras.optimizers.Adam(
        learning_rate=learning_rate_schedule(hparams),
        beta_1=hparams.optimizer_adam_beta1,
        beta_2=hparams.optimizer_adam_beta2,
        epsilon=hparams.optimizer_adam_epsilon,
        global_clipnorm=hparams.clip_grad_norm or None)
