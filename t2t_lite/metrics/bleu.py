"""BLEU for translations: sacreBLEU (cased and lowercased) and the paper's tokenized BLEU.

sacreBLEU scores detokenized text with its own standard tokenizer (13a) and
reports a signature that makes the number reproducible; it is the number to
compare against other systems today.

The "Attention Is All You Need" numbers are *tokenized* BLEU, computed the way
tensor2tensor's get_ende_bleu.sh did: Moses ``tokenizer.perl -l de`` on both
sides, compounds split as ``rich-text -> rich ##AT##-##AT## text`` (the
convention of GNMT / ConvS2S), then multi-bleu.perl. sacreBLEU's 13a and intl
tokenizers are NOT used for that number on purpose: 13a splits every hyphen,
apostrophe and inner period ("U.S." -> "U . S ."), which changes the n-gram
counts and the score. Instead this module carries a small reimplementation of
the Moses tokenizer's default (non-aggressive) rules; see ``moses_tokenize``
for what it keeps and what it leaves out. multi-bleu.perl's score (single
reference, no smoothing, case-sensitive) equals sacreBLEU's with
``tokenize="none", smooth_method="none"`` on the pre-tokenized text.
"""
from __future__ import annotations

import dataclasses
import gzip
import os
import re
from typing import Sequence

from sacrebleu.metrics import BLEU


class BleuInputError(ValueError):
    """Translations and references that cannot be scored together."""


# --- Moses-style tokenization -------------------------------------------------

# Typographic punctuation mapped to ASCII first (Moses replace-unicode-punctuation
# did this to the system output); applied to both sides so they stay comparable.
_UNICODE_PUNCTUATION = str.maketrans({
    "\u201c": '"', "\u201d": '"', "\u201e": '"', "\u00ab": '"', "\u00bb": '"',
    "\u2018": "'", "\u2019": "'", "\u201a": "'", "\u2032": "'", "\u2033": '"',
    "\u2026": "...", "\uff0c": ",", "\u3001": ",", "\uff1a": ":", "\uff1b": ";",
    "\uff1f": "?", "\uff01": "!", "\uff08": "(", "\uff09": ")", "\uff05": "%",
})

# Words whose final period is part of the word (abbreviations), per language.
# A faithful-enough subset of Moses' nonbreaking_prefix files.
_TITLES = {"Dr", "Mr", "Mrs", "Ms", "Prof", "St", "Sr", "Jr", "Hr", "Fr", "Mme",
           "Mlle", "Mt", "Gen", "Col", "Lt", "Capt", "Sgt", "Rev", "Hon", "vs",
           "etc", "Jan", "Feb", "Mar", "Apr", "Jun", "Jul", "Aug", "Sep", "Sept",
           "Oct", "Nov", "Dec"}
_UPPER_LETTERS = {chr(c) for c in range(ord("A"), ord("Z") + 1)}
_LOWER_LETTERS = {chr(c) for c in range(ord("a"), ord("z") + 1)}
_NONBREAKING = {
    "en": _TITLES | _UPPER_LETTERS | {"Inc", "Ltd", "Co", "Corp", "Bros", "approx"},
    "de": _TITLES | _UPPER_LETTERS | _LOWER_LETTERS | {
        "bzw", "ca", "usw", "vgl", "ggf", "evtl", "inkl", "zB", "Str", "Jh",
        "Mio", "Mrd", "Tel", "Abs", "Abt", "Dipl", "Ing", "Hrsg", "Jhd", "max",
        "min", "sog", "Bd", "Kap", "Okt", "Dez", "Mrz"},
    "fr": _TITLES | _UPPER_LETTERS | {"MM", "Me", "Mgr", "Pr", "av", "env", "cf",
                                      "vol", "janv", "févr", "avr", "juil", "sept",
                                      "oct", "nov", "déc"},
}
# Abbreviations that keep their period only before a number ("No. 5", "Nr. 5").
_NUMERIC_ONLY = {"No", "Nos", "Nr", "Art", "pp"}

_SPECIAL_CHAR = re.compile(r"([^\w\s.'`,\-]|_)")
_DOT_RUN = re.compile(r"\.{2,}")
_ALPHA = r"[^\W\d_]"
_NOT_ALPHA = r"(?:[\W\d_])"


