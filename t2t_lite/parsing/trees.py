"""Constituency trees: the ``Tree`` type, a Penn Treebank reader, preprocessing, a printer.

Reading. LDC ``.mrg`` files hold one or more bracketed trees, pretty-printed
over many lines, each inside an unlabelled outer bracket::

    ( (S (NP-SBJ (NNP Pierre) (NNP Vinken) ) (VP (MD will) ...) (. .) ))

``parse_trees`` reads any such text (one tree a line works too) and reports a
malformed file (unbalanced brackets, a bracket with no label or no children,
two words in one bracket, no trees at all, brackets nested deeper than
``MAX_DEPTH``) as one ``TreebankFormatError`` naming the file and line. Files
are read strictly (``t2t_lite.data.text_files``; tabs are white space here).

Preprocessing (``preprocess``), the usual setup for parsing experiments:

* drop ``-NONE-`` empty elements (traces, null complementisers) and every
  constituent left with no words by that;
* strip function tags and coindexation from phrase labels: ``NP-SBJ-1`` ->
  ``NP``, ``PP-LOC=2`` -> ``PP``, ``NP=3`` -> ``NP``; the few ambiguous labels
  such as ``ADVP|PRT`` keep their first alternative. POS tags are kept as they
  are (``-LRB-``, ``PRP$``), and so is any label that starts with ``-``;
* remove the unlabelled (or ``TOP``) outer bracket when it wraps a single
  constituent; when it wraps several (or a lone word), it becomes a ``TOP`` root.

Printing. ``str(tree)`` writes a tree on one line, ``(S (NP (DT the) (NN dog)) ...)``,
which ``parse_trees`` reads back and EVALB accepts.

Splits. ``wsj_split_files`` lists the standard WSJ sections of the LDC layout
(train 02-21, dev 22, test 23); ``file_range_files`` lists a file-name range of
a flat folder such as the NLTK sample (``wsj_0001``..``wsj_0159``).
"""
from __future__ import annotations

import dataclasses
import glob
import os
import re
from typing import Iterable, Iterator, Sequence

from t2t_lite.data.text_files import read_utf8_lines

NONE_TAG = "-NONE-"
PLACEHOLDER_TAG = "XX"   # the POS of a word whose tag is unknown (a parser that predicts no POS)
ROOT_LABEL = "TOP"
# The 45 part-of-speech tags of the Penn Treebank (Marcus et al. 1993), punctuation included.
PTB_POS_TAGS = frozenset((
    "CC", "CD", "DT", "EX", "FW", "IN", "JJ", "JJR", "JJS", "LS", "MD", "NN", "NNS", "NNP",
    "NNPS", "PDT", "POS", "PRP", "PRP$", "RB", "RBR", "RBS", "RP", "SYM", "TO", "UH", "VB",
    "VBD", "VBG", "VBN", "VBP", "VBZ", "WDT", "WP", "WP$", "WRB", "#", "$", ".", ",", ":",
    "-LRB-", "-RRB-", "``", "''"))
WSJ_SECTIONS = {"train": range(2, 22), "dev": range(22, 23), "test": range(23, 24)}
# Reading is iterative, but printing, preprocessing, linearizing and EVALB walk a
# tree recursively, a Python frame or two a level, under Python's recursion limit
# (1000): deeper trees are refused as they are read. The Penn Treebank's deepest
# is under 40 levels.
MAX_DEPTH = 200

_TOKEN = re.compile(r"\(|\)|[^\s()]+")


class TreebankFormatError(ValueError):
    """A treebank file that cannot be read; the message names the file and line."""


