"""``ForcedPrefix``: a decode constraint that makes every hypothesis of an input begin
with that input's target prefix (CTranslate2's ``target_prefix``, fairseq's
``--prefix-size``, Marian's ``--force-decode``): interactive translation, a
target-language tag, a human's edit to continue from.

While a hypothesis is inside its prefix, the prefix's next token is the one id it
may take, scored by the model's own log-probability (teacher-forced, as CTranslate2
scores a prefix: the hypothesis's score is the model's for the whole output). The
search then goes on from the prefix as from any hypothesis. The problem's own
constraint (parsing's trees) is wrapped, not replaced: its state follows every
token, the forced ones included, and it masks the tokens after the prefix; inside
the prefix the forced token is taken even where it would forbid it (the user's text
wins; a hypothesis with no allowed token would have nothing to continue).

Built inside the search's trace from a tensor of prefixes (``beam_search.search``'s
``prefixes``), since they change with every batch while the search's options do not.
"""
from __future__ import annotations

from typing import Any

import tensorflow as tf

from t2t_lite.contracts.reserved_ids import PAD_ID
from t2t_lite.decoding.search_loop import NEG_INF


class ForcedPrefix:
    """``prefixes`` int32 [B, P]: row b the target ids input b's outputs start with,
    PAD after them (PAD and EOS are never part of a prefix); ``inner``: the resolved
    constraint of the search (``search_loop.resolve_constraint``)."""

    def __init__(self, prefixes: tf.Tensor, inner: Any):
        # One PAD column more, so that a batch without any prefix (P = 0) reads PAD.
        self.prefixes = tf.pad(tf.cast(prefixes, tf.int32), [[0, 0], [0, 1]])
        self.inner = inner

    def initial_state(self, inputs: tf.Tensor, beam_size: int,
                      max_decode_length: tf.Tensor) -> dict[str, Any]:
        rows = tf.repeat(self.prefixes, beam_size, axis=0)  # item-major, as the search's
        return {"prefix": rows,
                "prefix_length": tf.reduce_sum(tf.cast(rows != PAD_ID, tf.int32), axis=1),
                "position": tf.zeros([tf.shape(rows)[0]], tf.int32),
                "inner": self.inner.initial_state(inputs, beam_size, max_decode_length)}

    def constrain(self, state: dict[str, Any], log_probs: tf.Tensor) -> tf.Tensor:
        scores = self.inner.constrain(state["inner"], log_probs)
        inside = state["position"] < state["prefix_length"]
        # The prefix's token at each row's position (past the prefix: PAD, unused).
        column = tf.minimum(state["position"], tf.shape(state["prefix"])[1] - 1)
        forced = tf.gather(state["prefix"], column[:, None], batch_dims=1)
        is_forced = tf.equal(tf.range(tf.shape(log_probs)[-1]), forced)
        forced_scores = tf.where(is_forced, log_probs, NEG_INF)
        return tf.where(inside[:, None], forced_scores, scores)

    def update(self, state: dict[str, Any], ids: tf.Tensor) -> dict[str, Any]:
        return {**state, "position": state["position"] + 1,
                "inner": self.inner.update(state["inner"], ids)}
