"""Constituency parsing from the user's own trees: ``parsing_files``.

The registered parsing problems' recipe (``problems/parsing.py``: trees
preprocessed, linearized, a word-level vocabulary, decoding constrained to
well-formed trees with one slot per input word) on trees the user names, as
data options (``t2t_lite/data/data_options.py``)::

    --data_options='train=treebank/train,dev=treebank/dev,linearization=lexical'

Each split (``train`` and ``dev`` required, ``test`` optional) is a folder (its
``*.mrg`` files), a glob, or one file: ``.mrg`` files are read as the Penn
Treebank's format (several pretty-printed trees a file), any other as one
bracketed tree a line. ``SPLIT_range=FIRST..LAST`` keeps the files whose names
(without ``.mrg``) sort in [FIRST, LAST], e.g. ``train_range=wsj_0001..wsj_0149``
for a tuning slice. ``linearization``: ``xx`` (tags as XX), ``lexical`` (the
word in its slot) or ``tagged`` (its POS tag, then the word); ``closers``:
``bare`` (``)``) or ``labelled`` (``)NP``, Vinyals et al.'s form); ``vocab_size``
counts every id of the word-level vocabulary.
"""
from __future__ import annotations

import glob
import itertools
import os
from typing import Iterator

from t2t_lite.data import data_options
from t2t_lite.data.problem import SPLITS
from t2t_lite.hparam import HParams, HParamsError, at_least, one_of
from t2t_lite.parsing.linearize import SlotToken
from t2t_lite.parsing.trees import Tree, read_treebank
from t2t_lite.problems.parsing import ParsingProblem, read_tree_lines
from t2t_lite.registry import register_problem

LINEARIZATIONS = {"xx": SlotToken.PLACEHOLDER, "lexical": SlotToken.WORD, "tagged": SlotToken.POS}
CLOSERS = ("bare", "labelled")  # ``)`` or ``)NP``
_TREEBANK_SUFFIX = ".mrg"


def parsing_options() -> HParams:
    options = HParams(linearization=one_of(*LINEARIZATIONS), closers=one_of(*CLOSERS),
                      vocab_size=at_least(8, 2**14))
    for split in SPLITS:
        options.extend(**{split: "", f"{split}_range": ""})
    return options


def _tree_files(pattern: str, key: str) -> list[str]:
    """The files a split's value names: a folder's ``.mrg`` files, a glob's matches, a file."""
    if os.path.isdir(pattern):
        found = glob.glob(os.path.join(pattern, "*" + _TREEBANK_SUFFIX))
    elif glob.has_magic(pattern):
        found = [path for path in glob.glob(pattern) if os.path.isfile(path)]
    else:
        if not os.path.exists(pattern):
            raise FileNotFoundError(f"{data_options.SOURCE}: {key}: no such file or "
                                    f"folder: {pattern}")
        found = [pattern]
    if not found:
        raise FileNotFoundError(f"{data_options.SOURCE}: {key}={pattern} names no tree files "
                                f"(a folder of *{_TREEBANK_SUFFIX}, a glob or a file)")
    return sorted(found)


def _in_range(files: list[str], span: str, key: str) -> list[str]:
    first, sep, last = span.partition("..")
    if not (sep and first and last):
        raise HParamsError(f"{data_options.SOURCE}: {key}={span!r} is not FIRST..LAST "
                           "(file names without .mrg, e.g. wsj_0001..wsj_0149)")
    kept = [path for path in files
            if first <= os.path.basename(path).removesuffix(_TREEBANK_SUFFIX) <= last]
    if not kept:
        raise FileNotFoundError(f"{data_options.SOURCE}: {key}={span}: none of the "
                                f"{len(files)} files is named in that range")
    return kept


def _read_trees(path: str) -> Iterator[Tree]:
    if path.endswith(_TREEBANK_SUFFIX):
        return iter(read_treebank([path]))
    return read_tree_lines(path)


@register_problem
class ParsingFiles(data_options.RecordedOptions, ParsingProblem):
    """Parsing the user's trees (see the module docstring)."""

    def data_options(self) -> HParams:
        return parsing_options()

    @property
    def slot_token(self) -> SlotToken:  # type: ignore[override]
        return LINEARIZATIONS[self.current().linearization]

    @property
    def labelled_closers(self) -> bool:  # type: ignore[override]
        return self.current().closers == "labelled"

    @property
    def vocab_size_limit(self) -> int:  # type: ignore[override]
        return self.current().vocab_size

    def resolve_data_options(self, options: HParams, tmp_dir: str) -> HParams:
        for split in SPLITS:
            value, span = getattr(options, split), getattr(options, f"{split}_range")
            if not value:
                if split != "test":
                    raise HParamsError(f"{data_options.SOURCE}: no {split} trees; give "
                                       f"{split}=FOLDER, GLOB or FILE")
                if span:
                    raise HParamsError(f"{data_options.SOURCE}: {split}_range without "
                                       f"{split}")
                continue
            setattr(options, split, os.path.abspath(value))
            self.split_files(options, split)  # checks that it names files
        self._current = options
        return options

    def split_files(self, options: HParams, split: str) -> list[str]:
        files = _tree_files(getattr(options, split), split)
        span = getattr(options, f"{split}_range")
        return _in_range(files, span, f"{split}_range") if span else files

    def check_data_inputs(self, options: HParams) -> None:
        for split in self.generated_splits_of(options):
            if not any(True for _ in self.trees_of(options, split)):
                raise ValueError(f"{data_options.SOURCE}: {split} holds no trees")

    def trees_of(self, options: HParams, split: str) -> Iterator[Tree]:
        return itertools.chain.from_iterable(
            _read_trees(path) for path in self.split_files(options, split))

    def generated_splits_of(self, options: HParams) -> tuple[str, ...]:
        return tuple(split for split in SPLITS if getattr(options, split))

    def generated_splits(self, data_dir: str) -> tuple[str, ...]:
        return self.generated_splits_of(self.options(data_dir))

    def split_trees(self, tmp_dir: str, split: str) -> Iterator[Tree]:
        if split not in self.generated_splits_of(self.current()):
            raise FileNotFoundError(f"problem {self.name} has no {split} trees: none were "
                                    "given in --data_options")
        return self.trees_of(self.current(), split)


    def feature_encoders(self, data_dir: str) -> dict:
        self.options(data_dir)
        return super().feature_encoders(data_dir)

    def generate_data(self, data_dir: str, tmp_dir: str) -> None:
        self.options(data_dir)
        super().generate_data(data_dir, tmp_dir)

