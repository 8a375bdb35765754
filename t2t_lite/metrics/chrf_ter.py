"""chrF and TER, the two other scores of sacreBLEU that MT papers and WMT report.

chrF (Popović 2015) is the F-score of character n-grams (sacreBLEU's default: chrF2,
n-grams of 1-6 characters, recall weighted twice, no word n-grams); it ranks systems
closer to human judgement than BLEU does, above all for morphologically rich targets.
TER (Snover et al. 2006) is the edits (insertions, deletions, substitutions, shifts of
word runs) that turn the output into the reference, per reference word, in percent:
*lower* is better. Both are sacreBLEU's own code on detokenized text (its defaults:
chrF cased, TER lowercased with its tercom tokenizer), each with its signature, so the
number is the one other toolkits report. Both sides are scored as
``t2t_lite.metrics.lookalike`` normalises them, as BLEU's are (``bleu.scored``).
"""
from __future__ import annotations

import dataclasses
from typing import Sequence

from sacrebleu.metrics import CHRF, TER

from t2t_lite.metrics.bleu import check_parallel, scored


@dataclasses.dataclass(frozen=True)
class Score:
    """One corpus score and the sacreBLEU signature that reproduces it."""
    name: str
    value: float
    signature: str

    def line(self) -> str:
        return f"{self.name + ':':<24} {self.value:.2f}  {self.signature}"


def _corpus(metric: CHRF | TER, name: str, hyps: Sequence[str],
            refs: Sequence[str]) -> Score:
    check_parallel(hyps, refs)
    hyps, refs = scored(hyps, "translations"), scored(refs, "references")
    value = metric.corpus_score(list(hyps), [list(refs)]).score
    return Score(name, value, str(metric.get_signature()))


def chrf(hyps: Sequence[str], refs: Sequence[str]) -> Score:
    """Corpus chrF2 (sacreBLEU's CHRF defaults): higher is better."""
    return _corpus(CHRF(), "chrF2", hyps, refs)


def ter(hyps: Sequence[str], refs: Sequence[str]) -> Score:
    """Corpus TER (sacreBLEU's TER defaults), in percent: lower is better."""
    return _corpus(TER(), "TER (lower is better)", hyps, refs)
