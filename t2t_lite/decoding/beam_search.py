"""Beam search and greedy search over any ``Seq2SeqModel`` (encode / decode_step).

The search follows Tensor2Tensor: it keeps ``beam_size`` *alive* hypotheses
(no EOS yet, ranked by log-probability) and ``beam_size`` *finished* ones
(ended in EOS, ranked by length-penalized score). Each step expands every alive
hypothesis over the vocabulary and takes the best ``2 * beam_size`` candidates,
so that at least ``beam_size`` of them do not end in EOS; candidates ending in
EOS compete for the finished set with score ``log_prob / ((5 + length) / 6) **
alpha`` (length counts the EOS, Wu et al. 2016), the others become the new
alive set. An input stops under its ``stop_rule`` (``STOP_RULES``): by default
once its finished set is full, as fairseq's and CTranslate2's do (and, as theirs,
that rule finalises only the EOS candidates ranked within the best ``beam_size``),
or once no alive hypothesis can enter its finished set, as tensor2tensor's search
stops ("exact"). Once an input has stopped its hypotheses stay as they are,
whether it leaves the batch or is carried to the batch's end.

Outputs: ``ids`` hold the generated tokens without the start symbol; a finished
hypothesis keeps its EOS and is PAD (0) after it. A batch item with no finished
hypothesis when the search ends returns its alive hypotheses instead (no EOS),
scored with the same length penalty at the decoded length; unused beam slots
score ``-inf``. The id axis is as long as the number of steps run, at most
``max_decode_length``.

All loops are ``tf.while_loop``s: the model's decode state keeps its shape
(but for axes that start empty, which may grow: ``decode_loop_shapes``) and is
reordered each step by the model (``reorder_decode_state``, see
``t2t_lite.models.base``), all but the part the model declares fixed (the
encoder output's keys and values), which is never reordered. Beam search drops
the items it has settled from its batch as it goes (``select_decode_items``),
so that a batch's long sentences do not make its short ones run to their end.
``BeamSearchDecoder``
(``t2t_lite.decoding.search_decoder``) is the compiled entry point.

An optional ``constraint`` (``t2t_lite.contracts.decode_constraint``) turns each
hypothesis's log-probabilities into the scores ranked (-inf for forbidden
tokens, no renormalization); its per-hypothesis state is carried and
reordered with the beams like the model's state. Without one, the search is
unchanged.
"""
from __future__ import annotations

import dataclasses
from typing import Any

import tensorflow as tf

from t2t_lite.contracts.decode_constraint import DecodeConstraint
from t2t_lite.contracts.reserved_ids import PAD_ID
from t2t_lite.decoding.done_items import carried_state, drop_done_items, finish
from t2t_lite.decoding.forced_prefix import ForcedPrefix
from t2t_lite.decoding.lexical_constraints import LexicalConstraints, allocate, banked_pool
from t2t_lite.decoding.sampling import sample_loop
from t2t_lite.decoding.search_options import SearchOptions
from t2t_lite.decoding.search_loop import (NEG_INF, decode_while, initial_state, length_penalty,
                                           resolve_constraint, shortlisted, step_model,
                                           token_log_probs, vocabulary_ids, write_at)
from t2t_lite.decoding.top_k import top_k_by_blocks

GREEDY = SearchOptions(beam_size=1)

