"""Dropping the items a search is done with from its batch, so that its steps
cost what the items still searching need (beam search and greedy search,
``t2t_lite.decoding.beam_search``; the model's side: ``select_decode_items`` in
``t2t_lite.models.base``).

A loop that drops items carries, besides its search, a ``carried_state``: the
batch index of each item left, the outputs [B, ...] of those dropped, and the
fixed decode state. ``drop_done_items`` writes the done items' results out and
gathers the rest; ``finish`` writes those still there when the loop ends.
"""
from __future__ import annotations

from typing import Any, Callable

import tensorflow as tf

from t2t_lite.contracts.decode_state import hypothesis_rows

# The results of some items, from their rows of the search's per-item tensors.
Results = Callable[..., tuple]

# Settled items leave the batch once they are this fraction of it: each removal
# copies the decode state once, so removing every item the step it settles would
# cost more than it saves.
SETTLED_FRACTION_TO_DROP = 1 / 8


def _written(outputs: list, items: tf.Tensor, finals: tuple) -> list:
    """``outputs`` [B, ...] with the rows of batch indices ``items`` set to ``finals``."""
    return [tf.tensor_scatter_nd_update(output, items[:, None], final)
            for output, final in zip(outputs, finals)]


def carried_state(model: Any, buffer_lengths: list[int] | None, batch: tf.Tensor,
                  outputs: list, fixed: dict) -> dict:
    """What a loop that drops its done items carries besides its search: the batch
    index of each item left, the outputs [B, ...] of those dropped, and the fixed
    decode state (which loses their rows). Empty when it drops none: under XLA
    (``buffer_lengths``: fixed shapes), or for a model that cannot select items
    (``Seq2SeqModel.selects_decode_items``). The fixed state is then read from
    outside the loop (XLA fails on loop-invariant variables in a search of three
    loops)."""
    if buffer_lengths is not None or not getattr(model, "selects_decode_items", False):
        return {}
    return {"items": tf.range(batch), "outputs": outputs, "fixed": fixed}


def drop_done_items(model: Any, beam_size: int, done: tf.Tensor, searched: list,
                     results: Results, carried: dict, state: dict, constraint_state: Any
                     ) -> tuple[list, dict, dict, Any]:
    """Once the ``done`` items (bool [B']) are ``SETTLED_FRACTION_TO_DROP`` of the
    batch: their ``results(*their rows of searched)`` written into the carried
    outputs, and every per-item tensor (``searched``, [B', ...]) and decode state
    without them -> (searched, carried, state, constraint_state)."""
    count = tf.reduce_sum(tf.cast(done, tf.int32))
    batch_size = tf.shape(done)[0]

    def drop():
        finished_rows = tf.cast(tf.where(done)[:, 0], tf.int32)
        kept = tf.cast(tf.where(tf.logical_not(done))[:, 0], tf.int32)
        finals = results(*(tf.gather(t, finished_rows) for t in searched))
        rows = hypothesis_rows(kept, beam_size)
        return ([tf.gather(t, kept) for t in searched],
                {"items": tf.gather(carried["items"], kept),
                 "outputs": _written(carried["outputs"],
                                     tf.gather(carried["items"], finished_rows), finals),
                 "fixed": model.select_decode_items(carried["fixed"], kept, beam_size,
                                                    batch_size)},
                model.select_decode_items(state, kept, beam_size, batch_size),
                tf.nest.map_structure(lambda t: tf.gather(t, rows), constraint_state))

    worth_it = tf.logical_and(count > 0, tf.cast(count, tf.float32) >= (
        SETTLED_FRACTION_TO_DROP * tf.cast(batch_size, tf.float32)))
    return tf.cond(worth_it, drop, lambda: (searched, carried, state, constraint_state))


def finish(searched: list, results: Results, carried: dict) -> list:
    """The search's outputs once its loop ends: ``results`` of the items still in
    it, written among those dropped before when the loop dropped any."""
    finals = results(*searched)
    return _written(carried["outputs"], carried["items"], finals) if carried else list(finals)
