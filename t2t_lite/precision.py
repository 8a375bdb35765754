"""The ``dtype`` hparam: float32, or Keras mixed precision (float32 variables,
bfloat16 or float16 computation).

Under a mixed policy the model still keeps the numerically touchy parts in
float32: attention softmax (``layers/attention.py``), layer normalization
(Keras computes it in at least float32) and the logits and loss (the models
cast logits to float32). ``mixed_float16`` needs loss scaling (GPUs);
``mixed_bfloat16`` does not (CPUs with AVX-512 BF16, TPUs, recent GPUs).

A model that only infers (``Experiment.build_model(inference=True)``) holds its
weights in the compute dtype instead (``inference_policy``; layer norms keep
float32 ones, ``norm_policy``) and takes the trained float32 weights by
``copy_weights``: the same products, since mixed precision casts every weight
where it is used, but a decode step no longer casts them all again at every
output token, and they take half the memory.
"""
from __future__ import annotations

import contextlib
from typing import Iterator

import keras
import tensorflow as tf

DTYPES = ("float32", "mixed_bfloat16", "mixed_float16")


def check_dtype(name: str) -> str:
    if name not in DTYPES:
        raise ValueError(f"unknown dtype={name!r}; use one of {', '.join(DTYPES)}")
    return name


@contextlib.contextmanager
def dtype_policy(name: str, inference: bool = False) -> Iterator[None]:
    """Layers created inside take the Keras policy of dtype ``name`` (with
    ``inference``, its ``inference_policy``); the global one is restored after."""
    policy = inference_policy(name) if inference else check_dtype(name)
    previous = keras.config.dtype_policy()
    keras.config.set_dtype_policy(policy)
    try:
        yield
    finally:
        keras.config.set_dtype_policy(previous)


def inference_policy(name: str) -> str:
    """The Keras policy of an inference model under dtype ``name``: variables in its
    compute dtype (``mixed_bfloat16`` -> ``bfloat16``; ``float32`` unchanged)."""
    return check_dtype(name).removeprefix("mixed_")


def norm_policy() -> str:
    """The policy of a layer norm created now: the current one, but with float32
    variables where that one holds them in 16 bits (an inference model's), so that
    its weights are the trained ones exactly."""
    name = keras.config.dtype_policy().name
    return f"mixed_{name}" if name in ("bfloat16", "float16") else name


def copy_weights(source: keras.Model, target: keras.Model) -> None:
    """``target``'s weights := ``source``'s, each cast to the target's dtype: two
    models of one class and hparams (their weights in the same order)."""
    for from_weight, to_weight in zip(source.weights, target.weights, strict=True):
        if from_weight.shape != to_weight.shape:
            raise ValueError(f"weights differ: {from_weight.path} {from_weight.shape} "
                             f"against {to_weight.path} {to_weight.shape}")
        to_weight.assign(tf.cast(from_weight, to_weight.dtype))