def _greedy_loop(model: Any, inputs: tf.Tensor, max_decode_length: tf.Tensor | int,
                 eos_id: int, allow_eos: bool, constraint: DecodeConstraint | None = None,
                 buffer_lengths: list[int] | None = None, shortlist: Any = None
                 ) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor, tf.Tensor]:
    """Argmax decoding -> (ids [B, max_decode_length], log_probs [B], lengths [B]
    incl. EOS, the number of steps run: ids past it are PAD). ``buffer_lengths``:
    see ``decode_while``; ``shortlist``: ``SearchOptions``'. Finished items leave the
    batch as in ``_beam_loop``."""
    constraint = resolve_constraint(constraint, allow_eos)
    inputs = tf.cast(inputs, tf.int32)
    max_decode_length = tf.cast(max_decode_length, tf.int32)
    batch = tf.shape(inputs)[0]
    fixed, state = initial_state(model, model.encode(inputs, training=False),
                                  max_decode_length, buffer_lengths)
    constraint_state = constraint.initial_state(inputs, 1, max_decode_length)
    output_ids, output_subset = shortlisted(model, inputs, shortlist)

    def not_done(step, searched, *_):
        return tf.logical_and(step < max_decode_length,
                              tf.logical_not(tf.reduce_all(searched[2])))

    def results(ids, _, __, log_prob, lengths):
        return ids, log_prob, lengths

    def one_step(step, searched, carried, state, constraint_state):
        ids, prev_ids, finished, log_prob, lengths = searched
        logits, state = step_model(model, prev_ids, step, carried.get("fixed", fixed), state,
                                   output_subset)
        step_log_probs = constraint.constrain(constraint_state,
                                              token_log_probs(logits, eos_id, allow_eos))
        next_ids = vocabulary_ids(tf.argmax(step_log_probs, axis=-1, output_type=tf.int32),
                                  output_ids)
        next_ids = tf.where(finished, PAD_ID, next_ids)
        log_prob += tf.where(finished, 0.0, tf.reduce_max(step_log_probs, axis=-1))
        lengths += tf.cast(tf.logical_not(finished), tf.int32)
        ids = write_at(ids, step, next_ids)
        finished = tf.logical_or(finished, tf.equal(next_ids, eos_id))
        constraint_state = constraint.update(constraint_state, next_ids)
        searched = [ids, next_ids, finished, log_prob, lengths]
        if carried:
            searched, carried, state, constraint_state = drop_done_items(
                model, 1, finished, searched, results, carried, state, constraint_state)
        return [step + 1, searched, carried, state, constraint_state]

    searched = [tf.zeros([batch, max_decode_length], tf.int32), tf.fill([batch], PAD_ID),
                tf.zeros([batch], tf.bool), tf.zeros([batch], tf.float32),
                tf.zeros([batch], tf.int32)]
    carried = carried_state(model, buffer_lengths, batch, list(results(*searched)), fixed)
    steps, searched, carried, _, _ = decode_while(
        model, not_done, one_step, [tf.constant(0), searched, carried, state, constraint_state],
        buffer_lengths)
    return (*finish(searched, results, carried), steps)


@tf.function(reduce_retracing=True, autograph=False)
def greedy_search(model: Any, inputs: tf.Tensor, max_decode_length: tf.Tensor,
                  options: SearchOptions = GREEDY) -> tf.Tensor:
    """Argmax decoding of ``inputs`` [B, S] -> ids [B, L] (L <= max_decode_length),
    under ``options`` (their eos_id, allow_eos and constraint).

    Stops once every item has produced EOS; ids keep the EOS and are PAD after it.
    """
    ids, _, _, steps = _greedy_loop(model, inputs, max_decode_length, options.eos_id,
                                    options.allow_eos, options.constraint,
                                    shortlist=options.shortlist)
    return ids[:, :steps]


# When beam search stops searching an input (the decode hparam stop_rule):
# "exact" once no alive hypothesis can enter its finished set, so that it returns
# the beam_size best hypotheses the search can find (tensor2tensor's rule; every
# EOS among the 2 * beam_size candidates of a step competes for the set).
# "beam_finished" finalises as fairseq and CTranslate2 (patience 1) do: an EOS
# candidate is a result only when it ranks within the best beam_size of the step's
# candidates (by log-prob). The input stops once beam_size hypotheses have been
# finalised (their count rule) and one of them has a log-prob no alive hypothesis
# reaches (CTranslate2's early exit, which it takes when its step's best candidate
# is an EOS): without that, a sure model over a few ids fills the set with
# unlikely early EOS extensions of its one good beam and stops before that beam
# ends (docs/SPEED.md). It returns the beam_size best finalised by score (the step
# that fills the set may finalise more: CTranslate2 keeps the best, fairseq the
# first). At alpha 0 its best hypothesis is exact's; with alpha > 0 a longer
# hypothesis might still have scored higher, but far fewer steps run. Both rules, at
# max_decode_length: the finished hypotheses if any (unused slots -inf), else the
# alive ones without EOS (fairseq would end those with EOS there).
# The rules' names: search_options.STOP_RULES.


