"""The shapes a model's decode state keeps across ``tf.while_loop`` steps.

A decode state (``Seq2SeqModel.initial_decode_state``) keeps every tensor's
shape from step to step but for its batch (any size) and axes that start
empty (a state that grows a step at a time).
``decode_loop_shapes`` states that for the search's loops (and for tests that
step a model or a layer in a loop of their own); ``hypothesis_rows`` names the
rows of some inputs in a state of one row per hypothesis.
"""
from __future__ import annotations

import tensorflow as tf


def decode_loop_shapes(structure):
    """``tf.while_loop`` shape invariants for a decode state (or any loop variables):
    any batch size (axis 0), any length along axes that start empty (a state that
    grows a step at a time), every other axis as it is."""
    def invariant(tensor: tf.Tensor | tf.TensorArray) -> tf.TensorShape:
        if isinstance(tensor, tf.TensorArray):  # e.g. the outputs a loop collects
            return tensor.element_shape
        if not tensor.shape.rank:
            return tensor.shape
        return tf.TensorShape([None] + [None if size == 0 else size
                                        for size in tensor.shape[1:]])
    return tf.nest.map_structure(invariant, structure)


def hypothesis_rows(items: tf.Tensor, beam_size: int) -> tf.Tensor:
    """The rows of inputs ``items`` (int32 [B']) in a state of B * beam rows,
    item-major (row b * beam + k is hypothesis k of input b) -> int32 [B' * beam]."""
    return tf.reshape(items[:, None] * beam_size + tf.range(beam_size), [-1])
