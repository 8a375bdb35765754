"""Sampling decode: each token drawn at random from the model's next-token distribution.

Where beam search looks for the most probable outputs, sampling draws outputs as
the model would produce them, as back-translation wants (Edunov et al. 2018:
sampled back-translations of monolingual text train a better forward model than
beam ones). Each step, per hypothesis:

* the scores are the model's log-probabilities (after the problem's decode
  constraint, which gives forbidden tokens -inf: constrained decodes still hold);
* divided by ``temperature`` (below 1 sharper, above 1 flatter);
* cut to the ``top_k`` most probable tokens (0: all), then to the smallest set
  of most probable tokens whose probability, renormalized after the cut to
  top-k, reaches ``top_p`` (1: all; Holtzman et al. 2020's nucleus), ties at
  either edge kept;
* one token drawn from what is left, renormalized.

``num_samples`` samples an input draw independently, and run as a beam of that
many hypotheses that never reorders (the input is encoded once). A sample is
scored by its log-probability under the model (the sum of its tokens'
log-probabilities, EOS included, with no length penalty), whatever the
temperature, top-k or top-p it was drawn under: what ``--score_file`` would give
it, and comparable between settings.

Randomness is a function of (``seed``, the input's line number, the sample's
number, the step) alone: a counter-based hash (SplitMix64's mixer, uint64 ops)
gives each hypothesis one uniform number per step, and the token is where it
falls in the cumulative distribution. So a decode is reproducible, and an
input's samples do not depend on the batch size, the other inputs of its batch,
the length sorting or items leaving the batch as they finish; sample k is the
same whatever ``num_samples``; and each input stops at its own length limit:
the batch's ``max_decode_length`` less the input's padding (in t2t-decoder, its
length plus ``extra_length``, as long as the model's positions do not cut the
batch's), where a search stops every input of a batch at the batch's limit. The
model's own arithmetic may differ in its last bits between batch shapes; a draw
changes only if its number falls within that of a boundary between two tokens
(about 1e-7 a token).
"""
from __future__ import annotations

import dataclasses
from typing import Any

import tensorflow as tf

from t2t_lite.contracts.decode_constraint import DecodeConstraint
from t2t_lite.contracts.reserved_ids import EOS_ID, PAD_ID
from t2t_lite.decoding.search_loop import (decode_while, initial_state, resolve_constraint,
                                           step_model, token_log_probs, write_at)
from t2t_lite.decoding.done_items import carried_state, drop_done_items, finish

# The decode hparam sampling_method (tensor2tensor's name and values): "argmax"
# decodes by search (beam_size; 1 = greedy), "random" draws each token.
SAMPLING_METHODS = ("argmax", "random")

NEG_INF = float("-inf")
_GOLDEN = 0x9E3779B97F4A7C15  # SplitMix64's increment and mixing constants
_MIX = (0xBF58476D1CE4E5B9, 0x94D049BB133111EB)


@dataclasses.dataclass(frozen=True)
class SamplingOptions:
    """What ``sampling_method=random`` draws from, and how often (the decode hparams
    sampling_temp, sampling_keep_top_k, sampling_keep_top_p, num_samples,
    sampling_seed)."""
    temperature: float = 1.0
    top_k: int = 0          # 0: every token
    top_p: float = 1.0      # 1: every token
    num_samples: int = 1
    seed: int = 1

    def __post_init__(self) -> None:
        if not (self.temperature > 0 and self.top_k >= 0 and 0 < self.top_p <= 1
                and self.num_samples >= 1 and self.seed >= 0):
            raise ValueError(f"bad sampling options {self}: temperature > 0, top_k >= 0, "
                             "top_p in (0, 1], num_samples >= 1 and seed >= 0")


def _mix(x: tf.Tensor) -> tf.Tensor:
    """SplitMix64's finalizer: a bijection of uint64 whose every output bit depends
    on every input bit."""
    def shift_xor(value, bits):
        return tf.bitwise.bitwise_xor(value, tf.bitwise.right_shift(value, tf.constant(
            bits, tf.uint64)))
    x = shift_xor(x + tf.constant(_GOLDEN, tf.uint64), 30) * tf.constant(_MIX[0], tf.uint64)
    x = shift_xor(x, 27) * tf.constant(_MIX[1], tf.uint64)
    return shift_xor(x, 31)


def uniforms(seed: int, line_numbers: tf.Tensor, num_samples: int,
             step: tf.Tensor) -> tf.Tensor:
    """float64 [B, num_samples] in (0, 1): one number for each sample of each input
    (``line_numbers`` int [B]) at ``step``, a function of those four alone."""
    def mixed_in(state, value):
        return _mix(tf.bitwise.bitwise_xor(state, tf.cast(value, tf.uint64)))
    state = _mix(tf.constant(seed, tf.uint64))
    state = mixed_in(state, line_numbers)[:, None]
    state = mixed_in(state, tf.range(num_samples)[None, :])
    state = mixed_in(state, step)
    top_53_bits = tf.cast(tf.bitwise.right_shift(state, tf.constant(11, tf.uint64)),
                          tf.float64)
    return (top_53_bits + 0.5) * 2.0 ** -53