def _settled_items(step: tf.Tensor, max_decode_length: tf.Tensor, alpha: float,
                   alive_log_probs: tf.Tensor, finished_seq: tf.Tensor,
                   finished_scores: tf.Tensor, eos_id: int,
                   stop_rule: str = "exact") -> tf.Tensor:
    """bool [B]: True for the items the search is done with (``STOP_RULES``).

    Under "beam_finished", an item with nothing alive, or with no empty finished
    slot (which only EOS candidates ranked within the best beam_size fill) and a
    finished hypothesis whose log-prob (its score times its length's penalty) is at
    least the best alive log-prob: log-probs only fall, so no alive hypothesis can
    pass it.
    Under "exact", an item whose finished set no alive hypothesis can
    change. A future finished hypothesis has log-prob <= the best alive log-prob (all
    log-probs are <= 0) and a length in [step + 1, max_decode_length], so its
    score is at most best_alive / (the largest penalty over those lengths).
    Once that bound cannot beat an item's lowest finished score, further steps
    leave all of its beams unchanged (ties keep the existing hypothesis, since
    top_k prefers lower indices). Empty finished slots score -inf, so an item
    only settles with a full finished set (exact for every returned beam, not
    only the best one) or with nothing alive (bound -inf).
    """
    if stop_rule == "beam_finished":
        nothing_alive = tf.reduce_all(alive_log_probs == NEG_INF, axis=1)
        full = tf.reduce_min(finished_scores, axis=1) > NEG_INF
        lengths = tf.argmax(tf.cast(tf.equal(finished_seq, eos_id), tf.int32), axis=2) + 1
        finished_log_probs = tf.where(finished_scores > NEG_INF,
                                      finished_scores * length_penalty(lengths, alpha), NEG_INF)
        reached = (tf.reduce_max(finished_log_probs, axis=1)
                   >= tf.reduce_max(alive_log_probs, axis=1))
        return tf.logical_or(tf.logical_and(full, reached), nothing_alive)
    best_penalty = tf.maximum(length_penalty(step + 1, alpha),
                              length_penalty(max_decode_length, alpha))
    best_possible = tf.reduce_max(alive_log_probs, axis=1) / best_penalty
    return tf.reduce_min(finished_scores, axis=1) >= best_possible


def _keep_settled(done: tf.Tensor, old: tf.Tensor, new: tf.Tensor) -> tf.Tensor:
    """``new`` [B, ...] but for the rows of the ``done`` items (bool [B]): ``old``."""
    return tf.where(tf.reshape(done, [-1] + [1] * (new.shape.rank - 1)), old, new)


def _beam_results(alive_seq: tf.Tensor, alive_log_probs: tf.Tensor, finished_seq: tf.Tensor,
                  finished_scores: tf.Tensor, finished_flags: tf.Tensor, steps: tf.Tensor,
                  alpha: float) -> tuple[tf.Tensor, tf.Tensor]:
    """What the search returns for some items: (ids, scores) of their finished
    hypotheses, or of their alive ones (scored at ``steps`` tokens) for an item
    with none finished."""
    has_finished = tf.reduce_any(finished_flags, axis=1)
    # Best first (dynamic beam allocation keeps its alive beams in stripes, not by score).
    alive_scores, order = tf.math.top_k(alive_log_probs / length_penalty(steps, alpha),
                                        k=tf.shape(alive_log_probs)[1])
    alive_seq = tf.gather(alive_seq, order, batch_dims=1)
    return (tf.where(has_finished[:, None, None], finished_seq, alive_seq),
            tf.where(has_finished[:, None], finished_scores, alive_scores))


