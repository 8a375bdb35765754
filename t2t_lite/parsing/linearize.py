"""Trees as token sequences (Vinyals et al. 2015, "Grammar as a Foreign Language").

The scheme. The source is the sentence's words joined by single spaces. The
target is a depth-first walk of the tree, tokens joined by single spaces:

* a constituent opens with ``(LABEL`` (label and bracket in one token: ``(S``, ``(NP``);
* each word is a *slot token* (``SlotToken``): the placeholder ``XX`` (its POS
  tag dropped, as Vinyals did; the default), its POS tag (``NNP``, ``-LRB-``),
  or the word itself (a lexicalized target: the decoder then sees which word it
  has reached, instead of counting placeholders);
* a constituent closes with ``)``, or, with ``labelled_closers=True``, ``)LABEL``
  as in Vinyals' paper.

    source: John has a dog .
    target: (S (NP XX ) (VP XX (NP XX XX ) ) XX )

Bare closers are the default: a closer's label is always that of the innermost
open constituent, so labelled closers add no information to the tree, only
~25 vocabulary entries the model must keep consistent with their openers; and
with bare closers the decoding state machine below (three integers a
hypothesis) rules out every malformed sequence exactly, which a labelled
closer would need a stack of labels for. ``delinearize`` accepts both forms.

Inverse and repair. ``delinearize(tokens, words)`` rebuilds the tree, putting
the words into the word slots in order. Every prediction gives a well-formed
tree holding exactly ``words``, repaired deterministically, left to right:
unknown tokens and word slots beyond the last word are dropped; a closer with
nothing open is dropped; a closer of a constituent with nothing in it drops
that constituent; at the end, words not yet placed are appended as XX leaves to
the innermost open constituent (the top level if none is open), open
constituents are closed (empty ones dropped), and several top-level pieces (or
a lone word) are wrapped in a ``TOP`` root, which EVALB ignores. Leaves get the
POS ``XX`` unless the slot tokens are POS tags.

Constrained decoding. A prefix is summarised by three integers: words placed,
open depth, and whether the last token was an opener. ``allowed_kinds`` maps
them (NumPy arrays, any shape) to which token kinds may come next, so that
only sequences with exactly one root holding all the words and no empty
constituent can be produced; ``token_kinds`` classifies a vocabulary so the
per-kind mask becomes a per-token logits mask by a gather. With labelled
closers any closer passes the mask (its label is not checked against the open
constituent); ``delinearize`` then closes the innermost one.
"""
from __future__ import annotations

import enum
from typing import Collection, Sequence

import numpy as np

from t2t_lite.contracts.reserved_ids import EOS_ID, PAD_ID
from t2t_lite.parsing.trees import PLACEHOLDER_TAG, ROOT_LABEL, Tree, replace_tags

WORD_SLOT = PLACEHOLDER_TAG   # a word's target token: its tag is not predicted
OPEN = "("
CLOSE = ")"


class Kind(enum.IntEnum):
    """Token kinds of the target language; OTHER (PAD, unknown tokens) is never allowed."""

    OPEN = 0
    WORD = 1
    CLOSE = 2
    EOS = 3
    OTHER = 4


NUM_KINDS = len(Kind)


class SlotToken(enum.Enum):
    """What a word's target token is: one of these per linearization, never a mix."""

    PLACEHOLDER = "placeholder"   # XX
    POS = "pos"                   # its POS tag
    WORD = "word"                 # the word itself (lexicalized targets)


def linearize(tree: Tree, slot_token: SlotToken = SlotToken.PLACEHOLDER,
              labelled_closers: bool = False) -> list[str]:
    """The target tokens of ``tree``, e.g. ``["(S", "(NP", "XX", ")", ...]``."""
    tokens: list[str] = []

    def walk(node: Tree) -> None:
        if node.is_preterminal:
            tokens.append(node.word if slot_token is SlotToken.WORD
                          else node.label if slot_token is SlotToken.POS else WORD_SLOT)
            return
        tokens.append(OPEN + node.label)
        for child in node.children:
            walk(child)
        tokens.append(CLOSE + node.label if labelled_closers else CLOSE)

    walk(tree)
    return tokens


def linearize_example(tree: Tree, slot_token: SlotToken = SlotToken.PLACEHOLDER,
                      labelled_closers: bool = False) -> dict[str, str]:
    """``{"inputs": words joined by spaces, "targets": target tokens joined by spaces}``."""
    return {"inputs": " ".join(tree.words()),
            "targets": " ".join(linearize(tree, slot_token, labelled_closers))}


def with_placeholder_tags(tree: Tree) -> Tree:
    """``tree`` with every POS tag replaced by ``XX``: what ``delinearize`` returns without POS."""
    return replace_tags(tree, [WORD_SLOT] * len(tree.preterminals()))


def token_kind(token: str, slot_token: SlotToken = SlotToken.PLACEHOLDER,
               tags: Collection[str] = ()) -> Kind:
    """The kind of one target token (EOS is an id, not a token string, so never returned).

    A word slot is filled by ``XX`` (placeholders), by one of ``tags`` when given
    (POS tags: a vocabulary shared with the input words must not let a word pass
    for a tag), or else by any token that is not a bracket.
    """
    if token.startswith(OPEN):
        return Kind.OPEN if len(token) > len(OPEN) else Kind.OTHER
    if token.startswith(CLOSE):
        return Kind.CLOSE
    if slot_token is SlotToken.POS and tags:
        return Kind.WORD if token in tags else Kind.OTHER
    if token == WORD_SLOT or (slot_token is not SlotToken.PLACEHOLDER and token):
        return Kind.WORD
    return Kind.OTHER