def sampling_scores(log_probs: tf.Tensor, options: SamplingOptions) -> tf.Tensor:
    """The scores [R, V] tokens are drawn from (softmax of them): ``log_probs`` over
    the temperature, -inf outside the top-k and then the top-p tokens."""
    scores = log_probs / options.temperature if options.temperature != 1 else log_probs
    vocab_size = scores.shape[-1] or tf.shape(scores)[-1]
    if options.top_k:
        kth = tf.math.top_k(scores, k=tf.minimum(options.top_k, vocab_size)).values[:, -1:]
        scores = tf.where(scores >= kth, scores, NEG_INF)
    if options.top_p < 1:
        ranked = tf.sort(scores, direction="DESCENDING")
        mass_before = tf.math.cumsum(tf.nn.softmax(ranked), axis=-1, exclusive=True)
        # The least score kept: that of the token whose mass reaches top_p.
        last = tf.reduce_sum(tf.cast(mass_before < options.top_p, tf.int32), axis=-1) - 1
        least = tf.gather(ranked, tf.maximum(last, 0), batch_dims=1)[:, None]
        scores = tf.where(scores >= least, scores, NEG_INF)
    return scores


def draw(scores: tf.Tensor, uniform: tf.Tensor) -> tf.Tensor:
    """The token of each row of ``scores`` [R, V] where ``uniform`` float64 [R] falls
    in the cumulative distribution of softmax(scores) -> int32 [R]. A token of
    probability 0 spans no interval, so it is never drawn. The sums are float64, so
    that the last tokens of a large vocabulary keep their share."""
    weights = tf.exp(scores - tf.reduce_max(scores, axis=-1, keepdims=True))
    cumulative = tf.math.cumsum(tf.cast(weights, tf.float64), axis=-1)
    total = cumulative[:, -1:]
    # Below the total, so that the token found has a weight (one rounded up to the
    # total would lie past the last token of probability > 0).
    target = tf.minimum(uniform[:, None] * total, tf.math.nextafter(total, 0.0))
    return tf.searchsorted(cumulative, target, side="right", out_type=tf.int32)[:, 0]


def sample_loop(model: Any, inputs: tf.Tensor, line_numbers: tf.Tensor,
                max_decode_length: tf.Tensor | int, options: SamplingOptions,
                eos_id: int = EOS_ID, constraint: DecodeConstraint | None = None,
                buffer_lengths: list[int] | None = None
                ) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
    """``options.num_samples`` samples of each of ``inputs`` [B, S] (``line_numbers``
    int32 [B] key their randomness) -> (ids [B, num_samples, max_decode_length],
    log-probabilities [B, num_samples], the number of steps run: ids past it are PAD).
    An input's samples stop at ``max_decode_length`` less its padding.
    ``buffer_lengths``: as beam search's (``search_loop.decode_while``). An input
    leaves the batch once all its samples have ended (``done_items``), as in beam
    search."""
    constraint = resolve_constraint(constraint, allow_eos=True)
    samples = options.num_samples
    inputs = tf.cast(inputs, tf.int32)
    max_decode_length = tf.cast(max_decode_length, tf.int32)
    batch = tf.shape(inputs)[0]
    limits = max_decode_length - tf.reduce_sum(tf.cast(tf.equal(inputs, PAD_ID), tf.int32),
                                               axis=1)
    # Item-major, as a beam: row b * samples + k is sample k of input b.
    fixed, state = initial_state(model, model.encode(inputs, training=False),
                                  max_decode_length, buffer_lengths, samples)
    # Each hypothesis's own limit, so that a constraint lets it finish in time.
    constraint_state = constraint.initial_state(inputs, samples, tf.repeat(limits, samples))

    def not_done(step, searched, *_):
        return tf.logical_and(step < max_decode_length,
                              tf.logical_not(tf.reduce_all(searched[2])))

    def results(ids, _, __, log_prob, *___):
        return ids, log_prob

    def one_step(step, searched, carried, state, constraint_state):
        ids, prev_ids, finished, log_prob, lines, limits = searched
        logits, state = step_model(model, tf.reshape(prev_ids, [-1]), step,
                              carried.get("fixed", fixed), state)
        log_probs = constraint.constrain(constraint_state, token_log_probs(logits, eos_id, True))
        next_ids = draw(sampling_scores(log_probs, options),
                        tf.reshape(uniforms(options.seed, lines, samples, step), [-1]))
        chosen = tf.reshape(tf.gather(log_probs, next_ids, batch_dims=1), [-1, samples])
        next_ids = tf.where(finished, PAD_ID, tf.reshape(next_ids, [-1, samples]))
        log_prob += tf.where(finished, 0.0, chosen)
        ids = write_at(ids, step, next_ids)
        finished = tf.logical_or(tf.logical_or(finished, tf.equal(next_ids, eos_id)),
                                 (step + 1 >= limits)[:, None])
        constraint_state = constraint.update(constraint_state, tf.reshape(next_ids, [-1]))
        searched = [ids, next_ids, finished, log_prob, lines, limits]
        if carried:
            searched, carried, state, constraint_state = drop_done_items(
                model, samples, tf.reduce_all(finished, axis=1), searched, results, carried,
                state, constraint_state)
        return [step + 1, searched, carried, state, constraint_state]

    searched = [tf.zeros([batch, samples, max_decode_length], tf.int32),
                tf.fill([batch, samples], PAD_ID), tf.zeros([batch, samples], tf.bool),
                tf.zeros([batch, samples], tf.float32), tf.cast(line_numbers, tf.int32),
                limits]
    carried = carried_state(model, buffer_lengths, batch, list(results(*searched)), fixed)
    steps, searched, carried, _, _ = decode_while(
        model, not_done, one_step, [tf.constant(0), searched, carried, state, constraint_state],
        buffer_lengths)
    ids, log_probs = finish(searched, results, carried)
    return ids, log_probs, steps
