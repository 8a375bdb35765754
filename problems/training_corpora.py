"""Several training corpora in one files problem, each with a weight and a tag.

``translate_files`` takes up to four training corpora: ``train`` and ``train2``,
``train3``, ``train4``, each given as ``train`` is (a prefix, two files or a pairs
file: ``train2=PREFIX``, ``train2_source`` / ``train2_target``, ``train2_pairs``).
Real parallel data beside back-translations, or in-domain beside out-of-domain
text, is the usual case::

    --data_options='train=corpus/para,train2=corpus/bt,train2_tag=<BT>,
                    train_weight=1,train2_weight=1,dev=corpus/val,source_lang=en,target_lang=de'

``trainN_alignments=FILE``: the corpus's word alignments, one Pharaoh line a pair
(``0-0 1-2``, source word first, words as split on spaces; eflomal or fast_align
write them), which guided alignment training reads (hparam
``guided_alignment_weight``; ``t2t_lite/data/alignment_links.py``).

``trainN_weight`` (> 0, 1 by default) is the corpus's share of the training examples,
whatever its length, as OpenNMT-tf's ``train_files_weights``: at 1 and 1 half of
each batch's examples (on average) come from each corpus; a corpus is read again
from its start when it ends. ``trainN_tag`` (Caswell et al. 2019's tagged
back-translation) begins each of the corpus's sources with that token: the
vocabulary holds it as one piece of its own (a user-defined sentencepiece symbol,
added to a model of the user's too), which text never splits into.

The corpora are written into the one train split, each example with its corpus's
index (``tfrecords.CORPUS``); training streams them apart again and samples by
weight (``pipeline.batch_examples``). Dev and test are one corpus each, untagged.
"""
from __future__ import annotations

import dataclasses
import re

from t2t_lite.data import data_options
from t2t_lite.hparam import HParams, HParamsError, positive

CORPORA = ("train", "train2", "train3", "train4")
_FORMS = ("", "_source", "_target", "_pairs")  # the keys of a corpus's files
# The pieces every vocabulary reserves (PAD, EOS, unknown): never a tag.
RESERVED_PIECES = ("<pad>", "</s>", "<unk>")
_TAG = re.compile(r"^\S+$")


@dataclasses.dataclass(frozen=True)
class Corpus:
    """A training corpus: the split-like name its file keys start with, its weight
    and its tag ("" for none)."""
    name: str
    weight: float
    tag: str
    alignments: str = ""  # its word alignments' Pharaoh file, for guided alignment


def add_corpus_options(options: HParams) -> HParams:
    """``options`` with the further corpora's file keys and every corpus's weight and tag."""
    for name in CORPORA[1:]:
        options.extend(**{name + form: "" for form in _FORMS})
    for name in CORPORA:
        options.extend(**{f"{name}_weight": positive(1.0), f"{name}_tag": "",
                          f"{name}_alignments": ""})
    return options


def is_given(options: HParams, name: str) -> bool:
    """Whether corpus ``name``'s files are given (in any of their forms)."""
    values = options.values()
    return any(values.get(name + form, "") for form in _FORMS)


def training_corpora(options: HParams) -> list[Corpus]:
    """The corpora given in ``options``, in order (``train`` alone for a problem that
    takes one)."""
    values = options.values()
    return [Corpus(name, values.get(f"{name}_weight", 1.0), values.get(f"{name}_tag", ""),
                   values.get(f"{name}_alignments", ""))
            for name in CORPORA if name == "train" or is_given(options, name)]


def check_corpora(options: HParams) -> None:
    """Refuses, in one line, a weight, tag or alignment file of a corpus not given, a weight with one
    corpus (it shares nothing out), and a tag that is not one token or is reserved."""
    given = {corpus.name for corpus in training_corpora(options)}
    values = options.values()
    for name in CORPORA:
        changed = [key for key, unset in ((f"{name}_weight", 1.0), (f"{name}_tag", ""),
                                          (f"{name}_alignments", ""))
                   if values[key] != unset]
        if name not in given and changed:
            raise HParamsError(f"{data_options.SOURCE}: {', '.join(changed)}: no {name} "
                               f"corpus is given ({name}=PREFIX, {name}_source and "
                               f"{name}_target, or {name}_pairs)")
        tag = values[f"{name}_tag"]
        if tag and not _TAG.match(tag):
            raise HParamsError(f"{data_options.SOURCE}: {name}_tag={tag!r}: a tag is one "
                               "token, without spaces")
        if tag in RESERVED_PIECES:
            raise HParamsError(f"{data_options.SOURCE}: {name}_tag={tag}: a piece every "
                               f"vocabulary reserves ({', '.join(RESERVED_PIECES)}); choose "
                               "another, such as <BT>")
    if len(given) == 1 and values["train_weight"] != 1.0:
        raise HParamsError(f"{data_options.SOURCE}: train_weight={values['train_weight']}: "
                           "a weight shares the examples between corpora, and only train is "
                           "given (add train2=PREFIX, or leave train_weight out)")


def tags(options: HParams) -> list[str]:
    """The corpora's tags, each once, in corpus order."""
    return list(dict.fromkeys(c.tag for c in training_corpora(options) if c.tag))
