"""Labelled bracketing scores, compatible with EVALB run with COLLINS.prm.

The conventions (EVALB's README and COLLINS.prm), for each gold/test pair:

* ``-NONE-`` elements are removed, with every constituent left empty by that,
  and function tags are stripped (``NP-SBJ-1`` -> ``NP``): ``trees.preprocess``.
* The root bracket is ignored: a bracket labelled ``TOP`` (DELETE_LABEL TOP)
  or unlabelled (the treebank's outer ``( ... )``) is not scored.
* Punctuation words are deleted: words whose POS is one of ``, : `` '' .``
  (DELETE_LABEL). Spans are counted over the remaining words, and a bracket
  that covers no remaining word is not scored (so ``(NP (, ,))`` vanishes).
  Which words are punctuation is decided by the GOLD tree's tags, for the test
  tree too: a parser that drops POS tags (every tag ``XX``) is scored on the
  same words as the gold, as EVALB scores a tagger that gets punctuation right.
* ADVP and PRT are the same label (EQ_LABEL ADVP PRT).
* Brackets are multisets: n identical gold brackets (a unary chain such as
  ``(NP (NP ...))``) and m identical test brackets match min(n, m) times.
* Sentence length, for the ``len <= 40`` figures, counts every word except
  ``-NONE-`` elements (DELETE_LABEL_FOR_LENGTH -NONE-): punctuation counts.
* Tagging accuracy is over the non-punctuation words, and only over sentences
  whose test tree carries POS tags (not all ``XX``); None when no test tree does.
* Complete match: a sentence whose matched, gold and test bracket counts are
  all equal. Crossing: test brackets that cross at least one gold bracket.

Two deliberate differences from EVALB. The few PTB labels with alternatives
(``ADVP|PRT``) are scored as their first alternative, as ``preprocess`` reads
them, where EVALB keeps the whole string. And unlike EVALB, which skips a sentence whose words differ and carries on, a
mismatch in sentence count or words is an error naming the (1-based) sentence:
a score over silently skipped sentences is not comparable. Figures are percent.
"""
from __future__ import annotations

import collections
import dataclasses
from typing import Sequence

import numpy as np

from t2t_lite.parsing.trees import PLACEHOLDER_TAG, ROOT_LABEL, Tree, preprocess

PUNCTUATION_TAGS = frozenset({",", ":", "``", "''", "."})
IGNORED_LABELS = frozenset({ROOT_LABEL, ""})
EQUIVALENT_LABELS = {"PRT": "ADVP"}
DEFAULT_MAX_LENGTH = 40

Bracket = tuple[str, int, int]   # (label, first word, one past the last word) over kept words


@dataclasses.dataclass(frozen=True)
class SentenceCounts:
    """The EVALB counts of one sentence."""

    length: int          # words except -NONE- elements; decides the len <= 40 figures
    gold_brackets: int
    test_brackets: int
    matched: int
    crossing: int
    tagged_words: int    # non-punctuation words, when the test tree has POS tags; else 0
    correct_tags: int


@dataclasses.dataclass
class EvalbTotals:
    """Counts summed over sentences, and the EVALB figures (percent) derived from them."""

    sentences: int = 0
    gold_brackets: int = 0
    test_brackets: int = 0
    matched: int = 0
    complete_matches: int = 0
    crossing: int = 0
    tagged_words: int = 0
    correct_tags: int = 0

    def add(self, counts: SentenceCounts) -> None:
        self.sentences += 1
        self.gold_brackets += counts.gold_brackets
        self.test_brackets += counts.test_brackets
        self.matched += counts.matched
        self.complete_matches += (counts.matched == counts.gold_brackets == counts.test_brackets)
        self.crossing += counts.crossing
        self.tagged_words += counts.tagged_words
        self.correct_tags += counts.correct_tags

    @property
    def recall(self) -> float:
        return _percent(self.matched, self.gold_brackets)

    @property
    def precision(self) -> float:
        return _percent(self.matched, self.test_brackets)

    @property
    def f1(self) -> float:
        total = self.precision + self.recall
        return 2 * self.precision * self.recall / total if total else 0.0

    @property
    def exact_match(self) -> float:
        return _percent(self.complete_matches, self.sentences)

    @property
    def average_crossing(self) -> float:
        return self.crossing / self.sentences if self.sentences else 0.0

    @property
    def tagging_accuracy(self) -> float | None:
        return _percent(self.correct_tags, self.tagged_words) if self.tagged_words else None


@dataclasses.dataclass
class EvalbResult:
    """Totals over all sentences and over those of length <= ``max_length``."""

    max_length: int
    all: EvalbTotals
    short: EvalbTotals
    sentences: list[SentenceCounts]


def _percent(part: int, whole: int) -> float:
    return 100.0 * part / whole if whole else 0.0


