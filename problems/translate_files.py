"""Translation from the user's own files: ``translate_files`` and ``text2text_tmpdir``.

No Problem subclass to write: the files and the vocabulary are data options
(``t2t_lite/data/data_options.py``), given once to ``t2t-datagen`` (or
``t2t-trainer --generate_data``) and recorded in ``--data_dir``::

    --data_options='train=corpus/train,dev=corpus/valid,test=corpus/test,
                    source_lang=en,target_lang=de,vocab_size=8000'

Each split is one of (as in fairseq's ``--trainpref`` / ``--source-lang``, or
OpenNMT-tf's ``source`` / ``target`` files):

* a prefix (``train=PREFIX``): ``PREFIX.SOURCE_LANG`` and ``PREFIX.TARGET_LANG``,
  each plain or ``.gz`` (the one that exists);
* two files (``train_source=FILE,train_target=FILE``), plain or ``.gz``;
* one file of pairs (``train_pairs=FILE.tsv``), ``SOURCE<TAB>TARGET`` a line.

``train`` and ``dev`` are required, ``test`` optional. Paths are stored absolute.
Up to three more training corpora (``train2`` .. ``train4``), each with its share of
the examples and a tag, are ``training_corpora.py``'s.

The vocabulary is a sentencepiece model (``vocab_type`` bpe or unigram,
``vocab_size``, ``character_coverage``, ``vocab_sample``: a seeded sample of
that many sentences, 1,000,000 by default as the WMT problems take, so that
datagen's memory stays flat as the files grow; 0 = all), trained as the registered translation problems train theirs
(``TranslateProblem``: both languages' training sentences, in the languages'
sorted order), or the user's own model (``vocab_model``) with its special pieces
moved to the reserved ids. ``shared_vocab=false`` trains one model per language
(``source_vocab_model`` / ``target_vocab_model`` to bring one's own): the inputs
then have an encoder, and so an embedding, of their own.

``text2text_tmpdir`` is tensor2tensor's problem of the same name: the files are
``inputs.train.txt``, ``targets.train.txt``, ``inputs.eval.txt`` and
``targets.eval.txt`` in ``--tmp_dir``; the vocabulary options are the same.
"""
from __future__ import annotations

import os
import re
from typing import Iterator

from t2t_lite import registry
from t2t_lite.data import data_options
from t2t_lite.data.alignment_links import ALIGNMENTS, parse_pharaoh
from t2t_lite.data.encoders import TextEncoder
from t2t_lite.data.problem import SPLITS
from t2t_lite.data.subword import DEFAULT_CHARACTER_COVERAGE, MODEL_TYPES, SubwordTextEncoder
from t2t_lite.data.text_files import iter_utf8_lines
from t2t_lite.data.tfrecords import CORPUS
from t2t_lite.hparam import HParams, HParamsError, Range, at_least, off_or_above, one_of
from t2t_lite.problems.training_corpora import (CORPORA, Corpus, add_corpus_options,
                                                check_corpora, tags, training_corpora)
from t2t_lite.problems.translate import SUBWORD_MODEL_SUFFIX, TranslateProblem, one_line

SIDES = ("source", "target")
VOCAB_SAMPLE = 1_000_000  # sentences the vocabulary trains on (the WMT problems' sample)
REQUIRED_SPLITS = ("train", "dev")
_LANGUAGE = re.compile(r"^[A-Za-z][A-Za-z0-9_-]*$")
# Keys that train a vocabulary: given with a model of the user's they would do nothing.
_TRAINING_KEYS = ("vocab_type", "vocab_size", "character_coverage", "vocab_sample")


def vocabulary_options() -> HParams:
    """The vocabulary keys every files problem takes."""
    return HParams(
        vocab_type=one_of(*MODEL_TYPES), vocab_size=at_least(3, 8000),
        character_coverage=Range(DEFAULT_CHARACTER_COVERAGE, lambda v: 0 < v <= 1, "in (0, 1]"),
        vocab_sample=off_or_above(100, VOCAB_SAMPLE), shared_vocab=True,
        vocab_model="", source_vocab_model="", target_vocab_model="")


