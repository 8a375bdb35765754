"""The optimizer named by ``hparams.optimizer``, with the hparams' schedule.

Gradient clipping is not the optimizer's job here: Keras clips before its
all-reduce, i.e. each replica's part of the gradient. The trainer clips the
summed gradient instead (``clip_grad_norm``).

tensor2tensor's optimizers, as T2T meant them:

* ``adam``: Keras's Adam. T2T's was LazyAdam, which moves only the embedding rows
  a batch holds; dense Adam (T2T's ``true_adam``) moves every row.
* ``multistep_adam``: Adam; T2T's accumulation over
  ``optimizer_multistep_accumulate_steps`` batches is gradient_accumulation_steps.
* ``adam_w``: Adam with T2T's decoupled weight decay (``DecoupledAdamW``): each
  update first takes ``weight_decay * w`` off every weight, not scaled by the
  learning rate, as TensorFlow's AdamWOptimizer that T2T used did. Keras's AdamW
  multiplies the decay by the learning rate, which would make T2T's values
  (``0.01 * learning_rate_constant``) another, far weaker decay.
* ``momentum``: Keras's SGD with momentum (and Nesterov's, by the hparams).
  Keras keeps the rate inside the velocity, TensorFlow's MomentumOptimizer
  outside: the same steps at a constant rate, slightly others while it changes.
* ``adafactor``: Keras's Adafactor with T2T's keys where they mean the same
  (memory_exponent, clipping_threshold; epsilons as T2T's). What Keras fixes, the
  ranges of the other keys hold to T2T's defaults (no first moment, factored,
  scaled by the parameters, "pow" decay). One difference is left: Keras caps
  the rate at step^-0.5, T2T did not; T2T's Adafactor schedules (``rsqrt_decay``
  factors, rsqrt(max(step, warmup))) stay below it.

``weight_decay`` under every optimizer also adds T2T's L2 term to the loss
(``train_step.py``), adam_w included, as T2T's optimize() did.
"""
from __future__ import annotations

import keras
from keras import ops

from t2t_lite.hparam import HParams
from t2t_lite.hparams.common import OPTIMIZERS
from t2t_lite.training.schedules import learning_rate_schedule


class DecoupledAdamW(keras.optimizers.Adam):
    """Adam whose update first decays each weight by ``decoupled_decay * w``,
    the learning rate left out (Loshchilov & Hutter as TensorFlow 1 wrote it)."""

    def __init__(self, decoupled_decay: float = 0.0, **kwargs):
        super().__init__(**kwargs)
        self.decoupled_decay = decoupled_decay

    def update_step(self, gradient, variable, learning_rate):
        # update_step runs per variable where the variable lives (each replica's
        # copy under a distribution), so the decay needs no plumbing of its own.
        if self.decoupled_decay:
            self.assign_sub(variable, ops.multiply(
                variable, ops.cast(self.decoupled_decay, variable.dtype)))
        super().update_step(gradient, variable, learning_rate)

    def get_config(self) -> dict:
        config = super().get_config()
        config["decoupled_decay"] = self.decoupled_decay
        return config


def make_optimizer(hparams: HParams) -> keras.optimizers.Optimizer:
    """Adam (the Transformer), plain SGD (Sutskever, Luong) or Adadelta (Bahdanau),
    or T2T's adam_w, adafactor, momentum, multistep_adam; under
    ``dtype=mixed_float16`` wrapped in Keras's dynamic loss scaling."""
    optimizer = _optimizer(hparams)
    if hparams.dtype == "mixed_float16":
        return keras.optimizers.LossScaleOptimizer(optimizer)
    return optimizer


def _optimizer(hparams: HParams) -> keras.optimizers.Optimizer:
    name = hparams.optimizer
    schedule = learning_rate_schedule(hparams)
    adam = {"learning_rate": schedule, "beta_1": hparams.optimizer_adam_beta1,
            "beta_2": hparams.optimizer_adam_beta2, "epsilon": hparams.optimizer_adam_epsilon}
    if name in ("adam", "multistep_adam"):
        return keras.optimizers.Adam(**adam)
    if name == "adam_w":
        return DecoupledAdamW(decoupled_decay=hparams.weight_decay, **adam)
    if name == "sgd":
        return keras.optimizers.SGD(learning_rate=schedule)
    if name == "momentum":
        return keras.optimizers.SGD(learning_rate=schedule,
                                    momentum=hparams.optimizer_momentum_momentum,
                                    nesterov=hparams.optimizer_momentum_nesterov)
    if name == "adadelta":
        return keras.optimizers.Adadelta(learning_rate=schedule,
                                         rho=hparams.optimizer_adadelta_rho,
                                         epsilon=hparams.optimizer_adadelta_epsilon)
    if name == "adafactor":
        # T2T's decay 1 - (step + 1)^-exponent is Keras's 1 - step^beta_2_decay at
        # its step (iterations + 1); epsilon_1 / epsilon_2 are T2T's 1e-30 / 1e-3.
        # relative_step=False: the schedule is the rate, as T2T's from hparams.
        return keras.optimizers.Adafactor(
            learning_rate=schedule, beta_2_decay=-hparams.optimizer_adafactor_memory_exponent,
            epsilon_1=1e-30, epsilon_2=1e-3,
            clip_threshold=hparams.optimizer_adafactor_clipping_threshold,
            relative_step=False)
    raise ValueError(f"unknown optimizer {name!r}; choose one of: {', '.join(OPTIMIZERS)}")