def delinearize(tokens: Sequence[str] | str, words: Sequence[str],
                slot_token: SlotToken = SlotToken.PLACEHOLDER) -> Tree:
    """A well-formed tree over exactly ``words`` from a (possibly malformed) target sequence.

    Word slots take ``words`` in order whatever their token (``SlotToken.WORD``:
    the model's copy of a word may be ``<UNK>``)."""
    if not words:
        raise ValueError("delinearize needs at least one word: an empty sentence has no tree")
    if isinstance(tokens, str):
        tokens = tokens.split()
    top: list[Tree] = []          # finished top-level pieces
    stack: list[Tree] = []        # open constituents, innermost last
    placed = 0

    def attach(node: Tree) -> None:
        (stack[-1].children if stack else top).append(node)

    for token in tokens:
        kind = token_kind(token, slot_token)
        if kind is Kind.OPEN:
            stack.append(Tree(token[len(OPEN):]))
        elif kind is Kind.WORD and placed < len(words):
            attach(Tree.leaf(token if slot_token is SlotToken.POS else WORD_SLOT,
                             words[placed]))
            placed += 1
        elif kind is Kind.CLOSE and stack:
            node = stack.pop()
            if node.children:
                attach(node)
    for word in words[placed:]:
        attach(Tree.leaf(WORD_SLOT, word))
    while stack:
        node = stack.pop()
        if node.children:
            attach(node)
    if len(top) == 1 and not top[0].is_preterminal:
        return top[0]
    return Tree(ROOT_LABEL, top)


def token_kinds(vocab: Sequence[str], eos_id: int = EOS_ID, pad_id: int = PAD_ID,
                slot_token: SlotToken = SlotToken.PLACEHOLDER,
                tags: Collection[str] = ()) -> np.ndarray:
    """int32[V]: the ``Kind`` of each vocabulary id (``vocab[i]`` is the token of id i);
    ``tags``: the POS tags a slot may hold (``SlotToken.POS`` only)."""
    kinds = np.array([token_kind(token, slot_token, tags) for token in vocab], dtype=np.int32)
    kinds[pad_id] = Kind.OTHER
    kinds[eos_id] = Kind.EOS
    return kinds


def allowed_kinds(words_placed, open_depth, last_was_open, num_words) -> np.ndarray:
    """bool[..., NUM_KINDS]: which kinds may come next, for NumPy-broadcastable state arrays.

    An opener needs a word left to fill it and, at depth 0, must be the root
    (nothing placed yet); a word needs an open constituent; a closer needs
    something open that is not empty, and may close the root only once all
    words are placed; EOS needs every word placed and every bracket closed.
    Every prefix these rules allow can be completed, so decoding never stalls.
    """
    words_placed, open_depth, last_was_open, num_words = np.broadcast_arrays(
        np.asarray(words_placed), np.asarray(open_depth), np.asarray(last_was_open, dtype=bool),
        np.asarray(num_words))
    words_left = words_placed < num_words
    is_open = open_depth > 0
    mask = np.zeros(words_placed.shape + (NUM_KINDS,), dtype=bool)
    mask[..., Kind.OPEN] = words_left & (is_open | (words_placed == 0))
    mask[..., Kind.WORD] = words_left & is_open
    mask[..., Kind.CLOSE] = is_open & ~last_was_open & ((open_depth > 1) | ~words_left)
    mask[..., Kind.EOS] = ~is_open & ~words_left
    return mask


def next_state(words_placed, open_depth, kind) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(words_placed, open_depth, last_was_open) after emitting tokens of ``kind`` (arrays)."""
    kind = np.asarray(kind)
    return (np.asarray(words_placed) + (kind == Kind.WORD),
            np.asarray(open_depth) + (kind == Kind.OPEN) - (kind == Kind.CLOSE),
            kind == Kind.OPEN)


class LinearizationConstraint:
    """The allowed next token ids for one sentence, tracked token by token.

    ``vocab[i]`` is the token string of id ``i``; ``eos_id`` and ``pad_id`` are
    the target encoder's EOS and PAD ids. The beam search uses the same rules batched through
    ``token_kinds``, ``allowed_kinds`` and ``next_state``.
    """

    def __init__(self, num_words: int, vocab: Sequence[str], eos_id: int = EOS_ID,
                 pad_id: int = PAD_ID, slot_token: SlotToken = SlotToken.PLACEHOLDER,
                 tags: Collection[str] = ()):
        self.num_words = num_words
        self.kinds = token_kinds(vocab, eos_id, pad_id, slot_token, tags)
        self.words_placed = 0
        self.open_depth = 0
        self.last_was_open = False

    def allowed_ids(self) -> np.ndarray:
        """bool[V]: the ids that may come next."""
        kind_mask = allowed_kinds(self.words_placed, self.open_depth, self.last_was_open,
                                  self.num_words)
        return kind_mask[self.kinds]

    def update(self, token_id: int) -> None:
        """Advances past ``token_id``; a disallowed id is a ValueError (a decoder bug)."""
        if not self.allowed_ids()[token_id]:
            raise ValueError(f"token id {token_id} ({Kind(self.kinds[token_id]).name}) is not "
                             f"allowed after {self.words_placed} of {self.num_words} words at "
                             f"depth {self.open_depth}")
        placed, depth, last_open = next_state(self.words_placed, self.open_depth,
                                              self.kinds[token_id])
        self.words_placed, self.open_depth = int(placed), int(depth)
        self.last_was_open = bool(last_open)
