"""BLEU for translations: sacreBLEU (cased and lowercased) and the paper's tokenized BLEU.

sacreBLEU scores detokenized text with its own standard tokenizer (13a) and
reports a signature that makes the number reproducible; it is the number to
compare against other systems today.

The "Attention Is All You Need" numbers are *tokenized* BLEU, computed the way
tensor2tensor's get_ende_bleu.sh did: Moses ``replace-unicode-punctuation.perl``
and ``tokenizer.perl -l de``, compounds split as
``rich-text -> rich ##AT##-##AT## text`` (the convention of GNMT / ConvS2S),
then multi-bleu.perl. sacreBLEU's 13a and intl tokenizers are NOT used for that
number on purpose: 13a splits every hyphen, apostrophe and inner period
("U.S." -> "U . S ."), which changes the n-gram counts and the score.

The Moses steps come from sacremoses, the maintained Python port of the Moses
scripts with their per-language nonbreaking-prefix lists (abbreviations such as
"Dr." or "bzw." keep their period): the score moves with every token, so only
Moses' own rules and lists reproduce it. get_ende_bleu.sh ran the scripts on
the system output and scored it against an already tokenized reference; here
the reference is plain text, so both sides go through the same steps. Like
tokenizer.perl of 2017, sacremoses keeps the period of an abbreviation that
ends the line ("in the U.S."); Moses splits it since late 2018.

multi-bleu.perl's score (single reference, no smoothing, case-sensitive) equals
sacreBLEU's with ``tokenize="none", smooth_method="none"`` on the tokenized text.

Every score here is of the text as ``t2t_lite.metrics.lookalike`` scores it (NFC,
invisible format characters removed, odd spaces plain, ligatures as letters), on
both sides alike: text a reader cannot tell apart scores the same.
"""
from __future__ import annotations

import dataclasses
import functools
import re
from typing import TYPE_CHECKING, Sequence

from sacrebleu.metrics import BLEU

from t2t_lite.data.text_files import read_utf8_lines
from t2t_lite.metrics import lookalike

if TYPE_CHECKING:
    from sacremoses import MosesTokenizer


class BleuInputError(ValueError):
    """Translations and references that cannot be scored together."""


# --- Moses tokenization ----------------------------------------------------------

# sacremoses is imported where a line is first tokenized: importing it compiles
# its regular expressions (0.5 s), which every command paid at start-up before,
# BLEU or not.
@functools.cache
def _unicode_punctuation():
    """Only its replace_unicode_punct is used: replace-unicode-punctuation.perl, which
    get_ende_bleu.sh ran before tokenizer.perl (not normalize-punctuation.perl)."""
    from sacremoses import MosesPunctNormalizer
    return MosesPunctNormalizer()


@functools.cache
def _moses_tokenizer(language: str) -> MosesTokenizer:
    """One tokenizer per language: building one reads its nonbreaking-prefix list."""
    from sacremoses import MosesTokenizer
    return MosesTokenizer(lang=language)


def moses_tokenize(line: str, language: str = "de") -> str:
    """``replace-unicode-punctuation.perl | tokenizer.perl -l LANGUAGE``, by sacremoses.

    tokenizer.perl's defaults, as get_ende_bleu.sh ran it: no aggressive hyphen
    splitting (``-a``), and XML escaping on (``'`` -> ``&apos;``), which renames
    tokens one to one and so leaves BLEU as it is. A language without a
    nonbreaking-prefix list falls back to English's, as in Moses.
    """
    text = _unicode_punctuation().replace_unicode_punct(line)
    tokens = _moses_tokenizer(language).tokenize(
        text, aggressive_dash_splits=False, return_str=True, escape=True)
    return tokens.strip()  # a line ending in ".'" comes back with a trailing space


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

def check_parallel(hyps: Sequence[str], refs: Sequence[str]) -> None:
    if len(hyps) != len(refs):
        raise BleuInputError(f"{len(hyps)} translations but {len(refs)} references: "
                             "give exactly one reference line per translation line")
    if not hyps:
        raise BleuInputError("no lines to score: translations and references are empty")


def scored(lines: Sequence[str], name: str) -> list[str]:
    """``lines`` as every scorer scores them (``lookalike.normalised_lines``: NFC,
    invisible format characters removed, ...); silent and idempotent, so text that a
    command already normalised (and warned about) is unchanged."""
    return lookalike.normalised_lines(lines, name)