def translate_options() -> HParams:
    options = HParams(source_lang="", target_lang="")
    for split in SPLITS:
        options.extend(**{split: "", f"{split}_source": "", f"{split}_target": "",
                          f"{split}_pairs": ""})
    return _with_vocabulary(add_corpus_options(options))


def _with_vocabulary(options: HParams) -> HParams:
    vocabulary = vocabulary_options()
    for key in vocabulary:
        options.add_hparam(key, vocabulary.range_of(key) or vocabulary.values()[key])
    return options


def _absolute(path: str, key: str) -> str:
    if not os.path.exists(path):
        raise FileNotFoundError(f"{data_options.SOURCE}: {key}: no such file: {path}")
    if os.path.isdir(path):
        raise IsADirectoryError(f"{data_options.SOURCE}: {key}: {path} is a folder; "
                                "expected a file")
    return os.path.abspath(path)


def _prefixed_file(prefix: str, language: str, key: str) -> str:
    """``PREFIX.LANG`` or ``PREFIX.LANG.gz``: the one that exists."""
    found = [path for path in (f"{prefix}.{language}", f"{prefix}.{language}.gz")
             if os.path.isfile(path)]
    if len(found) != 1:
        what = "both" if found else "neither"
        raise FileNotFoundError(f"{data_options.SOURCE}: {key}={prefix}: {what} of "
                                f"{prefix}.{language} and {prefix}.{language}.gz exist; "
                                f"name the file with {key}_source / {key}_target")
    return os.path.abspath(found[0])


def _resolve_vocabulary(options: HParams) -> None:
    defaults = vocabulary_options()
    models = (("vocab_model",) if options.shared_vocab
              else ("source_vocab_model", "target_vocab_model"))
    for key in ("vocab_model", "source_vocab_model", "target_vocab_model"):
        if getattr(options, key) and key not in models:
            raise HParamsError(f"{data_options.SOURCE}: {key} goes with shared_vocab="
                               f"{'false' if key != 'vocab_model' else 'true'}")
        if getattr(options, key):
            setattr(options, key, _absolute(getattr(options, key), key))
    if all(getattr(options, key) for key in models):
        changed = [key for key in _TRAINING_KEYS
                   if getattr(options, key) != getattr(defaults, key)]
        if changed:
            raise HParamsError(f"{data_options.SOURCE}: {', '.join(changed)} would train a "
                               "vocabulary, but every vocabulary is a model of yours "
                               f"({', '.join(models)}); leave them out")


