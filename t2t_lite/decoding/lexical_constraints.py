"""``LexicalConstraints``: terminology constraints, phrases every output must contain
(fairseq's ``--constraints``; Post and Vilar 2018's dynamic beam allocation in the
vectorized form of Hu et al. 2019).

Each input has up to N phrases (int32 [B, N, L], PAD-padded; an all-PAD row is no
phrase). A hypothesis tracks which phrases it has met and the one it is inside
(how many of its tokens it has just produced): a token that continues that phrase
advances it (the phrase is met at its last token); any other token abandons it
(its tokens count for nothing) and may start a phrase not met yet (the first such
by index; phrases that begin alike are not followed side by side). Each phrase
is met by its tokens in a row.

The mask (``constrain``; beam, greedy and sampling alike): EOS only once every
phrase is met, and no token after which the tokens still needed no longer fit in
the steps left: a hypothesis short of steps may only go on with its phrases.
Every output the search returns therefore holds every phrase, as long as they
fit at all (the decoder refuses phrases that leave no room for an EOS), and an
input without phrases is masked nowhere.

Dynamic beam allocation (beam search of 2 beams or more; ``candidates`` and
``allocate``): besides the best ``2 * beam`` candidates of a step, each beam's
next token of every phrase it may advance and its own best token are candidates
(once each); a candidate's *bank* is how many phrase tokens it has met (its
progress counted). The new alive beams are taken in stripes: the best candidate
of every bank (the bank with most tokens met first), then the second best of
every bank, and so on, so that hypotheses at every stage of their phrases stay in
the beam and the one furthest on always does. Finished hypotheses come from the
best ``2 * beam`` as without constraints. An input with no phrases is decoded
exactly as without constraints.

The problem's own constraint (parsing's trees) and a forced prefix are wrapped:
their mask comes first, and their states follow every token. Under a problem's
constraint a phrase may be impossible (a word the tree has no slot for); the
guarantee above is for problems without one (translation).
"""
from __future__ import annotations

from typing import Any

import tensorflow as tf

from t2t_lite.contracts.reserved_ids import EOS_ID, PAD_ID
from t2t_lite.decoding.search_loop import NEG_INF

NONE = -1  # no phrase in progress; no token