def sacre_bleu(hyps: Sequence[str], refs: Sequence[str],
               lowercase: bool = False) -> tuple[float, str]:
    """Corpus sacreBLEU (13a tokenizer, detokenized input) -> (score, signature); both
    sides as ``t2t_lite.metrics.lookalike`` scores them (``scored``)."""
    check_parallel(hyps, refs)
    hyps, refs = scored(hyps, "translations"), scored(refs, "references")
    metric = BLEU(lowercase=lowercase)
    score = metric.corpus_score(list(hyps), [list(refs)]).score
    return score, str(metric.get_signature())


def tokenized_bleu(hyps: Sequence[str], refs: Sequence[str], language: str = "de",
                   lowercase: bool = False) -> float:
    """The paper's BLEU: multi-bleu.perl on Moses-tokenized, compound-split text.

    ``lowercase=True`` is ``multi-bleu.perl -lc``, the number the Multi30k
    literature reports (e.g. fairseq's on tokenized lowercased text).
    """
    check_parallel(hyps, refs)
    return _multi_bleu(*_paper_tokenized(scored(hyps, "translations"),
                                         scored(refs, "references"), language), lowercase)


def _paper_tokenized(hyps: Sequence[str], refs: Sequence[str],
                     language: str) -> tuple[list[str], list[str]]:
    return ([paper_tokenize(h, language) for h in hyps],
            [paper_tokenize(r, language) for r in refs])


def _multi_bleu(tokenized_hyps: list[str], tokenized_refs: list[str], lowercase: bool) -> float:
    """multi-bleu.perl (``-lc`` when ``lowercase``) on already tokenized text."""
    metric = BLEU(tokenize="none", smooth_method="none", force=True, lowercase=lowercase)
    return metric.corpus_score(tokenized_hyps, [tokenized_refs]).score


@dataclasses.dataclass(frozen=True)
class BleuReport:
    """All BLEU numbers for one translation of one reference: sacreBLEU, and the paper's
    tokenized BLEU when the target ``language`` (its Moses rules) is known."""
    cased: float
    cased_signature: str
    lowercased: float
    lowercased_signature: str
    language: str | None
    tokenized: float | None = None
    tokenized_lowercased: float | None = None

    def lines(self) -> list[str]:
        sacre = [f"sacreBLEU (cased):       {self.cased:.2f}  {self.cased_signature}",
                 f"sacreBLEU (lowercased):  {self.lowercased:.2f}  {self.lowercased_signature}"]
        if self.language is None:
            return sacre + ["tokenized BLEU: not computed: its Moses tokenization depends on "
                            "the target language: give it with --language (e.g. --language=de)"]
        return sacre + [f"tokenized BLEU (paper):  {self.tokenized:.2f}  "
                        f"(Moses -l {self.language} tokens, compounds split, multi-bleu)",
                        f"tokenized BLEU (lowercased): {self.tokenized_lowercased:.2f}  "
                        "(the same, multi-bleu -lc: Multi30k papers' number)"]


def bleu_report(hyps: Sequence[str], refs: Sequence[str],
                language: str | None = "de") -> BleuReport:
    """Cased and lowercased sacreBLEU plus the paper's tokenized BLEU, cased and
    lowercased, in ``language`` (None: sacreBLEU only)."""
    check_parallel(hyps, refs)
    hyps, refs = scored(hyps, "translations"), scored(refs, "references")
    cased, cased_sig = sacre_bleu(hyps, refs)
    lower, lower_sig = sacre_bleu(hyps, refs, lowercase=True)
    if language is None:
        return BleuReport(cased, cased_sig, lower, lower_sig, None)
    tokenized = _paper_tokenized(hyps, refs, language)  # once for both tokenized scores
    return BleuReport(cased, cased_sig, lower, lower_sig, language,
                      _multi_bleu(*tokenized, False), _multi_bleu(*tokenized, True))


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
    check_parallel(hyps, refs)
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


def read_translation_and_reference(translation_path: str,
                                   reference_path: str) -> tuple[list[str], list[str]]:
    """Reads both files (strictly: ``read_utf8_lines``) as they are scored
    (``lookalike.scored_pair``: look-alike text normalised alike, with a warning
    naming the file, or refused); different line counts raise BleuInputError
    naming both."""
    hyps, refs = read_utf8_lines(translation_path), read_utf8_lines(reference_path)
    if len(hyps) != len(refs):
        raise BleuInputError(
            f"line counts differ: translation {translation_path} has {len(hyps)} lines, "
            f"reference {reference_path} has {len(refs)}; they must be line-aligned")
    return lookalike.scored_pair(hyps, refs, translation_path, reference_path)
