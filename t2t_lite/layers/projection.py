"""Projections of [..., d] activations, and reshape targets, in as few ops as possible.

A decode step runs every op of the decoder once per output token, so its cost
on a CPU is as much the number of ops as their arithmetic. ``tf.tensordot``
(and Keras' Dense on 3-D inputs) builds a transpose and shape arithmetic around
its matmul, and a reshape target built from ``tf.shape`` adds Shape,
StridedSlice and Pack or ConcatV2 ops. In a decode step only the batch is
unknown ([B, 1, d]), so a projection here is one 2-D matmul between two
reshapes with static targets (-1 for the batch), and no shape op runs at all.
"""
from __future__ import annotations

import tensorflow as tf


def leading_dims(x: tf.Tensor, trailing: int = 1) -> list:
    """``x``'s dimensions but its last ``trailing``, to start a reshape target:
    known ones as ints and a single unknown one as -1; where two or more are
    unknown (e.g. batch and length in training), those come from ``tf.shape``."""
    dims = x.shape.as_list()[:x.shape.rank - trailing]
    if dims.count(None) <= 1:
        return [-1 if dim is None else dim for dim in dims]
    shape = tf.shape(x)
    return [shape[axis] if dim is None else dim for axis, dim in enumerate(dims)]


def project(x: tf.Tensor, kernel: tf.Tensor, bias: tf.Tensor | None = None,
            transpose_kernel: bool = False) -> tf.Tensor:
    """[..., d_in] x [d_in, d_out] (+ bias [d_out]) as one 2-D matmul between two
    reshapes, in ``x``'s dtype (the float32 weights cast under mixed precision).
    ``transpose_kernel``: ``kernel`` is [d_out, d_in] (a tied embedding matrix)."""
    d_in, d_out = kernel.shape[::-1] if transpose_kernel else kernel.shape
    flat_x, kernel = tf.reshape(x, [-1, d_in]), tf.cast(kernel, x.dtype)
    flat = (_times_transposed(flat_x, kernel) if transpose_kernel
            else tf.matmul(flat_x, kernel))
    if bias is not None:
        flat = tf.nn.bias_add(flat, tf.cast(bias, x.dtype))
    return tf.reshape(flat, leading_dims(x) + [d_out])


@tf.custom_gradient
def _times_transposed(x: tf.Tensor, kernel: tf.Tensor):
    """x [N, d] times kernel [V, d] transposed, with the kernel's gradient taken
    as (x^T dy)^T. TensorFlow's own, dy^T x, transposes the large [N, V] operand
    inside oneDNN's product: at N = 4,096, d = 256, V = 8,192 it ran at 200
    GFLOP/s on an Intel Xeon with AMX where this form runs at 320 (docs/SPEED.md)."""
    def gradient(dy: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        return tf.matmul(dy, kernel), tf.transpose(tf.matmul(tf.transpose(x), dy))
    return tf.matmul(x, kernel, transpose_b=True), gradient
