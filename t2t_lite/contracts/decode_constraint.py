"""Decoding constraints: per-hypothesis token restrictions that beam and greedy search apply.

A constraint is any object with three TF-traceable methods (``DecodeConstraint``).
Its state is a dict of tensors with one row per hypothesis, item-major like
the search's own rows (row ``b * beam_size + k`` is beam ``k`` of item ``b``);
the search carries it in its loop and reorders it with ``tf.gather`` along
with the beams, exactly as it reorders the model's decode state. Each step the
search ranks ``constrain(state, log_probs)`` instead of the model's
log-probabilities, then advances the state past the chosen ids with ``update``.

Scores are not renormalized over the allowed tokens (as Hugging Face's
constrained generation does not): a hypothesis whose model wanted a forbidden
token pays for it, instead of having that mass handed to whatever is allowed.
Renormalizing made forbidden-word states cheap places to open brackets, and
the beam filled with runaway chains such as ``(NP (NP (NP ...`` (parsing dev
F1 46.6 with, 63.1 without; docs/RESULTS.md, "Constituency parsing").

Constraints live with the task they serve (parsing's ``TreeConstraint`` is in
``t2t_lite/parsing/tree_constraint.py``); a problem hands its own to the
search through ``Problem.decode_constraint``. The protocol is on the ground
floor because all three (search, parsing, ``data/problem.py``) name it, and
the floors of the last two lie below the search's.
"""
from __future__ import annotations

from typing import Protocol

import tensorflow as tf


class DecodeConstraint(Protocol):
    """What beam and greedy search need from a constraint (all methods run inside tf.function)."""

    def initial_state(self, inputs: tf.Tensor, beam_size: int,
                      max_decode_length: tf.Tensor) -> dict[str, tf.Tensor]:
        """The state before step 0 for inputs int32 [B, S]: tensors with leading dim
        B*beam_size. ``max_decode_length``: int32, a scalar (search) or one per
        hypothesis [B*beam_size] (sampling, whose inputs stop at limits of their own)."""

    def constrain(self, state: dict[str, tf.Tensor], log_probs: tf.Tensor) -> tf.Tensor:
        """The scores the search ranks, from the model's log-probs float32 [B*beam_size, V]:
        -inf for the ids not allowed next."""

    def update(self, state: dict[str, tf.Tensor], ids: tf.Tensor) -> dict[str, tf.Tensor]:
        """The state after appending ``ids`` int32 [B*beam_size] (same structure and shapes)."""