def _beam_loop(model: Any, inputs: tf.Tensor, max_decode_length: tf.Tensor | int,
               options: SearchOptions, buffer_lengths: list[int] | None = None
               ) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
    """The alive/finished beam search (see the module docstring) -> (ids [B, beam,
    max_decode_length], scores [B, beam], the number of steps run: ids past it are
    PAD). ``buffer_lengths``: see ``decode_while``.

    Items that have settled (``_settled_items``) leave the batch in groups
    (``done_items.SETTLED_FRACTION_TO_DROP``), their results written out: a
    batch's steps then cost what its unsettled items need, with the same results.
    Not under XLA (fixed shapes), nor for a model whose state the search cannot
    select items from (``Seq2SeqModel.selects_decode_items``).
    """
    beam_size, alpha, stop_rule = options.beam_size, options.alpha, options.stop_rule
    eos_id, allow_eos = options.eos_id, options.allow_eos
    constraint = resolve_constraint(options.constraint, allow_eos)
    banked = isinstance(constraint, LexicalConstraints)
    inputs = tf.cast(inputs, tf.int32)
    max_decode_length = tf.cast(max_decode_length, tf.int32)
    batch = tf.shape(inputs)[0]
    # Item-major: row b * beam_size + k is beam k of item b.
    fixed, state = initial_state(model, model.encode(inputs, training=False),
                                  max_decode_length, buffer_lengths, beam_size)
    constraint_state = constraint.initial_state(inputs, beam_size, max_decode_length)
    output_ids, output_subset = shortlisted(model, inputs, options.shortlist)

    def settled(step, searched):
        return _settled_items(step, max_decode_length, alpha, searched[1], searched[2],
                              searched[3], eos_id, stop_rule)

    def not_settled(step, searched, *_):
        return tf.logical_and(step < max_decode_length,
                              tf.logical_not(tf.reduce_all(settled(step, searched))))

    def one_step(step, searched, carried, state, constraint_state):
        # Items already settled keep what they have: their results must not depend
        # on whether they have left the batch (XLA and some models keep them).
        done = settled(step, searched)
        alive_seq, alive_log_probs, finished_seq, finished_scores, finished_flags = searched
        prev_ids = tf.where(step > 0, tf.gather(alive_seq, tf.maximum(step - 1, 0), axis=2),
                            PAD_ID)
        logits, state = step_model(model, tf.reshape(prev_ids, [-1]), step,
                                   carried.get("fixed", fixed), state, output_subset)
        step_log_probs = constraint.constrain(constraint_state,
                                              token_log_probs(logits, eos_id, allow_eos))
        # Known when tracing, as top_k_by_blocks needs (the model's output layer).
        vocab_size = step_log_probs.shape[-1] or tf.shape(step_log_probs)[-1]
        step_log_probs = tf.reshape(step_log_probs, [-1, beam_size, vocab_size])

        # Best 2 * beam candidates over (beam, token) per item.
        candidates = tf.reshape(alive_log_probs[:, :, None] + step_log_probs,
                                [-1, beam_size * vocab_size])
        top_log_probs, top_index = top_k_by_blocks(candidates, 2 * beam_size)
        top_beams = top_index // vocab_size
        top_ids = vocabulary_ids(top_index % vocab_size, output_ids)
        top_seq = write_at(tf.gather(alive_seq, top_beams, batch_dims=1), step, top_ids)
        ends = tf.equal(top_ids, eos_id)
        # -inf candidates come from empty beam slots (or suppressed tokens): never real.
        ends_real = tf.logical_and(ends, top_log_probs > NEG_INF)
        if stop_rule == "beam_finished":
            # fairseq's and CTranslate2's rule: an EOS ranked below the best beam_size
            # candidates is no result (with few ids every beam's EOS is among the
            # 2 * beam_size, and the finished set would fill with them at once).
            ends_real = tf.logical_and(ends_real, tf.range(2 * beam_size) < beam_size)

        if banked:  # lexical constraints: dynamic beam allocation (lexical_constraints)
            pool_log_probs, pool_index, banks = banked_pool(
                constraint, constraint_state, tf.reshape(step_log_probs, [-1, vocab_size]),
                candidates, top_log_probs, top_index, beam_size)
            pool_beams, pool_ids = pool_index // vocab_size, pool_index % vocab_size
            pool_seq = write_at(tf.gather(alive_seq, pool_beams, batch_dims=1), step, pool_ids)
            pool_log_probs = tf.where(tf.equal(pool_ids, eos_id), NEG_INF, pool_log_probs)
            keep = allocate(pool_log_probs, banks, beam_size)
            alive_log_probs = tf.gather(pool_log_probs, keep, batch_dims=1)
        else:
            # Alive: the best beam_size candidates that did not end in EOS.
            pool_beams, pool_ids, pool_seq = top_beams, top_ids, top_seq
            alive_log_probs, keep = tf.math.top_k(tf.where(ends, NEG_INF, top_log_probs),
                                                  k=beam_size)
        alive_seq = tf.gather(pool_seq, keep, batch_dims=1)
        row_offsets = tf.range(tf.shape(keep)[0])[:, None] * beam_size
        source_rows = tf.reshape(tf.gather(pool_beams, keep, batch_dims=1) + row_offsets, [-1])
        state = model.reorder_decode_state(state, source_rows)
        constraint_state = tf.nest.map_structure(lambda t: tf.gather(t, source_rows),
                                                 constraint_state)
        constraint_state = constraint.update(
            constraint_state, tf.reshape(tf.gather(pool_ids, keep, batch_dims=1), [-1]))

        # Finished: old finished first, so that ties keep the existing hypotheses.
        new_scores = tf.where(ends_real, top_log_probs / length_penalty(step + 1, alpha),
                              NEG_INF)
        finished_scores, keep = tf.math.top_k(
            tf.concat([finished_scores, new_scores], axis=1), k=beam_size)
        finished_seq = tf.gather(tf.concat([finished_seq, top_seq], axis=1), keep,
                                 batch_dims=1)
        finished_flags = tf.gather(tf.concat([finished_flags, ends_real], axis=1), keep,
                                   batch_dims=1)
        searched = [_keep_settled(done, old, new) for old, new in zip(searched, [
            alive_seq, alive_log_probs, finished_seq, finished_scores, finished_flags])]
        if carried:
            searched, carried, state, constraint_state = drop_done_items(
                model, beam_size, settled(step + 1, searched), searched,
                lambda *rows: _beam_results(*rows, step + 1, alpha), carried, state,
                constraint_state)
        return [step + 1, searched, carried, state, constraint_state]

    empty_seq = tf.zeros([batch, beam_size, max_decode_length], tf.int32)
    # Only beam 0 is live at the start, so the first step does not pick duplicates.
    initial_log_probs = tf.tile(tf.constant([[0.0] + [NEG_INF] * (beam_size - 1)]),
                                [batch, 1])
    no_scores = tf.fill([batch, beam_size], NEG_INF)
    searched = [empty_seq, initial_log_probs, empty_seq, no_scores,
                tf.zeros([batch, beam_size], tf.bool)]
    carried = carried_state(model, buffer_lengths, batch, [empty_seq, no_scores], fixed)
    steps, searched, carried, _, _ = decode_while(
        model, not_settled, one_step, [tf.constant(0), searched, carried, state, constraint_state],
        buffer_lengths)
    ids, scores = finish(searched, lambda *rows: _beam_results(*rows, steps, alpha), carried)
    return ids, scores, steps