def _split_apostrophes(text: str, language: str) -> str:
    """Moses' contraction rules: en splits right (don 't), fr left (l' homme)."""
    if language == "en":
        text = re.sub(rf"({_NOT_ALPHA})'({_NOT_ALPHA})", r"\1 ' \2", text)
        text = re.sub(r"([^\w]|_)'(" + _ALPHA + ")", r"\1 ' \2", text)
        text = re.sub(rf"({_ALPHA})'({_NOT_ALPHA})", r"\1 ' \2", text)
        text = re.sub(rf"({_ALPHA})'({_ALPHA})", r"\1 '\2", text)
        return re.sub(r"(\d)'s", r"\1 's", text)  # the 1990's
    if language == "fr":
        text = re.sub(rf"({_NOT_ALPHA})'({_NOT_ALPHA})", r"\1 ' \2", text)
        text = re.sub(rf"({_NOT_ALPHA})'({_ALPHA})", r"\1 ' \2", text)
        text = re.sub(rf"({_ALPHA})'({_NOT_ALPHA})", r"\1 ' \2", text)
        return re.sub(rf"({_ALPHA})'({_ALPHA})", r"\1' \2", text)
    return text.replace("'", " ' ")


def _split_final_period(words: list[str], language: str) -> list[str]:
    """Splits a word-final period unless it marks an abbreviation."""
    nonbreaking = _NONBREAKING.get(language, _NONBREAKING["en"])  # Moses' fallback
    out = []
    for i, word in enumerate(words):
        following = words[i + 1] if i + 1 < len(words) else ""
        stem = word[:-1]
        keep = (not word.endswith(".") or not stem or set(word) == {"."}
                or ("." in stem and re.search(_ALPHA, stem))
                or (stem in nonbreaking and stem not in _NUMERIC_ONLY)
                or following[:1].islower()
                or (stem in _NUMERIC_ONLY and following[:1].isdigit()))
        out.append(word if keep else stem + " .")
    return out


def moses_tokenize(line: str, language: str = "de") -> str:
    """Tokenizes like Moses ``tokenizer.perl -l LANGUAGE`` (default, non-aggressive).

    Kept: punctuation other than ``. ' , -`` is split off; commas are split
    except between digits (5,300); runs of dots stay one token; a final period
    is split unless the word is an abbreviation (a subset of Moses' nonbreaking
    prefixes), holds an inner period (U.S.), or the next word is lowercase;
    apostrophes follow the en / fr contraction rules, and every other language
    splits them off; hyphens inside words stay (compounds are split later).
    Left out: Moses' XML escaping (&apos; ...), which renames tokens one-to-one
    and so never changes BLEU, and its protected-pattern option.
    """
    text = " " + re.sub(r"\s+", " ", line.translate(_UNICODE_PUNCTUATION)) + " "
    text = re.sub(r"[\x00-\x1f]", "", text)
    text = _SPECIAL_CHAR.sub(r" \1 ", text)
    text = _DOT_RUN.sub(r" \g<0> ", text)
    text = re.sub(r"(\D),", r"\1 , ", text)
    text = re.sub(r",(\D)", r" , \1", text)  # the padding space splits a final comma
    text = _split_apostrophes(text, language)
    words = _split_final_period(text.split(), language)
    text = " ".join(" ".join(words).split())
    return re.sub(r"\.' ?$", " . '", text).strip()


def split_compounds(tokenized_line: str) -> str:
    """``rich-text`` -> ``rich ##AT##-##AT## text``, the GNMT / ConvS2S convention.

    Like the perl one-liner it mirrors, matches do not overlap, so in
    ``a-b-c`` only the first hyphen is split.
    """
    return re.sub(r"(\S)-(\S)", r"\1 ##AT##-##AT## \2", tokenized_line)


def paper_tokenize(line: str, language: str = "de") -> str:
    """The tokenization behind the paper's BLEU: Moses tokens, compounds split."""
    return split_compounds(moses_tokenize(line, language))


# --- scores ---------------------------------------------------------------------

def _check_parallel(hyps: Sequence[str], refs: Sequence[str]) -> None:
    if len(hyps) != len(refs):
        raise BleuInputError(f"{len(hyps)} translations but {len(refs)} references: "
                             "give exactly one reference line per translation line")
    if not hyps:
        raise BleuInputError("no lines to score: translations and references are empty")


def sacre_bleu(hyps: Sequence[str], refs: Sequence[str],
               lowercase: bool = False) -> tuple[float, str]:
    """Corpus sacreBLEU (13a tokenizer, detokenized input) -> (score, signature)."""
    _check_parallel(hyps, refs)
    metric = BLEU(lowercase=lowercase)
    score = metric.corpus_score(list(hyps), [list(refs)]).score
    return score, str(metric.get_signature())


