#!/usr/bin/env python3
"""The float32 products of a training step in each form TensorFlow offers, as JSON.

A training step of ``--shape`` (``--tokens`` rows: 128 sentences x 32 target
tokens in speed.py) runs, per projection, the product ``x W`` and its two
gradients, ``dy W^T`` and ``x^T dy``. This times each form of them:

  x W, x W + b          tf.matmul, and with a (zero) bias added: Grappler then
                        fuses the two into oneDNN's inner-product primitive
  x Wt^T, x Wt^T + b    the kernel stored transposed (transpose_b; a tied embedding)
  x^T dy, x^T dy + b    a kernel's gradient (transpose_a)

and prints each time and GFLOP/s. ``ONEDNN_VERBOSE=1`` shows the kernel each
runs (on TensorFlow 2.21: ``gemm_api`` for a plain MatMul, ``inner_product,
gemm:jit`` for the fused one). Compare with PyTorch's products at the same
shapes (``torch.matmul`` in ../shared's peers venv) to see how far the step's
products are from the CPU's.

  python benchmarks/matmul_forms.py --shape small
"""
from __future__ import annotations

import json
import os

from int8_matmul import best_time, parse_product_flags  # TensorFlow started quietly

import tensorflow as tf


@tf.function
def plain(a: tf.Tensor, b: tf.Tensor, transpose_a: bool, transpose_b: bool) -> tf.Tensor:
    return tf.matmul(a, b, transpose_a=transpose_a, transpose_b=transpose_b)


@tf.function
def with_bias(a: tf.Tensor, b: tf.Tensor, bias: tf.Tensor, transpose_a: bool,
              transpose_b: bool) -> tf.Tensor:
    return tf.nn.bias_add(tf.matmul(a, b, transpose_a=transpose_a, transpose_b=transpose_b),
                          bias)


def main() -> None:
    args, products = parse_product_flags(__doc__.split("\n\n")[0], "small", "--tokens", 4096,
                                         "rows: tokens in a batch")
    result = {"shape": args.shape, "tokens": args.tokens, "cpu_count": os.cpu_count(),
              "products": {}}
    for name, (k, n) in products.items():
        x, w = tf.random.normal([args.tokens, k]), tf.random.normal([k, n])
        dy, bias = tf.random.normal([args.tokens, n]), tf.zeros([n])
        forms = {"x W": (x, w, False, False), "x Wt^T": (x, tf.transpose(w), False, True),
                 "x^T dy": (x, dy, True, False)}
        gflop = 2 * args.tokens * k * n / 1e9
        times = {}
        for form, (a, b, transpose_a, transpose_b) in forms.items():
            times[form] = best_time(plain, (a, b, transpose_a, transpose_b), args.repeats)
            times[form + " + b"] = best_time(with_bias, (a, b, bias, transpose_a, transpose_b),
                                             args.repeats)
        result["products"][f"{name} [{args.tokens}x{k}]x[{k}x{n}]"] = {
            form: {"ms": round(seconds * 1e3, 3), "gflops": round(gflop / seconds)}
            for form, seconds in times.items()}
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
