"""A plain beam search and greedy search in NumPy, for tests only: what
``t2t_lite.decoding.beam_search`` must return, written the obvious way (one input at
a time, one hypothesis at a time, no caches, no batch, no item leaving a batch, no
top-k by blocks), over a function that scores the next token of some prefixes.

The specification (both searches, one input; ``s(prefix)`` is the score of each
next id: the model's log-softmax, -inf where the constraint forbids an id):

Beam search of ``k >= 2`` beams, steps ``t = 0, 1, ...``:
1. ``alive`` holds k slots (tokens, log-prob), at the start ``()`` with 0 in slot 0
   and -inf in the others (empty slots); ``finished`` holds up to k (tokens, score).
2. Candidates: every slot j and id v, log-prob ``alive[j] + s(alive[j])[v]``,
   ordered best first, ties to the lower ``j * V + v`` (``tf.math.top_k``'s
   rule); ``C`` is the first ``2 k`` of them.
3. Finalised: the candidates of ``C`` that end in EOS with a finite log-prob, each
   scored ``log-prob / ((5 + t + 1) / 6) ** alpha`` (the length counts the EOS).
   Under "exact" every such candidate of C (tensor2tensor); under "beam_finished"
   only those among the first k of C (fairseq's and CTranslate2's rule: an EOS
   ranked below k live hypotheses is not a result).
4. ``finished`` becomes the k best by score of (the old finished, then the
   finalised in C's order), ties to the earlier.
5. ``alive`` becomes the first k candidates of C that do not end in EOS (C has at
   most k that do, one per slot), -inf ones included as empty slots.
6. The input is done after step t when ``t + 1`` is the maximum length, or when it
   has settled: under "beam_finished" once it has no finite alive hypothesis, or
   k finished ones of which one has a log-prob (its score times its length's
   penalty, the EOS counted) at least the best alive log-prob (CTranslate2's early
   exit: no alive hypothesis can pass it); under "exact" once its lowest finished score (-inf with
   fewer than k) is at least the best alive log-prob over the largest length
   penalty, ``((5 + max_length) / 6) ** alpha``: no alive hypothesis can then
   enter the finished set.
7. It returns its finished hypotheses best first, the empty slots -inf; with none
   finished, its alive ones, scored ``log-prob / ((5 + t + 1) / 6) ** alpha``.

Greedy (a beam of one): the best id each step (ties to the lower id) until EOS or
the maximum length; scored like a beam's hypothesis, at its own length.

Each search also returns its ``margin``: the smallest gap between two scores at
a cut it made (the last candidate taken against the first left out, the stop
test's two sides). Float32 and float64 sums may order candidates closer than that
differently, so a caller compares hypotheses only where the margin is clear.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable, Generator

import numpy as np
import tensorflow as tf

from t2t_lite.contracts.reserved_ids import EOS_ID, PAD_ID

# A search of one input: it yields the prefixes (tuples of ids) whose next-id scores
# it needs, is sent those scores [n, V], and returns its ``Searched``.
Search = Generator[list, np.ndarray, "Searched"]
# {item: its prefixes} -> {item: their next-id scores [n, V]}
NextScores = Callable[[dict[int, list]], dict[int, np.ndarray]]


@dataclasses.dataclass
class Searched:
    """A reference search's result: (tokens, score) best first (-inf: an empty slot,
    whose tokens mean nothing) and the smallest gap at a cut it made."""
    hypotheses: list[tuple[tuple[int, ...], float]]
    margin: float


def length_penalty(length: int, alpha: float) -> float:
    return ((5.0 + length) / 6.0) ** alpha


class _Margin:
    """The smallest gap seen between the two sides of a cut (finite ones only)."""

    def __init__(self):
        self.value = np.inf

    def cut(self, kept: float, left: float) -> None:
        if np.isfinite(kept) and np.isfinite(left):
            self.value = min(self.value, abs(kept - left))


def _ranked(values: np.ndarray) -> np.ndarray:
    """Indices of ``values`` best first, ties to the lower index."""
    return np.argsort(-values, kind="stable")


class Phrases:
    """One input's terminology phrases and a hypothesis's progress through them (the
    rules of ``lexical_constraints``, written out): a state is (met, current,
    position): which phrases are met, the one in progress (None) and how many of
    its tokens were just produced."""

    def __init__(self, phrases: list[tuple[int, ...]]):
        self.phrases = [tuple(phrase) for phrase in phrases]
        self.total = sum(map(len, self.phrases))

    def start(self) -> tuple:
        return (tuple(False for _ in self.phrases), None, 0)

    def advance(self, state: tuple, token: int) -> tuple:
        met, current, position = state
        if current is not None and token == self.phrases[current][position]:
            if position + 1 < len(self.phrases[current]):
                return (met, current, position + 1)
            return (met[:current] + (True,) + met[current + 1:], None, 0)
        for j, phrase in enumerate(self.phrases):
            if not met[j] and phrase[0] == token:
                if len(phrase) == 1:
                    return (met[:j] + (True,) + met[j + 1:], None, 0)
                return (met, j, 1)
        return (met, None, 0)

    def replay(self, tokens: tuple[int, ...]) -> tuple:
        state = self.start()
        for token in tokens:
            state = self.advance(state, token)
        return state

    def bank(self, state: tuple) -> int:
        met, _, position = state
        return sum(len(p) for p, done in zip(self.phrases, met) if done) + position

    def allowed(self, state: tuple, token: int, steps_left: int) -> bool:
        """Whether ``token`` may follow: EOS once all are met; any other while the
        tokens still needed after it fit in the steps left after it."""
        if token == EOS_ID:
            return self.bank(state) == self.total
        return self.total - self.bank(self.advance(state, token)) + 1 <= steps_left

    def next_tokens(self, state: tuple) -> list[int | None]:
        """DBA's ids for a beam: its phrase's next token, each unmet phrase's first."""
        met, current, position = state
        return ([None if current is None else self.phrases[current][position]]
                + [None if done else phrase[0] for phrase, done in zip(self.phrases, met)])


