#!/usr/bin/env python3
"""Whether TensorFlow's int8 matrix products are fast on this CPU, as JSON.

An int8 decode is worth building only if int8 products beat float32 ones. This
times, at the decode step's shapes (32 sentences x beam 4 = 128 rows; the
projections of a Transformer of ``--shape``: Q/K/V, output, feed-forward in and
out, the vocabulary), per product:

  float32       tf.matmul, float32 (what the decoder runs; oneDNN's sgemm)
  int8          tf.linalg.matmul of int8 operands into int32 (what Keras 3's
                quantize("int8") layers run on the TensorFlow backend)
  int8_dynamic  the same with the activations quantized per row first and the
                product scaled back (a whole int8 projection)
  xla_float32 / xla_int8   the same products compiled with XLA

and prints each time and its ratio to float32 (> 1: faster than float32).
``ONEDNN_VERBOSE=1 python benchmarks/int8_matmul.py`` shows which products run
in oneDNN (its gemm lines): on TensorFlow 2.21 the float32 ones only.

  python benchmarks/int8_matmul.py --shape base
"""
from __future__ import annotations

import argparse
import json
import os
import time

from t2t_lite.bin import common  # t2t_lite first: it picks TensorFlow's CPU kernels

common.start_tensorflow(verbosity=0)  # quietly, as the t2t-* commands start it
import tensorflow as tf  # noqa: E402

# d_model, d_ff (../shared/bench/peers.py's shapes)
SHAPES = {"tiny": (128, 512), "small": (256, 1024), "base": (512, 2048), "big": (1024, 4096)}


def best_time(fn, args, repeats: int) -> float:
    """Seconds per call: the best of 5 rounds of ``repeats`` calls, after one warm-up."""
    fn(*args)
    rounds = []
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(repeats):
            fn(*args)
        rounds.append((time.perf_counter() - start) / repeats)
    return min(rounds)


def parse_product_flags(description: str, default_shape: str, rows_flag: str,
                        rows_default: int, rows_help: str
                        ) -> tuple[argparse.Namespace, dict[str, tuple[int, int]]]:
    """The product benchmarks' flags (--shape, --vocab, --repeats and their rows flag),
    parsed, and the Transformer's projections at --shape: name -> (inner dimension,
    output dimension)."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--shape", default=default_shape, choices=sorted(SHAPES))
    p.add_argument(rows_flag, type=int, default=rows_default, help=rows_help)
    p.add_argument("--vocab", type=int, default=8192)
    p.add_argument("--repeats", type=int, default=20)
    args = p.parse_args()
    d, d_ff = SHAPES[args.shape]
    return args, {"qkv": (d, 3 * d), "output": (d, d), "ffn_in": (d, d_ff),
                  "ffn_out": (d_ff, d), "vocab": (d, args.vocab)}


def quantize_rows(x: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
    """int8 values and float32 scales [rows, 1], per row (absolute maximum -> 127)."""
    scale = tf.maximum(tf.reduce_max(tf.abs(x), axis=-1, keepdims=True), 1e-6) / 127.0
    return tf.cast(tf.round(x / scale), tf.int8), scale


def main() -> None:
    args, products = parse_product_flags(__doc__.split("\n\n")[0], "base", "--rows", 128,
                                         "decode rows (sentences x beam)")
    float32 = tf.function(lambda x, w: tf.matmul(x, w))
    int8 = tf.function(lambda x, w: tf.linalg.matmul(x, w, output_type=tf.int32))
    xla_float32 = tf.function(lambda x, w: tf.matmul(x, w), jit_compile=True)
    xla_int8 = tf.function(lambda x, w: tf.linalg.matmul(x, w, output_type=tf.int32),
                           jit_compile=True)

    @tf.function
    def int8_dynamic(x, w, w_scale):
        values, scale = quantize_rows(x)
        product = tf.linalg.matmul(values, w, output_type=tf.int32)
        return tf.cast(product, tf.float32) * scale * w_scale

    result = {"shape": args.shape, "rows": args.rows, "cpu_count": os.cpu_count(),
              "products": {}}
    for name, (k, n) in products.items():
        x, w = tf.random.normal([args.rows, k]), tf.random.normal([k, n])
        x8, _ = quantize_rows(x)
        w8_t, w_scale_t = quantize_rows(tf.transpose(w))   # per output channel
        w8, w_scale = tf.transpose(w8_t), tf.transpose(w_scale_t)
        times = {"float32": best_time(float32, (x, w), args.repeats),
                 "int8": best_time(int8, (x8, w8), args.repeats),
                 "int8_dynamic": best_time(int8_dynamic, (x, w8, w_scale), args.repeats),
                 "xla_float32": best_time(xla_float32, (x, w), args.repeats),
                 "xla_int8": best_time(xla_int8, (x8, w8), args.repeats)}
        result["products"][f"{name} [{args.rows}x{k}]x[{k}x{n}]"] = {
            key: {"ms": round(seconds * 1e3, 3),
                  "speedup_over_float32": round(times["float32"] / seconds, 2)}
            for key, seconds in times.items()}
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
