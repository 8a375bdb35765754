"""The ``dtype`` hparam: float32, or Keras mixed precision (float32 variables,
bfloat16 or float16 computation).

Under a mixed policy the model still keeps the numerically touchy parts in
float32: attention softmax (``layers/attention.py``), layer normalization
(Keras computes it in at least float32) and the logits and loss (the models
cast logits to float32). ``mixed_float16`` needs loss scaling (GPUs);
``mixed_bfloat16`` does not (CPUs with AVX-512 BF16, TPUs, recent GPUs).
"""
from __future__ import annotations

import contextlib
from typing import Iterator

import keras

DTYPES = ("float32", "mixed_bfloat16", "mixed_float16")


def check_dtype(name: str) -> str:
    if name not in DTYPES:
        raise ValueError(f"unknown dtype={name!r}; use one of {', '.join(DTYPES)}")
    return name


@contextlib.contextmanager
def dtype_policy(name: str) -> Iterator[None]:
    """Layers created inside take Keras's ``name`` policy; the global one is restored after."""
    previous = keras.config.dtype_policy()
    keras.config.set_dtype_policy(check_dtype(name))
    try:
        yield
    finally:
        keras.config.set_dtype_policy(previous)