def brackets(tree: Tree, kept: Sequence[bool]) -> list[Bracket]:
    """The scored brackets of a preprocessed tree; ``kept[i]`` is False for deleted word i."""
    found: list[Bracket] = []
    word_index = 0
    kept_so_far = 0

    def walk(node: Tree) -> None:
        nonlocal word_index, kept_so_far
        if node.is_preterminal:
            kept_so_far += kept[word_index]
            word_index += 1
            return
        start = kept_so_far
        for child in node.children:
            walk(child)
        if node.label not in IGNORED_LABELS and kept_so_far > start:
            found.append((EQUIVALENT_LABELS.get(node.label, node.label), start, kept_so_far))

    walk(tree)
    return found


def count_crossing(gold: Sequence[Bracket], test: Sequence[Bracket]) -> int:
    """How many test brackets cross (overlap without nesting) at least one gold bracket."""
    if not gold or not test:
        return 0
    gold_start, gold_end = np.array([b[1:] for b in gold]).T[:, :, None]
    test_start, test_end = np.array([b[1:] for b in test]).T[:, None, :]
    crosses = (((gold_start < test_start) & (test_start < gold_end) & (gold_end < test_end))
               | ((test_start < gold_start) & (gold_start < test_end) & (test_end < gold_end)))
    return int(crosses.any(axis=0).sum())


def score_sentence(gold: Tree, test: Tree, sentence: int = 1) -> SentenceCounts:
    """EVALB counts for one pair of raw or preprocessed trees; ``sentence`` (1-based) names errors."""
    gold_tree, test_tree = preprocess(gold), preprocess(test)
    if gold_tree is None or test_tree is None:
        which = "gold" if gold_tree is None else "test"
        raise ValueError(f"sentence {sentence}: the {which} tree has no words once -NONE- "
                         "elements are removed")
    gold_words, test_words = gold_tree.words(), test_tree.words()
    if gold_words != test_words:
        raise ValueError(f"sentence {sentence}: {_word_mismatch(gold_words, test_words)}; "
                         "the test file must parse the gold sentences, in order")
    gold_tags, test_tags = gold_tree.tags(), test_tree.tags()
    kept = [tag not in PUNCTUATION_TAGS for tag in gold_tags]
    gold_brackets = brackets(gold_tree, kept)
    test_brackets = brackets(test_tree, kept)
    matched = sum((collections.Counter(gold_brackets) & collections.Counter(test_brackets)).values())
    has_tags = any(tag != PLACEHOLDER_TAG for tag in test_tags)
    scored_tags = [(g, t) for g, t, keep in zip(gold_tags, test_tags, kept) if keep and has_tags]
    return SentenceCounts(length=len(gold_words), gold_brackets=len(gold_brackets),
                          test_brackets=len(test_brackets), matched=matched,
                          crossing=count_crossing(gold_brackets, test_brackets),
                          tagged_words=len(scored_tags),
                          correct_tags=sum(g == t for g, t in scored_tags))


def _word_mismatch(gold_words: Sequence[str], test_words: Sequence[str]) -> str:
    for index, (gold_word, test_word) in enumerate(zip(gold_words, test_words), start=1):
        if gold_word != test_word:
            return f"word {index} is {gold_word!r} in gold but {test_word!r} in test"
    return f"gold has {len(gold_words)} words but test has {len(test_words)}"


def evalb(gold: Sequence[Tree], test: Sequence[Tree],
          max_length: int = DEFAULT_MAX_LENGTH) -> EvalbResult:
    """Scores ``test`` trees against ``gold`` trees, sentence i against sentence i."""
    if len(gold) != len(test):
        shorter = "test" if len(test) < len(gold) else "gold"
        raise ValueError(f"gold has {len(gold)} trees but test has {len(test)}: sentence "
                         f"{min(len(gold), len(test)) + 1} is missing from {shorter}; both need "
                         "one tree per sentence, in the same order")
    result = EvalbResult(max_length, EvalbTotals(), EvalbTotals(), [])
    for index, (gold_tree, test_tree) in enumerate(zip(gold, test), start=1):
        counts = score_sentence(gold_tree, test_tree, index)
        result.sentences.append(counts)
        result.all.add(counts)
        if counts.length <= max_length:
            result.short.add(counts)
    return result


def format_report(result: EvalbResult) -> str:
    """An EVALB-style summary: both sections, figures to two decimals."""
    lines = []
    for title, totals in (("All", result.all), (f"len<={result.max_length}", result.short)):
        accuracy = totals.tagging_accuracy
        lines += [
            f"-- {title} --",
            f"Number of sentence        = {totals.sentences:6d}",
            f"Bracketing Recall         = {totals.recall:6.2f}",
            f"Bracketing Precision      = {totals.precision:6.2f}",
            f"Bracketing FMeasure       = {totals.f1:6.2f}",
            f"Complete match            = {totals.exact_match:6.2f}",
            f"Average crossing          = {totals.average_crossing:6.2f}",
            "Tagging accuracy          = " + ("   n/a (test trees carry no POS tags)"
                                              if accuracy is None else f"{accuracy:6.2f}"),
            "",
        ]
    return "\n".join(lines)