def search(model: Any, inputs: tf.Tensor, max_decode_length: tf.Tensor | int,
           options: SearchOptions, line_numbers: tf.Tensor | None = None,
           buffer_lengths: list[int] | None = None, prefixes: tf.Tensor | None = None,
           constraints: tf.Tensor | None = None) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
    """The search ``options`` ask for: beam search, greedy for one beam, or sampling
    (``options.sampling``, each input's randomness keyed by its ``line_numbers``,
    default 0..B-1) -> (ids [B, beam or samples, max_decode_length], scores, steps
    run). With ``buffer_lengths`` (``decode_while``) every shape is fixed, as XLA
    needs (no item leaves the batch); the callers cut ids to the steps run.
    ``prefixes`` (int32 [B, P], PAD-padded): the target tokens each input's outputs
    begin with (``forced_prefix``), within ``max_decode_length``. ``constraints``
    (int32 [B, N, L], PAD-padded): the phrases every output of each input holds
    (``lexical_constraints``; with the prefix, within ``max_decode_length``)."""
    if prefixes is not None:
        options = dataclasses.replace(options, constraint=ForcedPrefix(
            prefixes, resolve_constraint(options.constraint, options.allow_eos)))
    if constraints is not None:
        options = dataclasses.replace(options, constraint=LexicalConstraints(
            constraints, resolve_constraint(options.constraint, options.allow_eos),
            options.eos_id))
    if options.sampling:
        if line_numbers is None:
            line_numbers = tf.range(tf.shape(inputs)[0])
        return sample_loop(model, inputs, line_numbers, max_decode_length, options.sampling,
                           options.eos_id, options.constraint, buffer_lengths)
    if options.beam_size == 1:
        ids, log_prob, output_lengths, steps = _greedy_loop(
            model, inputs, max_decode_length, options.eos_id, options.allow_eos,
            options.constraint, buffer_lengths, options.shortlist)
        return (ids[:, None, :],
                (log_prob / length_penalty(output_lengths, options.alpha))[:, None], steps)
    return _beam_loop(model, inputs, max_decode_length, options, buffer_lengths)


@tf.function(reduce_retracing=True, autograph=False)
def beam_search(model: Any, inputs: tf.Tensor, max_decode_length: tf.Tensor,
                options: SearchOptions) -> tuple[tf.Tensor, tf.Tensor]:
    """Beam search of ``inputs`` [B, S] -> (ids [B, beam, L], scores [B, beam]), under
    ``options`` (``SearchOptions``: beam size, alpha, stop rule, constraint, ...).

    Beams are sorted best first. ``allow_eos=False`` gives every hypothesis
    exactly ``max_decode_length`` tokens (for speed measurements).

    ``beam_size=1`` runs the greedy search: T2T's alive/finished search with a
    single beam is not greedy (an EOS among the top two candidates is kept as a
    finished hypothesis while the search goes on), and greedy is what a beam of
    one means to users. Its score is the greedy log-prob with the same length
    penalty. With ``options.sampling``: ``sampling.sample``'s draws.
    """
    ids, scores, steps = search(model, inputs, max_decode_length, options)
    return ids[:, :, :steps], scores
