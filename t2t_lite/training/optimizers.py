"""The optimizer named by ``hparams.optimizer``, with the hparams' schedule.

Gradient clipping is not the optimizer's job here: Keras clips before its
all-reduce, i.e. each replica's part of the gradient. The trainer clips the
summed gradient instead (``clip_grad_norm``).
"""
from __future__ import annotations

import keras

from t2t_lite.hparam import HParams
from t2t_lite.hparams.common import OPTIMIZERS
from t2t_lite.training.schedules import learning_rate_schedule


def make_optimizer(hparams: HParams) -> keras.optimizers.Optimizer:
    """Adam (the Transformer), plain SGD (Sutskever, Luong) or Adadelta (Bahdanau);
    under ``dtype=mixed_float16`` wrapped in Keras's dynamic loss scaling."""
    optimizer = _optimizer(hparams)
    if hparams.dtype == "mixed_float16":
        return keras.optimizers.LossScaleOptimizer(optimizer)
    return optimizer


def _optimizer(hparams: HParams) -> keras.optimizers.Optimizer:
    name = hparams.optimizer
    schedule = learning_rate_schedule(hparams)
    if name == "adam":
        return keras.optimizers.Adam(learning_rate=schedule, beta_1=hparams.optimizer_adam_beta1,
                                     beta_2=hparams.optimizer_adam_beta2,
                                     epsilon=hparams.optimizer_adam_epsilon)
    if name == "sgd":
        return keras.optimizers.SGD(learning_rate=schedule)
    if name == "adadelta":
        return keras.optimizers.Adadelta(learning_rate=schedule,
                                         rho=hparams.optimizer_adadelta_rho,
                                         epsilon=hparams.optimizer_adadelta_epsilon)
    raise ValueError(f"unknown optimizer {name!r}; choose one of: {', '.join(OPTIMIZERS)}")
