"""Constrained decoding of linearized trees: ``TreeConstraint``, a decode
constraint (``t2t_lite.contracts.decode_constraint.DecodeConstraint``) that beam and
greedy search apply to parsing problems.

It allows only well-formed linearized trees (``t2t_lite.parsing.linearize``)
over exactly the input's words: one word slot per input word, balanced
brackets, one root, no empty constituent, EOS only once the tree is complete.
It also stops opening brackets that could no longer be closed before
``max_decode_length``, so every hypothesis can finish in time.

Forbidden ids get -inf; allowed ones keep the model's log-probabilities, not
renormalized (the constraint protocol's rule; see ``contracts/decode_constraint.py``
for why).
"""
from __future__ import annotations

from typing import Collection, Sequence

import numpy as np
import tensorflow as tf

from t2t_lite.contracts.reserved_ids import EOS_ID, PAD_ID
from t2t_lite.parsing.linearize import Kind, SlotToken, allowed_kinds, token_kinds
from t2t_lite.parsing.trees import PTB_POS_TAGS

NEG_INF = float("-inf")


def _state_index(started, words_left, depth_class, last_was_open, last_was_tag):
    """Index into the allowed-kinds table; works on NumPy arrays and int32 tensors alike."""
    return (((started * 2 + words_left) * 3 + depth_class) * 2 + last_was_open) * 2 + last_was_tag


def _allowed_kinds_table(tagged: bool) -> np.ndarray:
    """bool[48, NUM_KINDS]: ``allowed_kinds`` for every class of decoding state.

    ``allowed_kinds`` looks at a state only through these predicates: any word
    placed, any word left, depth 0 / 1 / more, last token an opener, last token
    a tag. One representative state per combination gives the whole table, so
    the rules stay written once, in ``t2t_lite.parsing.linearize``.
    """
    started, words_left, depth_class, last_was_open, last_was_tag = (
        a.ravel() for a in np.meshgrid([0, 1], [0, 1], [0, 1, 2], [0, 1], [0, 1],
                                       indexing="ij"))
    table = np.zeros((48, len(Kind)), dtype=bool)
    table[_state_index(started, words_left, depth_class, last_was_open, last_was_tag)] = (
        allowed_kinds(words_placed=started, open_depth=depth_class,
                      last_was_open=last_was_open, num_words=started + words_left,
                      last_was_tag=last_was_tag, tagged=tagged))
    return table