@dataclasses.dataclass
class Tree:
    """A constituent, or a preterminal (POS tag over one word) when ``word`` is set.

    ``label`` is the phrase label, or the POS tag of a preterminal. Trees compare
    equal when labels, words and structure are all equal.
    """

    label: str
    children: list[Tree] = dataclasses.field(default_factory=list)
    word: str | None = None

    @classmethod
    def leaf(cls, tag: str, word: str) -> Tree:
        """A preterminal ``(tag word)``."""
        return cls(tag, [], word)

    @property
    def is_preterminal(self) -> bool:
        return self.word is not None

    def preterminals(self) -> list[Tree]:
        """The preterminals left to right."""
        found: list[Tree] = []
        stack = [self]
        while stack:
            node = stack.pop()
            if node.is_preterminal:
                found.append(node)
            else:
                stack.extend(reversed(node.children))
        return found

    def words(self) -> list[str]:
        return [leaf.word for leaf in self.preterminals()]

    def tags(self) -> list[str]:
        return [leaf.label for leaf in self.preterminals()]

    def __str__(self) -> str:
        if self.is_preterminal:
            return f"({self.label} {self.word})"
        return "(" + " ".join([self.label] + [str(child) for child in self.children]) + ")"


def parse_trees(text: str, source: str = "<string>") -> list[Tree]:
    """All trees in ``text``, unmodified (outer bracket, ``-NONE-`` and tags kept)."""
    trees = [tree for tree, _ in _parse_with_lines(text, source)]
    if not trees:
        raise TreebankFormatError(f"{source}: no trees found; expected bracketed trees such as "
                                  "'( (S (NP (NN Dogs)) (VP (VBP bark))) )'")
    return trees


def parse_tree_line(line: str, source: str, number: int) -> Tree:
    """The single tree on line ``number`` of ``source``; errors name the source and line."""
    if not line.strip():
        raise TreebankFormatError(f"{source}:{number}: empty line; expected one bracketed tree")
    try:
        trees = parse_trees(line, source)
    except TreebankFormatError as error:
        # parse_trees counts lines within ``line`` (always 1): report the real one.
        raise TreebankFormatError(
            str(error).replace(f"{source}:1:", f"{source}:{number}:", 1)) from None
    if len(trees) != 1:
        raise TreebankFormatError(f"{source}:{number}: {len(trees)} trees on one line; "
                                  "expected one tree a line")
    return trees[0]


def _parse_with_lines(text: str, source: str) -> Iterator[tuple[Tree, int]]:
    """Yields (tree, line of its opening bracket); raises on any malformed bracket."""
    line = 1
    position = 0
    stack: list[tuple[Tree, int]] = []   # open constituents with the line they start on
    expect_label = False
    for match in _TOKEN.finditer(text):
        line += text.count("\n", position, match.start())
        position = match.start()
        token = match.group()
        if token == "(":
            if len(stack) == MAX_DEPTH:
                raise TreebankFormatError(f"{source}:{line}: brackets nested more than "
                                          f"{MAX_DEPTH} deep; is this a parse tree?")
            stack.append((Tree(""), line))
            expect_label = True
            continue
        if token == ")":
            if not stack:
                raise TreebankFormatError(f"{source}:{line}: unbalanced brackets: ')' closes nothing")
            node, start_line = stack.pop()
            if not node.children and node.word is None:
                raise TreebankFormatError(
                    f"{source}:{start_line}: empty bracket '({node.label})' has no word or children")
            if stack:
                parent = stack[-1][0]
                if parent.word is not None:
                    raise TreebankFormatError(
                        f"{source}:{line}: bracket '{parent.label}' holds both a word and a constituent")
                parent.children.append(node)
            else:
                yield node, start_line
        elif not stack:
            raise TreebankFormatError(f"{source}:{line}: text '{token}' outside any bracket")
        else:
            node = stack[-1][0]
            if expect_label:
                node.label = token
            elif node.children or node.word is not None:
                raise TreebankFormatError(f"{source}:{line}: bracket '{node.label}' has more than one "
                                          f"word or mixes a word with constituents at '{token}'")
            else:
                node.word = token
        expect_label = False
    if stack:
        raise TreebankFormatError(f"{source}:{stack[0][1]}: unbalanced brackets: the '(' opened "
                                  "here is never closed")


def strip_function_tag(label: str) -> str:
    """``NP-SBJ-1`` -> ``NP``, ``PP-LOC=2`` -> ``PP``, ``ADVP|PRT`` -> ``ADVP``; ``-NONE-`` kept."""
    if label.startswith("-"):
        return label
    return re.split(r"[-=|]", label, maxsplit=1)[0]


