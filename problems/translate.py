"""Text-to-text translation with one subword vocabulary shared by both languages.

A translation problem names its two languages and reads its corpus as
sentence pairs keyed by language (``{"en": ..., "de": ...}``), so the direction
is nothing but which language is the input. That makes the reverse direction
free: ``register_translate_problem`` registers every problem ``NAME`` together
with ``NAME_rev``, which swaps the languages and reuses the forward problem's
vocabulary file and TFRecord shards (inputs and targets are swapped when they
are read), as tensor2tensor's ``_rev`` problems did. Nothing is generated twice.

The vocabulary is a sentencepiece model (``SubwordTextEncoder``) trained on the
training sentences of both languages, read in a fixed order with a fixed seed,
so the same data gives the same file; it is kept when the file exists.

For evaluation, ``test_pairs`` gives the raw (source, reference) sentences of
a split or an extra test set, and ``write_eval_files`` writes them as the plain
text files ``t2t-decoder --decode_from_file`` and ``t2t-bleu`` read.
"""
from __future__ import annotations

import abc
import itertools
import logging
import os
import re
from typing import Iterator

import tensorflow as tf

from t2t_lite import registry
from t2t_lite.data.problem import SPLITS, Text2TextProblem
from t2t_lite.data.subword import SubwordTextEncoder

logger = logging.getLogger(__name__)

SUBWORD_MODEL_SUFFIX = ".model"  # SubwordTextEncoder.build writes PREFIX + ".model"
_LOG_EVERY_SENTENCES = 1_000_000
_LINE_BREAKS = re.compile(r"[\r\n]+")


def one_line(text: str) -> str:
    """``text`` without surrounding whitespace or inner line breaks (keeps files aligned)."""
    return _LINE_BREAKS.sub(" ", text).strip()


class TranslateProblem(Text2TextProblem):
    """Sentence pairs from ``source_language`` to ``target_language``.

    A subclass sets the languages and the vocabulary attributes and implements
    ``parallel_texts``.
    """

    source_language: str
    target_language: str
    subword_vocab_size: int  # every id counted: reserved, byte pieces and subwords
    subword_model_type: str = "bpe"  # or "unigram" (word-pieces)
    vocab_max_sentences: int = 0  # train the vocabulary on a seeded sample of this many; 0: all
    extra_test_sets: tuple[str, ...] = ()  # more evaluation sets than "dev" and "test"
    encoder_class = SubwordTextEncoder

    @abc.abstractmethod
    def parallel_texts(self, tmp_dir: str, subset: str) -> Iterator[dict[str, str]]:
        """Yields ``{language: sentence}`` for both languages of ``subset`` (a split
        or one of ``extra_test_sets``), downloading raw data into ``tmp_dir`` if absent."""

    @property
    def languages(self) -> tuple[str, str]:
        """Both languages in a fixed order that does not depend on the direction."""
        return tuple(sorted((self.source_language, self.target_language)))

    @property
    def test_sets(self) -> tuple[str, ...]:
        """The names ``test_pairs`` accepts."""
        return SPLITS + self.extra_test_sets

    @property
    def vocab_filename(self) -> str:
        return f"vocab.{self.name}{SUBWORD_MODEL_SUFFIX}"

    def _check_test_set(self, subset: str) -> None:
        if subset not in self.test_sets:
            raise ValueError(f"{self.name} has no data set {subset!r}; "
                             f"choose one of {', '.join(self.test_sets)}")

    def _sentence_pairs(self, tmp_dir: str, subset: str) -> Iterator[tuple[str, str]]:
        self._check_test_set(subset)
        for texts in self.parallel_texts(tmp_dir, subset):
            yield one_line(texts[self.source_language]), one_line(texts[self.target_language])

    def generate_samples(self, data_dir: str, tmp_dir: str,
                         split: str) -> Iterator[dict[str, str]]:
        for source, target in self._sentence_pairs(tmp_dir, split):
            yield {"inputs": source, "targets": target}

    def build_vocab(self, data_dir: str, tmp_dir: str) -> SubwordTextEncoder:
        """Trains the shared vocabulary on the training sentences of both languages."""
        pairs = iter(self.parallel_texts(tmp_dir, "train"))
        # Fetch before sentencepiece starts: it would wrap a download error in its own.
        first = next(pairs, None)
        if first is None:
            raise ValueError(f"{self.name}: the training data in {tmp_dir} is empty; "
                             "delete it so that it is downloaded again")
        path = os.path.join(data_dir, self.vocab_filename)
        logger.info("%s: training a %d-id %s vocabulary (may take a while)", self.name,
                    self.subword_vocab_size, self.subword_model_type)
        return SubwordTextEncoder.build(
            self._vocab_sentences(itertools.chain([first], pairs)), self.subword_vocab_size,
            self.subword_model_type, path_prefix=path[:-len(SUBWORD_MODEL_SUFFIX)],
            max_sentences=self.vocab_max_sentences)

    def _vocab_sentences(self, pairs: Iterator[dict[str, str]],
                         languages: tuple[str, ...] = ()) -> Iterator[str]:
        """Each pair's sentences in ``languages`` (both, sorted, by default)."""
        count = 0
        for texts in pairs:
            for language in languages or self.languages:
                yield one_line(texts[language])
            count += 2
            if count % _LOG_EVERY_SENTENCES == 0:
                logger.info("%s: read %d sentences for the vocabulary", self.name, count)

    def test_pairs(self, tmp_dir: str, test_set: str = "test") -> list[tuple[str, str]]:
        """The (source, reference) sentences of ``test_set`` (see ``test_sets``)."""
        return list(self._sentence_pairs(tmp_dir, test_set))

    def eval_file_names(self, test_set: str) -> tuple[str, str]:
        """``NAME.TEST_SET.LANGUAGE`` for the source and the reference language."""
        self._check_test_set(test_set)
        return (f"{self.name}.{test_set}.{self.source_language}",
                f"{self.name}.{test_set}.{self.target_language}")

    def eval_lines(self, tmp_dir: str, test_set: str) -> tuple[list[str], list[str]]:
        pairs = self.test_pairs(tmp_dir, test_set)
        return [source for source, _ in pairs], [reference for _, reference in pairs]

    def eval_metric_options(self) -> dict:
        """The paper's tokenized BLEU follows the target language's tokenizer rules."""
        return {"language": self.target_language}