def beam_search(vocab_size: int, beam_size: int, alpha: float, max_length: int,
                stop_rule: str, phrases: "Phrases | None" = None) -> Search:
    """The beam search of the module docstring, for one input; with ``phrases``
    (a search with terminology constraints), its alive beams by step 5'."""
    k, margin = beam_size, _Margin()
    alive = [((), 0.0)] + [((), -np.inf)] * (k - 1)
    finished: list[tuple[tuple[int, ...], float]] = []
    for t in range(max_length):
        scores = np.full((k, vocab_size), -np.inf)
        live = [j for j, (_, log_prob) in enumerate(alive) if np.isfinite(log_prob)]
        if live:  # empty slots give -inf candidates, whatever the model says
            scores[live] = yield [alive[j][0] for j in live]
            scores[live] += np.array([alive[j][1] for j in live])[:, None]
        flat = scores.reshape(-1)
        order = _ranked(flat)
        margin.cut(flat[order[2 * k - 1]], flat[order[2 * k]])
        chosen = [(alive[i // vocab_size][0] + (int(i % vocab_size),), float(flat[i]))
                  for i in order[:2 * k]]
        eligible = chosen[:k] if stop_rule == "beam_finished" else chosen
        if stop_rule == "beam_finished":
            margin.cut(chosen[k - 1][1], chosen[k][1])
        new = [(tokens, log_prob / length_penalty(t + 1, alpha)) for tokens, log_prob in eligible
               if tokens[-1] == EOS_ID and np.isfinite(log_prob)]
        merged = finished + new
        by_score = sorted(range(len(merged)), key=lambda i: -merged[i][1])  # stable
        if len(merged) > k:
            margin.cut(merged[by_score[k - 1]][1], merged[by_score[k]][1])
        finished = [merged[i] for i in by_score[:k]]
        if phrases is None:
            continuing = [c for c in chosen if c[0][-1] != EOS_ID]
            margin.cut(continuing[k - 1][1],
                       continuing[k][1] if len(continuing) > k else -np.inf)
            alive = continuing[:k]
        else:
            alive = _allocated(alive, scores, order[:2 * k], phrases, k, margin)
        if _settled(alive, finished, k, alpha, max_length, stop_rule, margin):
            break
    if finished:
        return Searched(finished + [((), -np.inf)] * (k - len(finished)), margin.value)
    return Searched(sorted(((tokens, log_prob / length_penalty(t + 1, alpha))
                            for tokens, log_prob in alive), key=lambda one: -one[1]),
                    margin.value)


def _allocated(alive: list, scores: np.ndarray, best: np.ndarray, phrases: Phrases, k: int,
               margin: _Margin) -> list:
    """Step 5' (dynamic beam allocation): the pool is the first 2 k candidates, then
    for each slot j in turn its ``Phrases.next_tokens`` and its best id (ties to the
    lower), each (slot, id) once, its first time. Of those with a finite log-prob
    that do not end in EOS, each has a bank (``Phrases.bank`` of its tokens) and a
    rank within its bank (best first, ties to the earlier in the pool); ``alive``
    becomes the first k by (rank, most banked first), empty slots -inf after."""
    vocab_size = scores.shape[1]
    pool = [int(i) for i in best]
    for j, (tokens, _) in enumerate(alive):
        ids = phrases.next_tokens(phrases.replay(tokens)) + [int(np.argmax(scores[j]))]
        pool += [j * vocab_size + i for i in ids if i is not None]
        top_two = _ranked(scores[j])[:2] + j * vocab_size
        if np.isfinite(scores[j]).sum() > 1 and not set(top_two) <= set(pool[:len(best)]):
            margin.cut(*scores.reshape(-1)[top_two])  # which is the slot's best matters
    seen, entries = set(), []
    for position, index in enumerate(pool):
        if index in seen:
            continue
        seen.add(index)
        token, log_prob = index % vocab_size, scores.reshape(-1)[index]
        if token == EOS_ID or not np.isfinite(log_prob):
            continue
        tokens = alive[index // vocab_size][0] + (token,)
        entries.append((position, tokens, float(log_prob), phrases.bank(phrases.replay(tokens))))
    ranked = []
    for bank in {entry[3] for entry in entries}:
        members = sorted((e for e in entries if e[3] == bank), key=lambda e: (-e[2], e[0]))
        ranked += [(rank, -bank, entry) for rank, entry in enumerate(members)]
    ranked.sort(key=lambda r: (r[0], r[1]))
    taken = [(entry[1], entry[2]) for _, _, entry in ranked[:k]]
    for bank in {entry[3] for entry in entries}:  # each bank's last taken against its next
        members = [r for r in ranked if r[1] == -bank]
        count = sum(1 for r in ranked[:k] if r[1] == -bank)
        if 0 < count < len(members):
            margin.cut(members[count - 1][2][2], members[count][2][2])
    return taken + [((), -np.inf)] * (k - len(taken))


def lexically_masked(next_scores: NextScores, phrases: list[Phrases],
                     max_length: int) -> NextScores:
    """``next_scores`` with each item's ``Phrases.allowed`` mask: -inf for the ids a
    prefix may not go on with, ``max_length - len(prefix)`` steps left."""
    def masked(asked: dict[int, list]) -> dict[int, np.ndarray]:
        answers = next_scores(asked)
        for item, prefixes in asked.items():
            for row, prefix in enumerate(prefixes):
                state = phrases[item].replay(prefix)
                steps_left = max_length - len(prefix)
                for token in range(answers[item].shape[1]):
                    if not phrases[item].allowed(state, token, steps_left):
                        answers[item][row, token] = -np.inf
        return answers

    return masked


def _settled(alive: list, finished: list, k: int, alpha: float, max_length: int,
             stop_rule: str, margin: _Margin) -> bool:
    """Step 6 of the module docstring."""
    best_alive = max(log_prob for _, log_prob in alive)
    if stop_rule == "beam_finished":
        if best_alive == -np.inf:
            return True
        if len(finished) < k:
            return False
        best_finished = max(score * length_penalty(len(tokens), alpha)
                            for tokens, score in finished)
        margin.cut(best_finished, best_alive)
        return best_finished >= best_alive
    lowest = finished[-1][1] if len(finished) == k else -np.inf
    bound = best_alive / length_penalty(max_length, alpha)
    margin.cut(lowest, bound)
    return lowest >= bound


def greedy_search(alpha: float, max_length: int) -> Search:
    """Argmax decoding of one input (module docstring)."""
    tokens: tuple[int, ...] = ()
    log_prob, margin = 0.0, _Margin()
    while len(tokens) < max_length and (not tokens or tokens[-1] != EOS_ID):
        scores = (yield [tokens])[0]
        order = _ranked(scores)
        margin.cut(scores[order[0]], scores[order[1]])
        tokens += (int(order[0]),)
        log_prob += scores[order[0]]
    return Searched([(tokens, log_prob / length_penalty(len(tokens), alpha))], margin.value)


def log_softmax(logits: np.ndarray) -> np.ndarray:
    """Float64 log-softmax over the last axis (-inf logits stay -inf)."""
    logits = np.asarray(logits, np.float64)
    shifted = logits - logits.max(axis=-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))


class Sharpened:
    """``model`` with ``eos_bias`` added to EOS's logit and the logits then times
    ``scale``, PAD never chosen (-inf, as fairseq does): random tiny models then end
    their outputs within a few steps, at lengths that depend on the input.
    Everything else is the model's own (its decode state, reordering and item
    selection), but with ``whole_batch`` the search may not drop items it is
    done with (as under XLA): it keeps them to the end of the batch."""

    def __init__(self, model: Any, scale: float, eos_bias: float, whole_batch: bool = False):
        self.model = model
        if whole_batch:
            self.selects_decode_items = False
        ids = np.arange(model.vocab_size)
        self._bias = np.where(ids == PAD_ID, -np.inf, eos_bias * (ids == EOS_ID))
        self._bias = self._bias.astype(np.float32)
        self._scale = np.float32(scale)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.model, name)

    def logits(self, logits: tf.Tensor) -> tf.Tensor:
        return (tf.cast(logits, tf.float32) + self._bias) * self._scale

    def decode_step(self, ids, step, state):
        logits, state = self.model.decode_step(ids, step, state)
        return self.logits(logits), state


def run_searches(searches: list[Search], next_scores: NextScores) -> list[Searched]:
    """Runs one search per input, in step: each step's prefixes of every input
    still searching are scored by one ``next_scores`` call (the searches
    themselves stay one input at a time)."""
    results: dict[int, Searched] = {}
    asked = {item: next(search) for item, search in enumerate(searches)}
    while asked:
        answers = next_scores(asked)
        for item, answer in answers.items():
            try:
                asked[item] = searches[item].send(answer)
            except StopIteration as done:
                results[item] = done.value
                del asked[item]
    return [results[item] for item in range(len(searches))]


def teacher_forced_scores(model: Sharpened, inputs: np.ndarray, max_length: int,
                          constraint: Any = None,
                          forced: list[tuple[int, ...]] | None = None) -> NextScores:
    """``NextScores`` of ``inputs`` [B, S] from ``model``'s teacher-forced logits over
    each whole prefix (its ``call``: no decode state), the ``constraint`` (a
    ``DecodeConstraint``, one state per prefix) replayed over the prefix's ids. With
    ``forced`` (each item's target prefix), a prefix shorter than its item's may
    only go on with the item's next forced id, at the model's own score (the
    constraint's mask set aside there)."""
    states: dict[tuple[int, tuple[int, ...]], Any] = {}

    def constraint_state(item: int, prefix: tuple[int, ...]) -> Any:
        if (item, prefix) not in states:
            states[item, prefix] = (
                constraint.initial_state(tf.constant(inputs[item:item + 1]), 1,
                                         tf.constant(max_length)) if not prefix else
                constraint.update(constraint_state(item, prefix[:-1]),
                                  tf.constant(prefix[-1:])))
        return states[item, prefix]

    def next_scores(asked: dict[int, list]) -> dict[int, np.ndarray]:
        asks = [(item, prefix) for item, prefixes in asked.items() for prefix in prefixes]
        scores = np.zeros((len(asks), model.vocab_size))
        for length in {len(prefix) for _, prefix in asks}:  # one call per length
            rows = [row for row, (_, prefix) in enumerate(asks) if len(prefix) == length]
            targets = np.array([asks[row][1] + (PAD_ID,) for row in rows], np.int32)
            features = {"inputs": tf.constant(inputs[[asks[row][0] for row in rows]]),
                        "targets": tf.constant(targets)}
            scores[rows] = log_softmax(model.logits(model.model(features))[:, -1].numpy())
        model_scores = scores.copy()
        if constraint is not None:
            state = tf.nest.map_structure(lambda *rows: tf.concat(rows, 0),
                                          *[constraint_state(*ask) for ask in asks])
            scores = constraint.constrain(state, tf.constant(scores, tf.float32)).numpy()
        for row, (item, prefix) in enumerate(asks):
            if forced and len(prefix) < len(forced[item]):
                next_id = forced[item][len(prefix)]
                scores[row] = -np.inf
                scores[row, next_id] = model_scores[row, next_id]
        starts = np.cumsum([0] + [len(prefixes) for prefixes in asked.values()])
        return {item: scores[start:start + len(prefixes)].astype(np.float64)
                for (item, prefixes), start in zip(asked.items(), starts)}

    return next_scores
