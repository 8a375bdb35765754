"""The parts every search loop shares (beam search, greedy, sampling): scores
over the vocabulary, the constraint's hook, the model's decode state split into
its fixed and changing parts, one model step, and the ``tf.while_loop`` (one a
buffer length under XLA) that runs a search."""
from __future__ import annotations

from typing import Any

import tensorflow as tf

from t2t_lite.contracts.decode_constraint import DecodeConstraint
from t2t_lite.contracts.decode_state import decode_loop_shapes

NEG_INF = float("-inf")


def length_penalty(length: tf.Tensor, alpha: float) -> tf.Tensor:
    """GNMT's ((5 + length) / 6) ** alpha."""
    return tf.pow((5.0 + tf.cast(length, tf.float32)) / 6.0, alpha)


class Unconstrained:
    """The constraint that allows every token: no state, no mask."""

    def initial_state(self, inputs, beam_size, max_decode_length):
        return {}

    def constrain(self, state, log_probs):
        return log_probs

    def update(self, state, ids):
        return state


def resolve_constraint(constraint: DecodeConstraint | None, allow_eos: bool) -> Any:
    """The constraint to apply (an unconstrained one for None); checks it fits ``allow_eos``."""
    if constraint is None:
        return Unconstrained()
    if not allow_eos:
        raise ValueError("allow_eos=False cannot be combined with a decoding constraint: "
                         "the constraint decides where EOS may go")
    return constraint


def token_log_probs(logits: tf.Tensor, eos_id: int, allow_eos: bool) -> tf.Tensor:
    """Normalized log-probabilities; EOS gets -inf when it is not allowed."""
    logits = tf.cast(logits, tf.float32)
    if not allow_eos:
        is_eos = tf.equal(tf.range(tf.shape(logits)[-1]), eos_id)
        logits = tf.where(is_eos, NEG_INF, logits)
    return tf.nn.log_softmax(logits, axis=-1)


def write_at(seq: tf.Tensor, position: tf.Tensor, ids: tf.Tensor) -> tf.Tensor:
    """``seq[..., position] = ids`` for a fixed-length id buffer."""
    at_position = tf.equal(tf.range(tf.shape(seq)[-1]), position)
    return tf.where(at_position, ids[..., None], seq)


def split_state(model: Any, state: dict) -> tuple[dict, dict]:
    """(fixed, changing) parts of a decode state: the fixed part (the model's
    ``fixed_decode_state_keys``, e.g. the encoder output's keys and values) is
    the same for every beam of one input, so the loops read it from outside
    instead of copying and reordering it every step (only the rows of items done
    leave it: ``done_items``)."""
    fixed_keys = model.fixed_decode_state_keys()
    return ({key: value for key, value in state.items() if key in fixed_keys},
            {key: value for key, value in state.items() if key not in fixed_keys})


def decode_while(model: Any, cond: Any, body: Any, loop_vars: list,
                  buffer_lengths: list[int] | None) -> list:
    """``tf.while_loop(cond, body, loop_vars)`` for a search whose loop variables
    start with the step and end with (the model's changing state, the constraint's
    state). With ``buffer_lengths`` (``search_decoder.cache_lengths``), one loop per
    length instead, each
    running while the step is below its length, the model's state resized for it
    before: every loop has fixed shapes, as XLA needs."""
    if buffer_lengths is None:
        return tf.while_loop(cond, body, loop_vars,
                             shape_invariants=decode_loop_shapes(loop_vars))
    for length in buffer_lengths:
        loop_vars = [*loop_vars[:-2], model.resize_decode_state(loop_vars[-2], length),
                     loop_vars[-1]]
        loop_vars = tf.while_loop(
            lambda step, *rest, end=length: tf.logical_and(step < end, cond(step, *rest)),
            body, loop_vars)
    return loop_vars


def initial_state(model: Any, encoded: dict, max_decode_length: tf.Tensor,
                   buffer_lengths: list[int] | None, beam_size: int = 1) -> tuple[dict, dict]:
    """The model's (fixed, changing) decode state of ``beam_size`` hypotheses an
    input; with ``buffer_lengths``, made for the first loop's length
    (``decode_while`` resizes it for the others)."""
    return split_state(model, model.initial_decode_state(
        encoded, buffer_lengths[0] if buffer_lengths else max_decode_length, beam_size))


def step_model(model: Any, ids: tf.Tensor, step: tf.Tensor, fixed: dict,
               changing: dict, output_subset: Any = None) -> tuple[tf.Tensor, dict]:
    """``model.decode_step`` on the whole state -> (logits, the changing part); with
    ``output_subset`` (``model.output_subset``'s, of a shortlist), the logits of the
    shortlisted ids only (``decode_step_over``)."""
    if output_subset is None:
        logits, state = model.decode_step(ids, step, {**fixed, **changing})
    else:
        logits, state = model.decode_step_over(ids, step, {**fixed, **changing}, output_subset)
    return logits, {key: state[key] for key in changing}


def shortlisted(model: Any, inputs: tf.Tensor, shortlist: Any) -> tuple[Any, Any]:
    """(the batch's shortlisted target ids [K], what the model's steps project onto
    for them): (None, None) without a shortlist."""
    if shortlist is None:
        return None, None
    output_ids = shortlist.batch_ids(inputs)
    return output_ids, model.output_subset(output_ids)


def vocabulary_ids(ids: tf.Tensor, output_ids: tf.Tensor | None) -> tf.Tensor:
    """Indices into a step's logits as target ids (the same without a shortlist)."""
    return ids if output_ids is None else tf.gather(output_ids, ids)