def tokenized_bleu(hyps: Sequence[str], refs: Sequence[str], language: str = "de") -> float:
    """The paper's BLEU: multi-bleu.perl on Moses-tokenized, compound-split text."""
    _check_parallel(hyps, refs)
    metric = BLEU(tokenize="none", smooth_method="none", force=True)
    tokenized_hyps = [paper_tokenize(h, language) for h in hyps]
    tokenized_refs = [paper_tokenize(r, language) for r in refs]
    return metric.corpus_score(tokenized_hyps, [tokenized_refs]).score


@dataclasses.dataclass(frozen=True)
class BleuReport:
    """All three BLEU numbers for one translation of one reference."""
    cased: float
    cased_signature: str
    lowercased: float
    lowercased_signature: str
    tokenized: float

    def lines(self) -> list[str]:
        return [f"sacreBLEU (cased):       {self.cased:.2f}  {self.cased_signature}",
                f"sacreBLEU (lowercased):  {self.lowercased:.2f}  {self.lowercased_signature}",
                f"tokenized BLEU (paper):  {self.tokenized:.2f}  "
                "(Moses tokens, compounds split, multi-bleu)"]


def bleu_report(hyps: Sequence[str], refs: Sequence[str], language: str = "de") -> BleuReport:
    """Cased and lowercased sacreBLEU plus the paper's tokenized BLEU."""
    cased, cased_sig = sacre_bleu(hyps, refs)
    lower, lower_sig = sacre_bleu(hyps, refs, lowercase=True)
    return BleuReport(cased, cased_sig, lower, lower_sig, tokenized_bleu(hyps, refs, language))


@dataclasses.dataclass(frozen=True)
class LengthBucketBleu:
    """Lowercased sacreBLEU of the sentences whose source has ``low``..``high`` words."""
    low: int
    high: int | None  # None: no upper bound
    sentences: int
    lowercased: float

    def line(self) -> str:
        words = f"{self.low}-{self.high}" if self.high is not None else f"{self.low}+"
        return (f"source {words:>7} words: {self.sentences:5d} sentences, "
                f"sacreBLEU (lowercased) {self.lowercased:6.2f}")


def bleu_by_source_length(sources: Sequence[str], hyps: Sequence[str], refs: Sequence[str],
                          upper_bounds: Sequence[int]) -> list[LengthBucketBleu]:
    """BLEU by source sentence length in words, as Bahdanau et al.'s Figure 2.

    ``upper_bounds`` (increasing) split lengths into 1..b0, b0+1..b1, ...,
    and a last bucket above the last bound. Empty buckets are left out.
    """
    _check_parallel(hyps, refs)
    if len(sources) != len(hyps):
        raise BleuInputError(f"{len(sources)} source lines but {len(hyps)} translations: "
                             "the source must be line-aligned with the translation")
    if list(upper_bounds) != sorted(set(upper_bounds)) or min(upper_bounds, default=1) < 1:
        raise BleuInputError(f"length bucket bounds must be increasing positive integers, "
                             f"got {list(upper_bounds)}")
    edges = [0, *upper_bounds, None]
    buckets = []
    for low, high in zip(edges, edges[1:]):
        rows = [i for i, source in enumerate(sources)
                if low < len(source.split()) and (high is None or len(source.split()) <= high)]
        if rows:
            score, _ = sacre_bleu([hyps[i] for i in rows], [refs[i] for i in rows],
                                  lowercase=True)
            buckets.append(LengthBucketBleu(low + 1, high, len(rows), score))
    return buckets


def read_lines(path: str) -> list[str]:
    """The lines of a UTF-8 text file (``.gz`` is decompressed), newlines removed."""
    if not os.path.isfile(path):
        raise FileNotFoundError(f"no such file: {path}")
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8", newline=None) as f:
        return [line.rstrip("\n") for line in f]


def read_translation_and_reference(translation_path: str,
                                   reference_path: str) -> tuple[list[str], list[str]]:
    """Reads both files; different line counts raise BleuInputError naming both."""
    hyps, refs = read_lines(translation_path), read_lines(reference_path)
    if len(hyps) != len(refs):
        raise BleuInputError(
            f"line counts differ: translation {translation_path} has {len(hyps)} lines, "
            f"reference {reference_path} has {len(refs)}; they must be line-aligned")
    return hyps, refs
