"""Relative position representations (Shaw et al. 2018), for self-attention.

Each (query i, key j) pair has learned vectors a^K_ij and a^V_ij of the head's
depth, shared by the heads: rows clip(j - i, -k, k) + k of two tables of 2k + 1
rows (k = ``max_relative_position``; farther keys share the last row). They
enter attention as

    logits_ij = q_i (k_j + a^K_ij)^T / sqrt(d_k),    z_i = sum_j w_ij (v_j + a^V_ij).

Neither is built as the [B, h, Lq, Lk, d] tensor the formulas suggest. Every
pair's row is a one-hot [Lq, Lk, 2k+1] (or [Lk, 2k+1] when all queries share a
position: a decode step), so q a^K is q times the whole table, [B, h, Lq, 2k+1],
spread over the pairs by a product with the one-hot; and sum_j w_ij a^V_ij is the
weights gathered per row by the same one-hot, times the table.
"""
from __future__ import annotations

from typing import NamedTuple

import tensorflow as tf


def relative_position_ids(query_positions: tf.Tensor, key_positions: tf.Tensor,
                          max_relative_position: int) -> tf.Tensor:
    """clip(key - query, -k, k) + k (broadcast): each pair's row of the tables."""
    distance = tf.cast(key_positions, tf.int32) - tf.cast(query_positions, tf.int32)
    return tf.clip_by_value(distance, -max_relative_position,
                            max_relative_position) + max_relative_position


class RelativePositions(NamedTuple):
    """What one attention needs: the pairs' rows, one-hot [Lq, Lk, R] or (every query
    at one position) [Lk, R], R = 2k + 1, in the compute dtype; the key table
    [R, d_k] and the value table [R, d_v]."""
    one_hot: tf.Tensor
    keys: tf.Tensor
    values: tf.Tensor

    @classmethod
    def of(cls, ids: tf.Tensor, keys: tf.Tensor, values: tf.Tensor,
           dtype: tf.DType) -> "RelativePositions":
        """From ``relative_position_ids`` and the tables (weights, cast to ``dtype``)."""
        rows = keys.shape[0]
        return cls(tf.one_hot(ids, rows, dtype=dtype), tf.cast(keys, dtype),
                   tf.cast(values, dtype))

    def _pairs(self, operands: str) -> str:
        """The one-hot's einsum subscripts: q k r, or k r when queries share it."""
        return ("qkr" if self.one_hot.shape.rank == 3 else "kr") + operands

    def logits(self, queries: tf.Tensor) -> tf.Tensor:
        """queries [B, h, Lq, d_k] (already scaled) -> q a^K_ij^T [B, h, Lq, Lk]."""
        per_row = tf.einsum("bhqd,rd->bhqr", queries, self.keys)
        return tf.einsum(f"bhqr,{self._pairs('->bhqk')}", per_row, self.one_hot)

    def heads(self, weights: tf.Tensor) -> tf.Tensor:
        """weights [B, h, Lq, Lk] -> sum_j w_ij a^V_ij [B, h, Lq, d_v]."""
        per_row = tf.einsum(f"bhqk,{self._pairs('->bhqr')}", weights, self.one_hot)
        return tf.einsum("bhqr,rd->bhqd", per_row, self.values)