class FilesProblem(data_options.RecordedOptions, TranslateProblem):
    """A text-to-text problem whose files and vocabulary are the user's options."""

    def data_options(self) -> HParams:
        return translate_options()

    def split_files(self, options: HParams, split: str, tmp_dir: str) -> None:
        """Resolves ``split``'s files in ``options`` in place, to absolute
        ``SPLIT_source`` / ``SPLIT_target`` or ``SPLIT_pairs`` paths."""
        prefix, pairs = getattr(options, split), getattr(options, f"{split}_pairs")
        sides = [getattr(options, f"{split}_{side}") for side in SIDES]
        forms = [name for name, given in (
            (split, prefix), (f"{split}_pairs", pairs),
            (f"{split}_source/{split}_target", any(sides))) if given]
        if len(forms) > 1:
            raise HParamsError(f"{data_options.SOURCE}: {split} is given twice "
                               f"({' and '.join(forms)}); give one")
        if not forms:
            if split in REQUIRED_SPLITS:
                raise HParamsError(f"{data_options.SOURCE}: no {split} data; give {split}="
                                   f"PREFIX (with source_lang and target_lang), "
                                   f"{split}_source and {split}_target, or {split}_pairs")
            return
        if prefix:
            if not (options.source_lang and options.target_lang):
                raise HParamsError(f"{data_options.SOURCE}: {split}={prefix} needs "
                                   "source_lang and target_lang (the files' suffixes)")
            for side, language in zip(SIDES, (options.source_lang, options.target_lang)):
                setattr(options, f"{split}_{side}", _prefixed_file(prefix, language, split))
            setattr(options, split, "")
        elif pairs:
            setattr(options, f"{split}_pairs", _absolute(pairs, f"{split}_pairs"))
        else:
            for side, path in zip(SIDES, sides):
                if not path:
                    raise HParamsError(f"{data_options.SOURCE}: {split}_{side} is missing "
                                       f"(the other side is given)")
                setattr(options, f"{split}_{side}", _absolute(path, f"{split}_{side}"))

    def resolve_data_options(self, options: HParams, tmp_dir: str) -> HParams:
        for key in ("source_lang", "target_lang"):
            value = getattr(options, key)
            if value and not _LANGUAGE.match(value):
                raise HParamsError(f"{data_options.SOURCE}: {key}={value!r} is not a "
                                   "language code (letters, digits, - and _)")
        if options.source_lang and options.source_lang == options.target_lang:
            raise HParamsError(f"{data_options.SOURCE}: source_lang and target_lang are "
                               f"both {options.source_lang!r}")
        for split in SPLITS + CORPORA[1:]:
            self.split_files(options, split, tmp_dir)
        _resolve_vocabulary(options)
        if "train_weight" in options:  # a problem of several corpora
            check_corpora(options)
            for corpus in training_corpora(options):
                if corpus.alignments:
                    key = f"{corpus.name}_alignments"
                    setattr(options, key, _absolute(corpus.alignments, key))
            own_model, symbols = options.vocab_model or options.source_vocab_model, tags(options)
            if own_model and symbols:  # a tag it cannot hold: refused before any work
                SubwordTextEncoder.adopt(own_model, symbols)
        self._current = options
        return options

    @property
    def source_language(self) -> str:
        return self.current().source_lang or "source"

    @property
    def target_language(self) -> str:
        return self.current().target_lang or "target"

    def has_split(self, options: HParams, split: str) -> bool:
        return any(getattr(options, f"{split}_{kind}") for kind in ("source", "pairs"))

    @property
    def test_sets(self) -> tuple[str, ...]:
        return tuple(s for s in SPLITS if self.has_split(self.current(), s))

    # Reading the files.
    def split_lines(self, options: HParams, split: str) -> Iterator[tuple[str, str]]:
        """``split``'s (source, target) lines, checked: aligned, not empty, a tab in
        each line of a pairs file; errors name FILE:LINE."""
        pairs = options.values().get(f"{split}_pairs", "")
        if pairs:
            number = 0
            for number, line in enumerate(iter_utf8_lines(pairs, allow_tab=True), 1):
                fields = line.split("\t")
                if len(fields) != 2:
                    what = "no tab" if len(fields) == 1 else f"{len(fields) - 1} tabs"
                    raise ValueError(f"{pairs}:{number}: {what}; a pairs file holds "
                                     "SOURCE<TAB>TARGET, one pair a line")
                yield fields[0], fields[1]
            if not number:
                raise ValueError(f"{pairs}:1: the file is empty")
            return
        paths = [getattr(options, f"{split}_{side}") for side in SIDES]
        # A tab is white space within a sentence here (Multi30k's train.de has one).
        lines = [iter_utf8_lines(path, allow_tab=True) for path in paths]
        number = 0
        while True:
            number += 1
            source, target = (next(it, None) for it in lines)
            if source is None and target is None:
                break
            if source is None or target is None:
                short, long_ = (paths[0], paths[1]) if source is None else (paths[1], paths[0])
                raise ValueError(f"{long_}:{number}: {short} ends at line {number - 1}; "
                                 "the two files must be line-aligned")
            yield source, target
        if number == 1:
            raise ValueError(f"{paths[0]}:1: the file is empty")

    def check_data_inputs(self, options: HParams) -> None:
        for split in SPLITS + CORPORA[1:]:
            if self.has_split(options, split):
                for _ in self.split_lines(options, split):
                    pass
        if "train_weight" in options:
            for corpus in training_corpora(options):
                if corpus.alignments:  # read beside its corpus, once more
                    for _ in self.corpus_alignments(options, corpus):
                        pass

    def corpus_alignments(self, options: HParams, corpus: Corpus
                          ) -> Iterator[list[tuple[int, int]]]:
        """Each of ``corpus``'s pairs' word links (none without an alignment file),
        checked: one line a pair, each link within its pair's words; errors name
        FILE:LINE."""
        pairs = self.split_lines(options, corpus.name)
        if not corpus.alignments:
            yield from ([] for _ in pairs)
            return
        number = 0
        for number, line in enumerate(iter_utf8_lines(corpus.alignments, allow_tab=False), 1):
            pair = next(pairs, None)
            if pair is None:
                raise ValueError(f"{corpus.alignments}:{number}: {corpus.name}'s corpus has "
                                 f"{number - 1} pairs; its alignment file holds a line a pair")
            try:
                yield parse_pharaoh(line, len(pair[0].split()), len(pair[1].split()))
            except ValueError as error:
                raise ValueError(f"{corpus.alignments}:{number}: {error}") from None
        if next(pairs, None) is not None:
            raise ValueError(f"{corpus.alignments}:{number + 1}: the file ends at line "
                             f"{number}, before {corpus.name}'s corpus does; it holds a line "
                             "a pair")

    def has_alignments(self, data_dir: str) -> bool:
        options = self.options(data_dir)
        return "train_weight" in options and any(
            corpus.alignments for corpus in training_corpora(options))

    def parallel_texts(self, tmp_dir: str, subset: str) -> Iterator[dict[str, str]]:
        """``subset``'s pairs (train: every training corpus's, in order, untagged)."""
        options = self.current()
        self._check_test_set(subset)
        names = ([corpus.name for corpus in training_corpora(options)] if subset == "train"
                 else [subset])
        for name in names:
            for source, target in self.split_lines(options, name):
                yield {self.source_language: source, self.target_language: target}

    def generate_samples(self, data_dir: str, tmp_dir: str,
                         split: str) -> Iterator[dict[str, str]]:
        """The split's samples; a training corpus's sources begin with its tag, and
        with several corpora each sample says its corpus (``tfrecords.CORPUS``)."""
        corpora = training_corpora(self.current()) if split == "train" else []
        if not any(corpus.tag or corpus.alignments for corpus in corpora) and len(corpora) < 2:
            yield from super().generate_samples(data_dir, tmp_dir, split)
            return
        aligned = any(corpus.alignments for corpus in corpora)
        for index, corpus in enumerate(corpora):
            shift = len(corpus.tag.split())  # the tag is the sources' first word
            for (source, target), links in zip(self.split_lines(self.current(), corpus.name),
                                               self.corpus_alignments(self.current(), corpus)):
                sample = {"inputs": one_line(f"{corpus.tag} {source}" if corpus.tag else source),
                          "targets": one_line(target)}
                if len(corpora) > 1:
                    sample[CORPUS] = index
                if aligned:
                    sample[ALIGNMENTS] = [(i + shift, j) for i, j in links]
                yield sample

    def corpus_weights(self, data_dir: str) -> list[float]:
        corpora = training_corpora(self.options(data_dir))
        return [corpus.weight for corpus in corpora] if len(corpora) > 1 else []

    # The vocabularies.
    @property
    def vocab_filename(self) -> str:
        """The shared model, or the source side's (``vocab_files`` lists both)."""
        options = self.current()
        side = "" if options.shared_vocab else ".source"
        return f"vocab.{self.name}{side}{SUBWORD_MODEL_SUFFIX}"

    def _vocab_model_paths(self, data_dir: str) -> dict[str, str]:
        """{"inputs": path, "targets": path}: one path twice when shared."""
        options = self.options(data_dir)
        if options.shared_vocab:
            path = os.path.join(data_dir, self.vocab_filename)
            return {"inputs": path, "targets": path}
        return {key: os.path.join(data_dir, f"vocab.{self.name}.{side}{SUBWORD_MODEL_SUFFIX}")
                for key, side in zip(("inputs", "targets"), SIDES)}

    def vocab_files(self, data_dir: str) -> list[str]:
        return sorted(set(self._vocab_model_paths(data_dir).values()))

    def feature_encoders(self, data_dir: str) -> dict[str, TextEncoder]:
        paths = self._vocab_model_paths(data_dir)
        encoders = {path: SubwordTextEncoder.load_from_file(path) for path in set(paths.values())}
        return {key: encoders[path] for key, path in paths.items()}

    def _write_vocab(self, data_dir: str, tmp_dir: str) -> None:
        options = self.options(data_dir)
        paths = self._vocab_model_paths(data_dir)
        symbols = tags(options) if "train_weight" in options else []  # on the source side
        if options.shared_vocab:
            jobs = [(paths["targets"], options.vocab_model, self.languages)]
        else:
            jobs = [(paths["inputs"], options.source_vocab_model, (self.source_language,)),
                    (paths["targets"], options.target_vocab_model, (self.target_language,))]
        for path, own_model, languages in jobs:
            if os.path.exists(path):
                continue
            own = symbols if path == paths["inputs"] else []
            if own_model:
                SubwordTextEncoder.adopt(own_model, own).store_to_file(path)
                continue
            SubwordTextEncoder.build(
                self._vocab_sentences(self.parallel_texts(tmp_dir, "train"), languages),
                options.vocab_size, options.vocab_type,
                path_prefix=path[:-len(SUBWORD_MODEL_SUFFIX)],
                max_sentences=options.vocab_sample,
                character_coverage=options.character_coverage, symbols=own)

    def generated_splits(self, data_dir: str) -> tuple[str, ...]:
        """The splits whose files were given."""
        options = self.options(data_dir)
        return tuple(split for split in SPLITS if self.has_split(options, split))



    def eval_metric_options(self) -> dict:
        """Paper-style tokenized BLEU needs the target language; unknown without one."""
        return {"language": self.current().target_lang or None}