class LexicalConstraints:
    """``phrases`` int32 [B, N, L]: row b the phrases input b's outputs must hold;
    ``inner``: the search's resolved constraint (``search_loop.resolve_constraint``)."""

    def __init__(self, phrases: tf.Tensor, inner: Any, eos_id: int = EOS_ID):
        # One PAD phrase and column more: a batch without phrases (N or L 0) reads PAD.
        self.phrases = tf.pad(tf.cast(phrases, tf.int32), [[0, 0], [0, 1], [0, 1]])
        self.inner = inner
        self.eos_id = eos_id

    def initial_state(self, inputs: tf.Tensor, beam_size: int,
                      max_decode_length: tf.Tensor) -> dict[str, Any]:
        phrases = tf.repeat(self.phrases, beam_size, axis=0)  # item-major, as the search's
        lengths = tf.reduce_sum(tf.cast(phrases != PAD_ID, tf.int32), axis=2)
        rows = tf.shape(phrases)[0]
        return {"phrases": phrases, "lengths": lengths,
                "met": lengths == 0,  # no phrase: nothing to meet
                "current": tf.fill([rows], NONE), "position": tf.zeros([rows], tf.int32),
                "steps_left": tf.broadcast_to(tf.cast(max_decode_length, tf.int32), [rows]),
                "inner": self.inner.initial_state(inputs, beam_size, max_decode_length)}

    def constrain(self, state: dict[str, Any], log_probs: tf.Tensor) -> tf.Tensor:
        scores = self.inner.constrain(state["inner"], log_probs)
        vocab = tf.range(tf.shape(log_probs)[-1])
        met_tokens = _met_tokens(state)
        total = tf.reduce_sum(state["lengths"], axis=1)
        needed = total - met_tokens - state["position"]
        is_next = tf.equal(vocab, _next_token(state)[:, None])
        is_first = tf.reduce_any(tf.equal(vocab, _first_tokens(state)[:, :, None]), axis=1)
        # Tokens still needed after each id: one fewer when it continues the phrase in
        # progress; when it abandons it, that phrase's progress is lost (one fewer
        # again if the id starts a phrase).
        lost = (total - met_tokens)[:, None]
        needed_after = tf.where(is_next, needed[:, None] - 1,
                                tf.where(is_first, lost - 1, lost))
        # Those tokens in the steps left after this one (an output that meets its last
        # phrase at the maximum length ends there, as any output may).
        fits = needed_after + 1 <= state["steps_left"][:, None]
        allowed = tf.where(tf.equal(vocab, self.eos_id), (needed == 0)[:, None], fits)
        return tf.where(allowed, scores, NEG_INF)

    def update(self, state: dict[str, Any], ids: tf.Tensor) -> dict[str, Any]:
        met, current, position = _advance(state, ids)
        return {**state, "met": met, "current": current, "position": position,
                "steps_left": state["steps_left"] - 1,
                "inner": self.inner.update(state["inner"], ids)}

    def candidates(self, state: dict[str, Any], scores: tf.Tensor) -> tf.Tensor:
        """int32 [rows, N + 2]: each hypothesis's ids that DBA adds to a step's
        candidates: its phrase's next token, the first token of each phrase not met,
        its own best id under ``scores`` [rows, V] (``NONE`` where there is none)."""
        best = tf.argmax(scores, axis=-1, output_type=tf.int32)
        return tf.concat([_next_token(state)[:, None], _first_tokens(state), best[:, None]],
                         axis=1)

    def banks(self, state: dict[str, Any], ids: tf.Tensor) -> tf.Tensor:
        """int32 [rows]: phrase tokens met after appending ``ids`` [rows]."""
        met, _, position = _advance(state, ids)
        return _met_tokens({**state, "met": met}) + position


def _met_tokens(state: dict[str, Any]) -> tf.Tensor:
    return tf.reduce_sum(tf.where(state["met"], state["lengths"], 0), axis=1)


def _next_token(state: dict[str, Any]) -> tf.Tensor:
    """The next token of the phrase in progress, ``NONE`` for none."""
    phrase = tf.gather(state["phrases"], tf.maximum(state["current"], 0), batch_dims=1)
    column = tf.minimum(state["position"], tf.shape(phrase)[1] - 1)
    token = tf.gather(phrase, column[:, None], batch_dims=1)[:, 0]
    return tf.where(state["current"] >= 0, token, NONE)


def _first_tokens(state: dict[str, Any]) -> tf.Tensor:
    """[rows, N]: the first token of each phrase not met yet, ``NONE`` for the others."""
    return tf.where(state["met"], NONE, state["phrases"][:, :, 0])


def _advance(state: dict[str, Any], ids: tf.Tensor
             ) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
    """(met, current, position) after appending ``ids`` (the module docstring's rules)."""
    ids = tf.cast(ids, tf.int32)
    count = tf.shape(state["phrases"])[1]
    current_length = tf.gather(state["lengths"], tf.maximum(state["current"], 0),
                               batch_dims=1)
    continues = tf.equal(ids, _next_token(state))
    completes = tf.logical_and(continues, state["position"] + 1 == current_length)
    met = tf.logical_or(state["met"], tf.logical_and(
        completes[:, None], tf.one_hot(state["current"], count, on_value=True,
                                       off_value=False)))
    starts = tf.equal(_first_tokens(state), ids[:, None])
    started = tf.logical_and(tf.logical_not(continues), tf.reduce_any(starts, axis=1))
    start = tf.argmax(tf.cast(starts, tf.int32), axis=1, output_type=tf.int32)
    start_length = tf.gather(state["lengths"], start, batch_dims=1)
    started_and_met = tf.logical_and(started, start_length == 1)
    met = tf.logical_or(met, tf.logical_and(started_and_met[:, None],
                                            tf.one_hot(start, count, on_value=True,
                                                       off_value=False)))
    in_progress = tf.logical_and(continues, tf.logical_not(completes))
    starts_one = tf.logical_and(started, tf.logical_not(started_and_met))
    current = tf.where(in_progress, state["current"], tf.where(starts_one, start, NONE))
    position = tf.where(in_progress, state["position"] + 1,
                        tf.where(starts_one, 1, 0))
    return met, current, position