class _ReverseDirection(TranslateProblem):
    """Mixin for ``NAME_rev``: the languages swapped, the forward problem's files reused."""

    forward_class: type[TranslateProblem]

    def forward_problem(self) -> TranslateProblem:
        return self.forward_class()

    @property
    def name(self) -> str:
        return self.forward_problem().name + "_rev"

    @property
    def vocab_filename(self) -> str:
        return self.forward_problem().vocab_filename

    def shard_paths(self, data_dir: str, split: str) -> list[str]:
        return self.forward_problem().shard_paths(data_dir, split)

    def generate_data(self, data_dir: str, tmp_dir: str) -> None:
        """Generates the forward problem's data, which this direction reads swapped."""
        self.forward_problem().generate_data(data_dir, tmp_dir)

    def dataset(self, split: str, data_dir: str, shuffle_files: bool = False) -> tf.data.Dataset:
        forward = self.forward_problem().dataset(split, data_dir, shuffle_files)
        return forward.map(lambda example: {"inputs": example["targets"],
                                            "targets": example["inputs"]})


def reversed_problem_class(forward: type[TranslateProblem]) -> type[TranslateProblem]:
    """The class of ``forward``'s reverse direction (named ``forward``'s name + "_rev")."""
    return type(f"{forward.__name__}Rev", (_ReverseDirection, forward), {
        "__module__": forward.__module__,
        "__doc__": f"{forward.__name__} in the reverse direction "
                   f"({forward.target_language} -> {forward.source_language}).",
        "forward_class": forward,
        "source_language": forward.target_language,
        "target_language": forward.source_language,
    })


def register_translate_problem(cls: type[TranslateProblem]) -> type[TranslateProblem]:
    """Class decorator: registers ``cls`` as NAME and its reverse direction as NAME_rev."""
    registry.register_problem(cls)
    reverse = reversed_problem_class(cls)
    registry.register_problem(reverse().name)(reverse)
    return cls
