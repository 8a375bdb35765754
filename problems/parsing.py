"""English constituency parsing on the Penn Treebank (the paper's section 6.3).

Each example is a sentence and its tree, linearized as in
``t2t_lite.parsing.linearize``: the source is the words joined by spaces, the
target the bracketed tree with every POS tag replaced by ``XX`` and bare
closers, e.g. ``(S (NP XX ) (VP XX ) XX )``. Trees are preprocessed first
(``-NONE-`` elements and function tags removed).

Vocabulary. One word-level ``TokenTextEncoder`` is shared by inputs and
targets: every target token (``)``, ``XX``, and an opener for every Penn
Treebank phrase label and any other label seen in training, so that a label
missing from a small training set is not ``<UNK>`` in dev), then the most
frequent training words until the vocabulary holds ``vocab_size_limit`` ids
(reserved ids and ``<UNK>`` included); rarer words map to ``<UNK>``. Whole
words rather than subwords because that is the paper's 16K / 32K vocabulary;
because each input id is then exactly one word, which is what lets decoding be
constrained to one word slot per input word
(``decode_constraint``); and because an ``<UNK>`` input costs nothing in the
output: the output tree takes its words from the input line
(``postprocess_decode``), never from the model.

Where the data is expected (``--tmp_dir`` of t2t-datagen):

* ``parsing_english_ptb16k``: the Penn Treebank release (LDC99T42), as
  ``TMP_DIR/parsed/mrg/wsj/SS/wsj_SSNN.mrg`` (or ``TMP_DIR/SS/wsj_SSNN.mrg``);
  sections 02-21 train, 22 dev, 23 test.
  ``parsing_english_ptb16k_lexical``: the same with lexicalized targets (below);
  ``parsing_english_ptb16k_tagged``: the same predicting POS tags (below).
* ``parsing_english_ptb_semi32k``: the same, plus ``TMP_DIR/extra_trees.txt``,
  one bracketed tree a line (e.g. parser output over unlabelled sentences, as
  the paper's semi-supervised corpora), appended to the training split.
* ``parsing_english_ptb_sample``: NLTK's WSJ sample as
  ``TMP_DIR/combined/wsj_NNNN.mrg`` (or ``TMP_DIR/wsj_NNNN.mrg``): train
  wsj_0001-0159, dev wsj_0160-0179, and dev again as test. For tests and CPU runs.
  ``parsing_english_ptb_sample_lexical`` / ``_tagged``: the same with
  lexicalized / POS-tag targets. ``parsing_english_ptb_sample_tune`` (and
  ``_lexical_tune``, ``_tagged_tune``): the tuning slice, train wsj_0001-0149,
  dev and test wsj_0150-0159, on which settings are chosen before a model is
  trained on the full training range and scored on dev.
  ``parsing_english_ptb_sample_labelled`` and ``_lexical_labelled`` (each with
  its ``_tune``): XX / lexicalized targets with labelled closers (below).

Labelled closers (the ``_labelled`` problems, and ``closers=labelled`` of
``parsing_files``) end a constituent with ``)LABEL``, as Vinyals et al. did,
``(S (NP XX )NP (VP XX )VP XX )S``, instead of a bare ``)``: the closer says
which constituent it ends, which a decoder without a stack of open labels (an
LSTM) must otherwise remember. Decoding lets any closer close the innermost
open constituent and the scorer rebuilds the tree that way, so gold targets
score exactly as with bare closers.

Lexicalized targets (the ``_lexical`` problems) spell each word in its slot,
``(S (NP John ) (VP has ...``, instead of ``XX``; decoding may put only the
next input word there. The decoder then sees where it is in the sentence
instead of counting placeholders: on the treebank sample, a 20-minute model
scores 69.8 F1 against 41.5 for ``XX`` after 60 minutes (docs/RESULTS.md).

POS-tag targets (the ``_tagged`` problems) put each word's tag before the word,
as an opener that closes itself, ``(S (NP (NNP John ) (VP (VBZ has ...``: the
output is a complete tree, ``(NP (DT the) (NN dog))``, scored by EVALB with its
tagging accuracy; a tag is one of the 45 PTB tags. The words stay in the target
so that the decoder keeps its place: with the tag alone in the slot, a model
trained 2,000 steps on the tuning slice lost count of the words (tags shifted
against them: 31.8 F1, 42.8% of tags right; docs/RESULTS.md).

Decoding follows the paper: beam 21, alpha 0.3, up to input length + 300
tokens; the output is rebuilt over the input words and scored with EVALB.
"""
from __future__ import annotations

import abc
import collections
import glob
import itertools
import os
from typing import Iterable, Iterator

import tensorflow as tf

