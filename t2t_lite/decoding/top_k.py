"""``top_k_by_blocks``: ``tf.math.top_k`` of long rows, by blocks (beam search's
ranking of beam x vocabulary candidates, the hot spot of a small model's step).
"""
from __future__ import annotations

import tensorflow as tf

# Beam search's candidates, beam * vocabulary per item, are ranked in blocks of
# about this many: TensorFlow's CPU top_k costs about 4 ns an element (a tenth of a
# tiny model's beam step), a maximum per block far less.
TOP_K_BLOCK = 128


def block_length(length: int | None) -> int | None:
    """The divisor of ``length`` nearest ``TOP_K_BLOCK`` within a factor of two
    (a block never needs padding, which TensorFlow's CPU pad does slowly), or None."""
    if length is None:
        return None
    divisors = [size for size in range(TOP_K_BLOCK // 2, 2 * TOP_K_BLOCK + 1)
                if length % size == 0 and length // size > 1]
    return min(divisors, key=lambda size: abs(size - TOP_K_BLOCK), default=None)


def top_k_by_blocks(values: tf.Tensor, k: int) -> tuple[tf.Tensor, tf.Tensor]:
    """``tf.math.top_k(values, k)`` of float32 [R, N] -> (values, indices) [R, k],
    the same (ties to the lowest index included), in two small top_k's: the k best
    elements of a row lie in the k blocks with the largest maxima, so only those
    blocks are ranked element by element. Rows of a length without a block size
    (``block_length``, which needs N known when tracing) take ``tf.math.top_k``."""
    size = block_length(values.shape[1])
    if size is None:
        return tf.math.top_k(values, k=k)
    blocks = values.shape[1] // size
    by_block = tf.reshape(values, [-1, blocks, size])
    _, best_blocks = tf.math.top_k(tf.reduce_max(by_block, axis=2), k=min(k, blocks))
    best_blocks = tf.sort(best_blocks, axis=1)  # in index order, for top_k's tie rule
    candidates = tf.reshape(tf.gather(by_block, best_blocks, batch_dims=1),
                            [-1, best_blocks.shape[1] * size])
    top_values, positions = tf.math.top_k(candidates, k=k)
    block = tf.gather(best_blocks, positions // size, batch_dims=1)
    return top_values, block * size + positions % size