@registry.register_problem
class TranslateFiles(FilesProblem):
    """Translation between the user's files (see the module docstring)."""


def tmpdir_options() -> HParams:
    options = HParams(source_lang="", target_lang="")  # names only: for BLEU, eval files
    return _with_vocabulary(options.extend(**{f"{split}_{side}": "" for split in REQUIRED_SPLITS
                                              for side in SIDES}))


@registry.register_problem
class Text2textTmpdir(FilesProblem):
    """tensor2tensor's text2text_tmpdir: ``inputs.train.txt``, ``targets.train.txt``,
    ``inputs.eval.txt`` and ``targets.eval.txt`` in ``--tmp_dir`` (eval is the dev
    split); the vocabulary options of ``translate_files``."""

    FILES = {("train", "source"): "inputs.train.txt", ("train", "target"): "targets.train.txt",
             ("dev", "source"): "inputs.eval.txt", ("dev", "target"): "targets.eval.txt"}

    def data_options(self) -> HParams:
        return tmpdir_options()

    def split_files(self, options: HParams, split: str, tmp_dir: str) -> None:
        if split not in REQUIRED_SPLITS:
            return
        for side in SIDES:
            key = f"{split}_{side}"
            setattr(options, key, _absolute(os.path.join(tmp_dir, self.FILES[split, side]),
                                            f"--tmp_dir's {self.FILES[split, side]}"))

    # Recorded (so another --tmp_dir is refused), never given: found in --tmp_dir.
    derived_data_options = tuple(f"{split}_{side}" for split, side in FILES)

    def has_split(self, options: HParams, split: str) -> bool:
        return split in REQUIRED_SPLITS and bool(getattr(options, f"{split}_source"))