from t2t_lite.contracts.reserved_ids import NUM_RESERVED_IDS
from t2t_lite.data.augmentation import Augment
from t2t_lite.data.encoders import RESERVED_TOKENS, TokenTextEncoder
from t2t_lite.data.problem import Text2TextProblem, check_split
from t2t_lite.data.text_files import iter_utf8_lines
from t2t_lite.data.word_dropout import input_token_counts, unk_probabilities, word_dropout
from t2t_lite.hparam import HParams
from t2t_lite.parsing.graph_trees import graph_delinearize
from t2t_lite.parsing.linearize import (CLOSE, OPEN, WORD_SLOT, Kind, SlotToken, delinearize,
                                        linearize, linearize_example, token_kinds)
from t2t_lite.parsing.tree_constraint import TreeConstraint
from t2t_lite.parsing.trees import (PTB_POS_TAGS, ROOT_LABEL, Tree, TreebankFormatError,
                                    file_range_files, parse_tree_line, preprocess,
                                    read_treebank, wsj_split_files)
from t2t_lite.registry import register_problem

EXTRA_TREES_FILENAME = "extra_trees.txt"
# The phrase labels of the Penn Treebank II bracketing guidelines (Bies et al. 1995).
PTB_PHRASE_LABELS = ("ADJP", "ADVP", "CONJP", "FRAG", "INTJ", "LST", "NAC", "NP", "NX", "PP",
                     "PRN", "PRT", "QP", "RRC", "S", "SBAR", "SBARQ", "SINV", "SQ", "UCP", "VP",
                     "WHADJP", "WHADVP", "WHNP", "WHPP", "X")


def build_parsing_vocab(trees: Iterable[Tree], vocab_size_limit: int,
                        slot_token: SlotToken = SlotToken.PLACEHOLDER,
                        labelled_closers: bool = False) -> TokenTextEncoder:
    """The PTB's target tokens and those of ``trees``, then their words by frequency.

    POS-tag targets hold every PTB tag; a tree with another tag is refused, as
    decoding would never produce it. With ``labelled_closers`` every label's
    closer (``)NP``) is there too, beside the bare one."""
    labels = PTB_PHRASE_LABELS + (ROOT_LABEL,)
    tree_tokens = {OPEN + label for label in labels}
    tree_tokens.update((CLOSE, WORD_SLOT))
    if labelled_closers:
        tree_tokens.update(CLOSE + label for label in labels)
    if slot_token is SlotToken.POS:
        tree_tokens.update(OPEN + tag for tag in PTB_POS_TAGS)
    word_counts: collections.Counter[str] = collections.Counter()
    for tree in trees:
        if slot_token is SlotToken.POS:
            unknown = set(tree.tags()) - PTB_POS_TAGS
            if unknown:
                raise TreebankFormatError(
                    f"POS tags outside the Penn Treebank's 45: {', '.join(sorted(unknown))} "
                    f"in the tree of {' '.join(tree.words()[:8])!r}; the tagged problems "
                    "predict PTB tags only")
        tree_tokens.update(linearize(tree, labelled_closers=labelled_closers))
        word_counts.update(tree.words())
    room = vocab_size_limit - NUM_RESERVED_IDS - len(tree_tokens) - 1   # 1: <UNK>
    if room < 0:
        raise ValueError(f"vocab_size_limit {vocab_size_limit} is too small for the "
                         f"{len(tree_tokens)} target tokens of the trees")
    taken = tree_tokens.union(RESERVED_TOKENS)
    # Most frequent first; ties alphabetically, so the vocabulary is reproducible.
    words = [word for word, _ in sorted(word_counts.items(), key=lambda wc: (-wc[1], wc[0]))
             if word not in taken][:room]
    return TokenTextEncoder(sorted(tree_tokens) + words)


def read_tree_lines(path: str) -> Iterator[Tree]:
    """The preprocessed trees of a file of one tree a line (blank lines skipped), streamed."""
    for number, line in enumerate(iter_utf8_lines(path, allow_tab=True), start=1):
        if not line.strip():
            continue
        tree = preprocess(parse_tree_line(line, path, number))
        if tree is None:
            raise TreebankFormatError(f"{path}:{number}: tree has no words once -NONE- "
                                      "empty elements are removed")
        yield tree


