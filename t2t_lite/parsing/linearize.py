"""Trees as token sequences (Vinyals et al. 2015, "Grammar as a Foreign Language").

The scheme. The source is the sentence's words joined by single spaces. The
target is a depth-first walk of the tree, tokens joined by single spaces:

* a constituent opens with ``(LABEL`` (label and bracket in one token: ``(S``, ``(NP``);
* each word is a *slot token* (``SlotToken``): the placeholder ``XX`` (its POS
  tag dropped, as Vinyals did; the default), the word itself (a lexicalized
  target: the decoder then sees which word it has reached, instead of counting
  placeholders), or its POS tag as a self-closing opener followed by the word
  (``(DT the``: the tag is predicted and the word keeps the decoder in step);
* a constituent closes with ``)``, or, with ``labelled_closers=True``, ``)LABEL``
  as in Vinyals' paper.

    source: John has a dog .
    target: (S (NP XX ) (VP XX (NP XX XX ) ) XX )
    tagged: (S (NP (NNP John ) (VP (VBZ has (NP (DT a (NN dog ) ) (. . )

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
open depth, and whether the last token was an opener (with tagged words a
fourth: whether it was a tag, which only its word may follow and which every
word needs). ``allowed_kinds`` maps them (NumPy arrays, any shape) to which
token kinds may come next, so that only sequences with exactly one root
holding all the words and no empty constituent can be produced;
``token_kinds`` classifies a vocabulary so the per-kind mask becomes a per-token logits mask by a gather. With labelled
closers any closer passes the mask (its label is not checked against the open
constituent); ``delinearize`` then closes the innermost one.
"""
from __future__ import annotations

import enum
from typing import Collection, Sequence

import numpy as np

from t2t_lite.contracts.reserved_ids import EOS_ID, PAD_ID
from t2t_lite.parsing.trees import PLACEHOLDER_TAG, PTB_POS_TAGS, ROOT_LABEL, Tree, replace_tags

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
    TAG = 5    # ``(DT``: a POS tag before its word (``SlotToken.POS``)


NUM_KINDS = len(Kind)


class SlotToken(enum.Enum):
    """What a word's target token is: one of these per linearization, never a mix."""

    PLACEHOLDER = "placeholder"   # XX
    POS = "pos"                   # its POS tag as ``(DT``, then the word itself
    WORD = "word"                 # the word itself (lexicalized targets)

    @property
    def spells_words(self) -> bool:
        """Whether targets spell the words (decoding may put only the next input word there)."""
        return self is not SlotToken.PLACEHOLDER

    @property
    def tokens_per_word(self) -> int:
        """Target tokens a word takes: its tag and itself with ``POS``, else one."""
        return 2 if self is SlotToken.POS else 1


def linearize(tree: Tree, slot_token: SlotToken = SlotToken.PLACEHOLDER,
              labelled_closers: bool = False) -> list[str]:
    """The target tokens of ``tree``, e.g. ``["(S", "(NP", "XX", ")", ...]``."""
    tokens: list[str] = []

    def walk(node: Tree) -> None:
        if node.is_preterminal:
            if slot_token is SlotToken.POS:
                tokens.append(OPEN + node.label)
            tokens.append(node.word if slot_token.spells_words else WORD_SLOT)
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
               tags: Collection[str] = PTB_POS_TAGS) -> Kind:
    """The kind of one target token (EOS is an id, not a token string, so never returned).

    A word slot is filled by ``XX`` (placeholders) or by any token that is not a
    bracket (targets that spell the words). With ``SlotToken.POS``, an opener of
    one of ``tags`` (``(DT``) is the tag of the word that follows it.
    """
    if token.startswith(OPEN):
        if len(token) == len(OPEN):
            return Kind.OTHER
        tagged = slot_token is SlotToken.POS and token[len(OPEN):] in tags
        return Kind.TAG if tagged else Kind.OPEN
    if token.startswith(CLOSE):
        return Kind.CLOSE
    if token == WORD_SLOT or (slot_token.spells_words and token):
        return Kind.WORD
    return Kind.OTHER