def preprocess(tree: Tree) -> Tree | None:
    """A copy without ``-NONE-`` elements, function tags or outer bracket; None if no words remain."""
    cleaned = _remove_empty_and_tags(tree)
    if cleaned is None:
        return None
    if cleaned.is_preterminal:   # a one-word tree with no phrase: give it a root like any other
        return Tree(ROOT_LABEL, [cleaned])
    if cleaned.label in ("", ROOT_LABEL):
        if len(cleaned.children) == 1 and not cleaned.children[0].is_preterminal:
            return cleaned.children[0]
        cleaned.label = ROOT_LABEL
    return cleaned


def _remove_empty_and_tags(tree: Tree) -> Tree | None:
    if tree.is_preterminal:
        return None if tree.label == NONE_TAG else Tree.leaf(tree.label, tree.word)
    children = [kept for kept in map(_remove_empty_and_tags, tree.children) if kept is not None]
    if not children:
        return None
    return Tree(strip_function_tag(tree.label), children)


def read_tree_file(path: str) -> list[Tree]:
    """Every tree of one file, unmodified (for scoring: EVALB does its own preprocessing)."""
    return parse_trees("\n".join(read_utf8_lines(path, allow_tab=True)), path)


def read_treebank(paths: Iterable[str]) -> list[Tree]:
    """Reads and preprocesses every tree of ``paths``, in order."""
    trees: list[Tree] = []
    for path in paths:
        found = 0
        for raw, line in _parse_with_lines("\n".join(read_utf8_lines(path, allow_tab=True)),
                                           path):
            tree = preprocess(raw)
            if tree is None:
                raise TreebankFormatError(f"{path}:{line}: tree has no words once -NONE- empty "
                                          "elements are removed")
            trees.append(tree)
            found += 1
        if not found:
            raise TreebankFormatError(f"{path}: no trees found; is this a Penn Treebank .mrg file?")
    return trees


def wsj_split_files(ptb_root: str, split: str) -> list[str]:
    """The ``.mrg`` files of a standard WSJ split (train 02-21, dev 22, test 23).

    ``ptb_root`` is the LDC release folder (holding ``parsed/mrg/wsj``) or the
    ``wsj`` folder itself (holding the section folders ``00`` .. ``24``).
    """
    if split not in WSJ_SECTIONS:
        raise ValueError(f"unknown split {split!r}; expected one of {sorted(WSJ_SECTIONS)}")
    wsj_dir = next((d for d in (os.path.join(ptb_root, "parsed", "mrg", "wsj"), ptb_root)
                    if os.path.isdir(os.path.join(d, "02"))), None)
    if wsj_dir is None:
        raise FileNotFoundError(f"no WSJ sections under {ptb_root}: expected "
                                f"{os.path.join(ptb_root, 'parsed', 'mrg', 'wsj', '02')}/wsj_02NN.mrg")
    paths = [path for section in WSJ_SECTIONS[split]
             for path in sorted(glob.glob(os.path.join(wsj_dir, f"{section:02d}", "wsj_*.mrg")))]
    if not paths:
        raise FileNotFoundError(f"no .mrg files for the {split} sections "
                                f"{list(WSJ_SECTIONS[split])} under {wsj_dir}")
    return paths


def file_range_files(folder: str, first: str, last: str) -> list[str]:
    """The ``.mrg`` files of ``folder`` whose names sort in [first, last], e.g. wsj_0001..wsj_0159."""
    names = sorted(name for name in os.listdir(folder)
                   if name.endswith(".mrg") and first <= name[:-len(".mrg")] <= last)
    if not names:
        raise FileNotFoundError(f"no .mrg files named {first}.mrg .. {last}.mrg in {folder}")
    return [os.path.join(folder, name) for name in names]


def replace_tags(tree: Tree, tags: Sequence[str]) -> Tree:
    """A copy of ``tree`` with its POS tags replaced by ``tags``, left to right."""
    if len(tags) != len(tree.preterminals()):
        raise ValueError(f"got {len(tags)} tags for a tree of {len(tree.preterminals())} words")
    remaining = iter(tags)

    def copy(node: Tree) -> Tree:
        if node.is_preterminal:
            return Tree.leaf(next(remaining), node.word)
        return Tree(node.label, [copy(child) for child in node.children])

    return copy(tree)