class ParsingProblem(Text2TextProblem):
    """Words in, linearized tree out, over a word-level vocabulary (see the module docstring)."""

    encoder_class = TokenTextEncoder
    eval_metric = "evalb"
    vocab_size_limit: int = 2**14
    # What fills a word slot of the targets: XX, the word (lexicalized), or its POS tag.
    slot_token: SlotToken = SlotToken.PLACEHOLDER
    # Whether a constituent closes with ``)LABEL`` (Vinyals et al.) instead of ``)``.
    labelled_closers: bool = False

    @abc.abstractmethod
    def split_trees(self, tmp_dir: str, split: str) -> Iterator[Tree]:
        """The preprocessed trees of ``split``, read from ``tmp_dir``; a clear error when absent."""

    def build_vocab(self, data_dir: str, tmp_dir: str) -> TokenTextEncoder:
        return build_parsing_vocab(self.split_trees(tmp_dir, "train"), self.vocab_size_limit,
                                   self.slot_token, self.labelled_closers)

    def generate_samples(self, data_dir: str, tmp_dir: str,
                         split: str) -> Iterator[dict[str, str]]:
        return (linearize_example(tree, self.slot_token, self.labelled_closers)
                for tree in self.split_trees(tmp_dir, split))

    def decode_hparams_defaults(self) -> dict:
        """The paper's parsing settings: beam 21, alpha 0.3, max length input + 300."""
        return {"beam_size": 21, "alpha": 0.3, "extra_length": 300}

    def word_dropout_augmentation(self, data_dir: str, hparams: HParams) -> Augment | None:
        """Word dropout (``hparams.word_dropout`` is its alpha; 0 = none): rare training
        words become ``<UNK>`` in the input and, in lexicalized targets, in their slot."""
        if not hparams.word_dropout:
            return None
        encoder = self.feature_encoders(data_dir)["inputs"]
        counts = input_token_counts(self.dataset("train", data_dir), encoder.vocab_size)
        probabilities = unk_probabilities(counts, hparams.word_dropout, encoder.oov_id)
        target_words = None
        if self.slot_token.spells_words:
            target_words = token_kinds(encoder.tokens, slot_token=self.slot_token) == Kind.WORD
        return word_dropout(probabilities, encoder.oov_id, target_words)

    def decode_constraint(self, data_dir: str) -> TreeConstraint:
        """Beam search produces only well-formed trees with one word slot per input word."""
        return TreeConstraint(self.feature_encoders(data_dir)["targets"].tokens,
                              slot_token=self.slot_token, tags=PTB_POS_TAGS)

    def postprocess_decode(self, source_line: str, decoded: str) -> str:
        """The tree over ``source_line``'s words, on one line, from the decoded target text.

        Any decoded text gives a well-formed tree (``delinearize`` repairs it);
        tab-separated beams give tab-separated trees; an empty source gives "".
        """
        words = source_line.split()
        if not words:
            return ""
        return "\t".join(str(delinearize(beam, words, self.slot_token))
                         for beam in decoded.split("\t"))

    def graph_postprocess(self, sources: tf.Tensor, decoded: tf.Tensor) -> tf.Tensor:
        """In-graph ``postprocess_decode`` of one beam per line (constrained decodes)."""
        return graph_delinearize(sources, decoded, self.slot_token)

    def eval_file_names(self, split: str) -> tuple[str, str]:
        """``NAME.SPLIT.words`` (the sentences, words only) and ``NAME.SPLIT.trees``
        (their gold trees, one a line): decode the first, score against the second."""
        check_split(split)
        return f"{self.name}.{split}.words", f"{self.name}.{split}.trees"

    def eval_lines(self, tmp_dir: str, split: str) -> tuple[list[str], list[str]]:
        trees = list(self.split_trees(tmp_dir, split))
        return [" ".join(tree.words()) for tree in trees], [str(tree) for tree in trees]


@register_problem
class ParsingEnglishPtb16k(ParsingProblem):
    """WSJ only (sections 02-21 / 22 / 23 of LDC99T42 in --tmp_dir), 16K vocabulary."""

    def wsj_files(self, tmp_dir: str, split: str) -> list[str]:
        try:
            return wsj_split_files(tmp_dir, split)
        except FileNotFoundError as error:
            raise FileNotFoundError(f"{self.name} reads the Penn Treebank (LDC99T42) from "
                                    f"--tmp_dir: {error}") from None

    def split_trees(self, tmp_dir: str, split: str) -> Iterator[Tree]:
        return iter(read_treebank(self.wsj_files(tmp_dir, split)))


@register_problem
class ParsingEnglishPtb16kLexical(ParsingEnglishPtb16k):
    """WSJ only, 16K vocabulary, lexicalized targets (see the module docstring)."""

    slot_token = SlotToken.WORD


@register_problem
class ParsingEnglishPtb16kTagged(ParsingEnglishPtb16k):
    """WSJ only, 16K vocabulary, targets that predict each word's POS tag."""

    slot_token = SlotToken.POS