def delinearize(tokens: Sequence[str] | str, words: Sequence[str],
                slot_token: SlotToken = SlotToken.PLACEHOLDER) -> Tree:
    """A well-formed tree over exactly ``words`` from a (possibly malformed) target sequence.

    Word slots take ``words`` in order whatever their token (a model's copy of a
    word may be ``<UNK>``); with ``SlotToken.POS`` a word takes the tag just
    before it (``XX`` if none)."""
    if not words:
        raise ValueError("delinearize needs at least one word: an empty sentence has no tree")
    if isinstance(tokens, str):
        tokens = tokens.split()
    top: list[Tree] = []          # finished top-level pieces
    stack: list[Tree] = []        # open constituents, innermost last
    placed = 0
    tag = WORD_SLOT               # the tag just read, for the word that follows it

    def attach(node: Tree) -> None:
        (stack[-1].children if stack else top).append(node)

    for token in tokens:
        kind = token_kind(token, slot_token)
        last_tag, tag = tag, WORD_SLOT
        if kind is Kind.TAG:
            tag = token[len(OPEN):]
        elif kind is Kind.OPEN:
            stack.append(Tree(token[len(OPEN):]))
        elif kind is Kind.WORD and placed < len(words):
            attach(Tree.leaf(last_tag, words[placed]))
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
                tags: Collection[str] = PTB_POS_TAGS) -> np.ndarray:
    """int32[V]: the ``Kind`` of each vocabulary id (``vocab[i]`` is the token of id i);
    ``tags``: the POS tags of ``SlotToken.POS`` (their openers are tags)."""
    kinds = np.array([token_kind(token, slot_token, tags) for token in vocab], dtype=np.int32)
    kinds[pad_id] = Kind.OTHER
    kinds[eos_id] = Kind.EOS
    return kinds


def allowed_kinds(words_placed, open_depth, last_was_open, num_words, last_was_tag=False,
                  tagged: bool = False) -> np.ndarray:
    """bool[..., NUM_KINDS]: which kinds may come next, for NumPy-broadcastable state arrays.

    An opener needs a word left to fill it and, at depth 0, must be the root
    (nothing placed yet); a word needs an open constituent; a closer needs
    something open that is not empty, and may close the root only once all
    words are placed; EOS needs every word placed and every bracket closed.
    With ``tagged`` words (``SlotToken.POS``), a tag goes where a word could, a
    word needs a tag just before it, and a tag allows nothing but its word.
    Every prefix these rules allow can be completed, so decoding never stalls.
    """
    words_placed, open_depth, last_was_open, num_words, last_was_tag = np.broadcast_arrays(
        np.asarray(words_placed), np.asarray(open_depth), np.asarray(last_was_open, dtype=bool),
        np.asarray(num_words), np.asarray(last_was_tag, dtype=bool))
    words_left = words_placed < num_words
    is_open = open_depth > 0
    free = ~last_was_tag
    mask = np.zeros(words_placed.shape + (NUM_KINDS,), dtype=bool)
    mask[..., Kind.OPEN] = free & words_left & (is_open | (words_placed == 0))
    mask[..., Kind.WORD] = words_left & is_open & (last_was_tag if tagged else free)
    mask[..., Kind.CLOSE] = free & is_open & ~last_was_open & ((open_depth > 1) | ~words_left)
    mask[..., Kind.EOS] = free & ~is_open & ~words_left
    mask[..., Kind.TAG] = tagged & free & words_left & is_open
    return mask


def next_state(words_placed, open_depth, kind
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(words_placed, open_depth, last_was_open, last_was_tag) after emitting tokens
    of ``kind`` (arrays)."""
    kind = np.asarray(kind)
    return (np.asarray(words_placed) + (kind == Kind.WORD),
            np.asarray(open_depth) + (kind == Kind.OPEN) - (kind == Kind.CLOSE),
            kind == Kind.OPEN, kind == Kind.TAG)


class LinearizationConstraint:
    """The allowed next token ids for one sentence, tracked token by token.

    ``vocab[i]`` is the token string of id ``i``; ``eos_id`` and ``pad_id`` are
    the target encoder's EOS and PAD ids. The beam search uses the same rules batched through
    ``token_kinds``, ``allowed_kinds`` and ``next_state``.
    """

    def __init__(self, num_words: int, vocab: Sequence[str], eos_id: int = EOS_ID,
                 pad_id: int = PAD_ID, slot_token: SlotToken = SlotToken.PLACEHOLDER,
                 tags: Collection[str] = PTB_POS_TAGS):
        self.num_words = num_words
        self.kinds = token_kinds(vocab, eos_id, pad_id, slot_token, tags)
        self.tagged = slot_token is SlotToken.POS
        self.words_placed = 0
        self.open_depth = 0
        self.last_was_open = False
        self.last_was_tag = False

    def allowed_ids(self) -> np.ndarray:
        """bool[V]: the ids that may come next."""
        kind_mask = allowed_kinds(self.words_placed, self.open_depth, self.last_was_open,
                                  self.num_words, self.last_was_tag, self.tagged)
        return kind_mask[self.kinds]

    def update(self, token_id: int) -> None:
        """Advances past ``token_id``; a disallowed id is a ValueError (a decoder bug)."""
        if not self.allowed_ids()[token_id]:
            raise ValueError(f"token id {token_id} ({Kind(self.kinds[token_id]).name}) is not "
                             f"allowed after {self.words_placed} of {self.num_words} words at "
                             f"depth {self.open_depth}")
        placed, depth, last_open, last_tag = next_state(self.words_placed, self.open_depth,
                                                        self.kinds[token_id])
        self.words_placed, self.open_depth = int(placed), int(depth)
        self.last_was_open, self.last_was_tag = bool(last_open), bool(last_tag)