def allocate(log_probs: tf.Tensor, banks: tf.Tensor, beam_size: int) -> tf.Tensor:
    """The DBA stripes: of the candidates ``log_probs`` [B, M] (-inf: none) in
    ``banks`` [B, M], the indices [B, beam_size] of the new alive beams: by rank
    within their bank (best first, ties to the earlier), then by bank (most met
    first), then by position; fewer valid candidates than beams leave -inf ones."""
    count = tf.shape(log_probs)[1]
    valid = log_probs > NEG_INF
    position = tf.range(count)
    earlier = position[None, :] < position[:, None]  # [i, j]: j before i
    better = tf.logical_or(log_probs[:, None, :] > log_probs[:, :, None],
                           tf.logical_and(log_probs[:, None, :] == log_probs[:, :, None],
                                          earlier[None]))
    same_bank = tf.equal(banks[:, None, :], banks[:, :, None])
    rank = tf.reduce_sum(tf.cast(tf.logical_and(tf.logical_and(better, same_bank),
                                                valid[:, None, :]), tf.int32), axis=2)
    top_bank = tf.reduce_max(banks) + 1
    key = (rank * top_bank + (top_bank - 1 - banks)) * count + position[None]
    key = tf.where(valid, key, tf.int32.max)
    return tf.math.top_k(-key, k=beam_size).indices


def first_occurrences(index: tf.Tensor) -> tf.Tensor:
    """bool [B, M]: True where ``index`` [B, M] holds a value not seen earlier in its row."""
    position = tf.range(tf.shape(index)[1])
    same = tf.logical_and(tf.equal(index[:, :, None], index[:, None, :]),
                          (position[None, :] < position[:, None])[None])
    return tf.logical_not(tf.reduce_any(same, axis=2))


def banked_pool(constraint: LexicalConstraints, state: dict[str, Any], scores: tf.Tensor,
                candidates: tf.Tensor, top_log_probs: tf.Tensor, top_index: tf.Tensor,
                beam_size: int) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
    """A step's DBA candidates -> (log-probs [B, M], flat indices beam * V + id [B, M],
    banks [B, M]): the best ``2 * beam_size`` (``top_log_probs``, ``top_index``, in
    their order) and then each beam's ``candidates`` ids, a repeated one -inf.
    ``scores``: each hypothesis's constrained log-probs [B * beam, V]; ``candidates``:
    the beams' totals over (beam, id) [B, beam * V]."""
    vocab_size = tf.shape(scores)[1]
    extra = tf.reshape(constraint.candidates(state, scores), [tf.shape(candidates)[0], -1])
    extra_beams = tf.range(tf.shape(extra)[1]) // (tf.shape(extra)[1] // beam_size)
    extra_index = extra_beams[None, :] * vocab_size + tf.maximum(extra, 0)
    extra_log_probs = tf.where(extra >= 0, tf.gather(candidates, extra_index, batch_dims=1),
                               NEG_INF)
    index = tf.concat([top_index, extra_index], axis=1)
    log_probs = tf.concat([top_log_probs, extra_log_probs], axis=1)
    log_probs = tf.where(first_occurrences(index), log_probs, NEG_INF)
    rows = index // vocab_size + tf.range(tf.shape(index)[0])[:, None] * beam_size
    tracked = {key: tf.gather(state[key], tf.reshape(rows, [-1]))
               for key in ("phrases", "lengths", "met", "current", "position")}
    banks = constraint.banks(tracked, tf.reshape(index % vocab_size, [-1]))
    return log_probs, index, tf.reshape(banks, tf.shape(index))