@register_problem
class ParsingEnglishPtbSemi32k(ParsingEnglishPtb16k):
    """WSJ plus the user's extra trees (--tmp_dir/extra_trees.txt) for training, 32K vocabulary."""

    vocab_size_limit = 2**15

    def split_trees(self, tmp_dir: str, split: str) -> Iterator[Tree]:
        if split != "train":
            return super().split_trees(tmp_dir, split)
        extra_path = os.path.join(tmp_dir, EXTRA_TREES_FILENAME)
        if not os.path.isfile(extra_path):
            raise FileNotFoundError(
                f"{self.name} trains on WSJ plus extra trees, but {extra_path} does not exist: "
                "put the extra trees there, one bracketed tree a line (or use "
                "parsing_english_ptb16k for WSJ only)")
        return itertools.chain(super().split_trees(tmp_dir, split), read_tree_lines(extra_path))


@register_problem
class ParsingEnglishPtbSample(ParsingProblem):
    """NLTK's WSJ sample (--tmp_dir/combined/wsj_*.mrg), for tests and CPU runs; 8K vocabulary.

    The sample's training part has about 11K word types, 5.3K of them seen twice
    or more: 8K ids keep every repeated word and keep a small model's embedding small.
    """

    vocab_size_limit = 2**13
    split_ranges = {"train": ("wsj_0001", "wsj_0159"), "dev": ("wsj_0160", "wsj_0179"),
                    "test": ("wsj_0160", "wsj_0179")}

    def split_trees(self, tmp_dir: str, split: str) -> Iterator[Tree]:
        combined = os.path.join(tmp_dir, "combined")
        folder = combined if os.path.isdir(combined) else tmp_dir
        if not glob.glob(os.path.join(folder, "wsj_*.mrg")):
            raise FileNotFoundError(
                f"{self.name}: no Penn Treebank sample in --tmp_dir={tmp_dir}: expected "
                f"{os.path.join(combined, 'wsj_0001.mrg')} .. wsj_0179.mrg (or the wsj_*.mrg "
                "files directly in --tmp_dir), e.g. NLTK's treebank sample")
        if split not in self.split_ranges:
            raise ValueError(f"unknown split {split!r}; expected one of "
                             f"{', '.join(self.split_ranges)}")
        first, last = self.split_ranges[split]
        return iter(read_treebank(file_range_files(folder, first, last)))


@register_problem
class ParsingEnglishPtbSampleLexical(ParsingEnglishPtbSample):
    """The treebank sample with lexicalized targets (see the module docstring)."""

    slot_token = SlotToken.WORD


@register_problem
class ParsingEnglishPtbSampleLabelled(ParsingEnglishPtbSample):
    """XX targets whose closers carry their label, ``(NP XX )NP``: Vinyals et al.'s form."""

    labelled_closers = True


@register_problem
class ParsingEnglishPtbSampleLexicalLabelled(ParsingEnglishPtbSampleLexical):
    """Lexicalized targets whose closers carry their label, ``(NP Kim )NP``."""

    labelled_closers = True


@register_problem
class ParsingEnglishPtbSampleTagged(ParsingEnglishPtbSample):
    """The treebank sample with targets that predict each word's POS tag."""

    slot_token = SlotToken.POS


# The tuning slice: settings are compared on wsj_0150-0159 by models trained on
# wsj_0001-0149, so that the dev figure (wsj_0160-0179) comes from settings it
# never chose.
TUNING_RANGES = {"train": ("wsj_0001", "wsj_0149"), "dev": ("wsj_0150", "wsj_0159"),
                 "test": ("wsj_0150", "wsj_0159")}


@register_problem
class ParsingEnglishPtbSampleTune(ParsingEnglishPtbSample):
    """The treebank sample's tuning slice: train wsj_0001-0149, dev (and test) wsj_0150-0159."""

    split_ranges = TUNING_RANGES


@register_problem
class ParsingEnglishPtbSampleLexicalTune(ParsingEnglishPtbSampleLexical):
    """The tuning slice with lexicalized targets."""

    split_ranges = TUNING_RANGES


@register_problem
class ParsingEnglishPtbSampleLabelledTune(ParsingEnglishPtbSampleLabelled):
    """The tuning slice with XX targets and labelled closers."""

    split_ranges = TUNING_RANGES


@register_problem
class ParsingEnglishPtbSampleLexicalLabelledTune(ParsingEnglishPtbSampleLexicalLabelled):
    """The tuning slice with lexicalized targets and labelled closers."""

    split_ranges = TUNING_RANGES


@register_problem
class ParsingEnglishPtbSampleTaggedTune(ParsingEnglishPtbSampleTagged):
    """The tuning slice with POS-tag targets."""

    split_ranges = TUNING_RANGES
