"""Decodes scored by the metric their problem names.

A problem says how its decodes are scored by name (``Problem.eval_metric``,
"bleu" unless it says otherwise) with keyword options
(``Problem.eval_metric_options()``, e.g. the target language); ``t2t-decoder
--decode_reference`` and the dev-decode scorer look the name up here. So the
data layer never imports a metric, and a user's own metric is one decorator
away (``@register_metric("my_metric")`` in their ``--t2t_usr_dir``): a
function from (hypotheses, references, **options) to printable report lines,
the first of which carries the headline figure. Higher is better unless the
function says otherwise (``lower_is_better``, as TER does).

Besides the problem's own metric, the scores of any text (``TEXT_METRICS``: BLEU,
chrF, TER) can rank a run's checkpoints (``t2t-trainer --best_checkpoint_metric=chrf``):
the dev decodes are then scored by it as well as by the problem's own; a metric takes
the problem's options (BLEU's target language) only when it is the problem's own.
"""
from __future__ import annotations

import math
import re
from typing import Callable, Sequence

from t2t_lite import registry
from t2t_lite.data.problem import Problem
from t2t_lite.metrics import lookalike
from t2t_lite.metrics import chrf_ter
from t2t_lite.metrics.bleu import bleu_report
from t2t_lite.parsing.evalb import evalb, format_report
from t2t_lite.parsing.trees import parse_tree_line
from t2t_lite.registry import register_metric


def score_decodes(problem: Problem, hypotheses: Sequence[str], references: Sequence[str],
                  hypotheses_name: str = "the decoded lines",
                  references_name: str = "the references",
                  metric: str | None = None) -> list[str]:
    """The report of ``metric`` (default: ``problem``'s own) on line-aligned hypotheses
    and references, both first normalised alike by ``lookalike.scored_pair`` (every
    metric, a user's too, scores text a reader cannot tell apart the same; the warnings
    and a refusal name the sides by ``hypotheses_name`` and ``references_name``, e.g.
    their files)."""
    metric = metric or problem.eval_metric
    scorer = registry.metrics[metric]
    hypotheses, references = lookalike.scored_pair(hypotheses, references,
                                                   hypotheses_name, references_name)
    options = problem.eval_metric_options() if metric == problem.eval_metric else {}
    return scorer(hypotheses, references, **options)


def lower_is_better(metric: str) -> bool:
    """Whether ``metric``'s headline figure improves by going down (TER)."""
    return bool(getattr(registry.metrics[metric], "lower_is_better", False))


def _lower_is_better(scorer: Callable) -> Callable:
    scorer.lower_is_better = True
    return scorer


# Metrics that score any text, whatever the problem's own metric is.
TEXT_METRICS = ("bleu", "chrf", "ter")

# A report's figures are decimals ("F1 87.50": the 1 of F1 is no figure); "nan" is one.
FIGURE = re.compile(r"[-+]?\d+\.\d+|\bnan\b", re.IGNORECASE)


def headline_figure(report: Sequence[str], metric: str) -> float:
    """The first decimal number on ``report``'s first line (NaN for "nan"): what
    ``metric``'s report ranks by; ValueError naming the line when it has none."""
    match = FIGURE.search(report[0]) if report else None
    if not match:
        raise ValueError(f"metric {metric}'s report begins {report[0] if report else ''!r}, "
                         "which holds no decimal figure to rank checkpoints by; a metric's "
                         "first report line carries its headline figure (e.g. 'BLEU 27.30')")
    return math.nan if match.group().lower() == "nan" else float(match.group())


@register_metric("bleu")
def bleu(hypotheses: list[str], references: list[str], language: str = "de") -> list[str]:
    """sacreBLEU lowercased and cased, and the paper's tokenized BLEU in ``language``."""
    return bleu_report(hypotheses, references, language=language).lines()


@register_metric("chrf")
def chrf(hypotheses: list[str], references: list[str]) -> list[str]:
    """sacreBLEU's chrF2 (``chrf_ter.chrf``)."""
    return [chrf_ter.chrf(hypotheses, references).line()]


@register_metric("ter")
@_lower_is_better
def ter(hypotheses: list[str], references: list[str]) -> list[str]:
    """sacreBLEU's TER (``chrf_ter.ter``): lower is better."""
    return [chrf_ter.ter(hypotheses, references).line()]


@register_metric("evalb")
def evalb_report(hypotheses: list[str], references: list[str]) -> list[str]:
    """The EVALB (COLLINS.prm) report of tree lines against gold tree lines, after a
    headline (F1 of all sentences): EVALB's own report starts with a section title."""
    gold = [parse_tree_line(line, "references", n) for n, line in enumerate(references, 1)]
    test = [parse_tree_line(line, "hypotheses", n) for n, line in enumerate(hypotheses, 1)]
    result = evalb(gold, test)
    return ([f"F1 {result.all.f1:.2f} (EVALB, COLLINS.prm; {result.all.sentences} sentences)"]
            + format_report(result).splitlines())


@register_metric("sequence_accuracy")
def sequence_accuracy(hypotheses: list[str], references: list[str]) -> list[str]:
    """The share of outputs equal to their reference (whitespace-normalized), the
    algorithmic tasks' figure: a reversal with one symbol wrong is wrong."""
    if len(hypotheses) != len(references):
        raise ValueError(f"{len(hypotheses)} hypotheses but {len(references)} references; "
                         "give one reference line per decoded line")
    right = sum(h.split() == r.split() for h, r in zip(hypotheses, references))
    share = 100.0 * right / len(references) if references else 0.0
    return [f"sequence accuracy {share:.2f}% ({right}/{len(references)})"]