class TreeConstraint:
    """Only well-formed linearized trees over the input's words (module docstring).

    ``vocab[i]`` is the token string of id ``i`` in the shared vocabulary, whose
    input tokens are whole words: the number of words of an input row is its
    number of ids other than PAD and EOS.

    With ``SlotToken.POS`` each word comes after its tag (an opener of one of
    ``tags``, ``(DT``), and only there.

    With targets that spell the words (``SlotToken.WORD`` and ``.POS``) a word
    slot allows only the id of the next input word, so the output copies the
    input exactly, and that id is scored with the model's whole word mass
    (the log-sum-exp over every word id): which word comes next is the
    constraint's business, the model only decides *that* a word comes now. A
    model that misspells a copy (``billion`` for ``million``) then still places
    the word, rather than opening brackets (dev F1 63.1 -> 69.8).

    Length limit: at depth > 0, an opener is allowed only if the remaining
    steps still leave room for a word (and its tag) per unplaced word, a closer
    per open bracket (the new one included) and EOS. The root opener is always allowed,
    so an input too long for ``max_decode_length`` still decodes (unfinished;
    ``delinearize`` repairs it).
    """

    def __init__(self, vocab: Sequence[str], eos_id: int = EOS_ID, pad_id: int = PAD_ID,
                 slot_token: SlotToken = SlotToken.PLACEHOLDER,
                 tags: Collection[str] = PTB_POS_TAGS):
        kinds = token_kinds(vocab, eos_id, pad_id, slot_token, tags)
        missing = [kind.name for kind in (Kind.OPEN, Kind.WORD, Kind.CLOSE)
                   if not np.any(kinds == kind)]
        if slot_token is SlotToken.POS and not np.any(kinds == Kind.TAG):
            raise ValueError("the vocabulary has no POS-tag openers such as '(DT': data "
                             "written before the tagged targets kept their words? Run "
                             "t2t-datagen again into a new --data_dir")
        if missing:
            raise ValueError(f"the vocabulary has no {'/'.join(missing)} tokens of a "
                             "linearized tree (such as '(S', 'XX', ')'); is it a parsing "
                             "problem's vocabulary?")
        self.vocab_size = len(vocab)
        self.eos_id = eos_id
        self.pad_id = pad_id
        self.lexical = slot_token.spells_words
        self.tokens_per_word = slot_token.tokens_per_word
        self._kinds = tf.constant(kinds, tf.int32)
        self._not_word = tf.constant(kinds != Kind.WORD)[None, :]   # [1, V], built once
        self._table = tf.constant(_allowed_kinds_table(tagged=slot_token is SlotToken.POS))

    def initial_state(self, inputs: tf.Tensor, beam_size: int,
                      max_decode_length: tf.Tensor) -> dict[str, tf.Tensor]:
        inputs = tf.cast(inputs, tf.int32)
        is_word = tf.logical_and(tf.not_equal(inputs, self.pad_id),
                                 tf.not_equal(inputs, self.eos_id))
        num_words = tf.repeat(tf.reduce_sum(tf.cast(is_word, tf.int32), axis=1), beam_size)
        zeros = tf.zeros_like(num_words)
        state = {"num_words": num_words, "words_placed": zeros, "open_depth": zeros,
                 "last_was_open": zeros, "last_was_tag": zeros,
                 "steps_left": zeros + tf.cast(max_decode_length, tf.int32)}
        if self.lexical:
            state["input_ids"] = tf.repeat(inputs, beam_size, axis=0)
        return state

    def allowed(self, state: dict[str, tf.Tensor]) -> tf.Tensor:
        """bool [N, V]: the ids allowed next."""
        return self._allowed_and_next_word(state)[0]

    def _allowed_and_next_word(self, state: dict[str, tf.Tensor]
                               ) -> tuple[tf.Tensor, tf.Tensor | None]:
        """(bool [N, V] the ids allowed next, bool [N, V] the next input word's id or None)."""
        placed, depth = state["words_placed"], state["open_depth"]
        words_left = state["num_words"] - placed
        # (Depth < 0 or too many words come only after a masked token; clipping keeps
        # such dead rows inside the table.)
        index = _state_index(tf.cast(placed > 0, tf.int32), tf.cast(words_left > 0, tf.int32),
                             tf.clip_by_value(depth, 0, 2), state["last_was_open"],
                             state["last_was_tag"])
        kind_mask = tf.gather(self._table, index)                      # [N, NUM_KINDS]
        # After an opener here: a word (and tag) per word left, a closer per bracket, EOS.
        room_to_open = (self.tokens_per_word * words_left + depth + 2
                        <= state["steps_left"] - 1)
        open_ok = tf.logical_or(tf.equal(depth, 0), room_to_open)
        kind_mask = tf.logical_and(kind_mask, tf.stack(
            [open_ok] + [tf.ones_like(open_ok)] * (len(Kind) - 1), axis=1))
        allowed = tf.gather(kind_mask, self._kinds, axis=1)             # [N, V]
        if not self.lexical:
            return allowed, None
        last = tf.shape(state["input_ids"])[1] - 1
        next_word = tf.gather(state["input_ids"], tf.minimum(placed, last), batch_dims=1)
        # (Once every word is placed, next_word is the input's EOS: not a word slot.)
        is_next_word = tf.logical_and(
            tf.equal(tf.range(self.vocab_size)[None, :], next_word[:, None]),
            tf.logical_not(self._not_word))
        return tf.logical_and(allowed, tf.logical_or(self._not_word, is_next_word)), is_next_word

    def constrain(self, state: dict[str, tf.Tensor], log_probs: tf.Tensor) -> tf.Tensor:
        allowed, is_next_word = self._allowed_and_next_word(state)
        if is_next_word is not None:
            word_mass = tf.reduce_logsumexp(
                tf.where(self._not_word, NEG_INF, log_probs), axis=1, keepdims=True)
            log_probs = tf.where(is_next_word, word_mass, log_probs)
        # A state that allows nothing is reachable only through a -inf scored
        # token; allowing everything there keeps the scores finite.
        dead = tf.logical_not(tf.reduce_any(allowed, axis=1, keepdims=True))
        return tf.where(tf.logical_or(allowed, dead), log_probs, NEG_INF)

    def update(self, state: dict[str, tf.Tensor], ids: tf.Tensor) -> dict[str, tf.Tensor]:
        kind = tf.gather(self._kinds, tf.cast(ids, tf.int32))
        is_open = tf.cast(tf.equal(kind, Kind.OPEN), tf.int32)
        return {**state,
                "words_placed": state["words_placed"] + tf.cast(tf.equal(kind, Kind.WORD),
                                                                tf.int32),
                "open_depth": state["open_depth"] + is_open
                - tf.cast(tf.equal(kind, Kind.CLOSE), tf.int32),
                "last_was_open": is_open,
                "last_was_tag": tf.cast(tf.equal(kind, Kind.TAG), tf.int32),
                "steps_left": state["steps_left"] - 1}
