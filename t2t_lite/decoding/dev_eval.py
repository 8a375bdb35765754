"""Scoring real decodes of a dev sample during training (BLEU, or F1 for parsing).

Teacher-forced loss and accuracy say little about what beam search will
produce; this decodes the first examples of a split with the same code as
``t2t-decoder`` (``build_decoding`` and ``decode_lines``: the problem's decode
settings, constraint, input rules, XLA as the run says, and postprocessing) and
scores them with the problem's metric (``Problem.eval_metric``), and first by the
metric that ranks the run's checkpoints when that is another (chrF, TER). Sources and
references are rebuilt from the split's TFRecords, so no raw files are needed:
the reference of an example is its target text after the same postprocessing
as a decoded line.
"""
from __future__ import annotations

import dataclasses
from typing import Any

from t2t_lite.data.problem import Problem
from t2t_lite.decoding.decoder import decode_lines
from t2t_lite.decoding.factory import Decoding, build_decoding
from t2t_lite.decoding.settings import DecodeSettings
from t2t_lite.metrics import lookalike
from t2t_lite.metrics.scoring import headline_figure, score_decodes


class DevDecodeScorer:
    """``scorer(model)`` decodes ``num_examples`` of ``split`` and returns the score lines:
    ``metric``'s (default: the problem's own) first, then the problem's own."""

    def __init__(self, problem: Problem, data_dir: str, settings: DecodeSettings,
                 split: str = "dev", num_examples: int = 100, metric: str | None = None):
        self.problem = problem
        self.metric = metric or problem.eval_metric
        self.data_dir = data_dir
        self.split = split
        # One hypothesis a line, alone, to score.
        self.settings = dataclasses.replace(settings, return_beams=False,
                                            write_beam_scores=False)
        encoders = problem.feature_encoders(data_dir)
        self.sources: list[str] = []
        self.references: list[str] = []
        for example in problem.dataset(split, data_dir).take(num_examples):
            source = encoders["inputs"].decode(example["inputs"].numpy().tolist())
            target = encoders["targets"].decode(example["targets"].numpy().tolist())
            self.sources.append(source)
            self.references.append(problem.postprocess_decode(source, target))
        if not self.sources:
            raise ValueError(f"the {split} split of {problem.name} in {data_dir} is empty: "
                             "nothing to decode for the dev score")
        # Normalised (and warned about) once, not at every evaluation.
        self.references = lookalike.scored_lines(self.references, f"the {split} references")
        self._decoding: Decoding | None = None
        self._model: Any = None

    def __call__(self, model: Any) -> list[str]:
        if model is not self._model:  # the search is traced once per model
            self._decoding = build_decoding(model, self.problem, self.data_dir, self.settings)
            self._model = model
        return self.report(decode_lines(self.sources, self._decoding))

    def report(self, outputs: list[str]) -> list[str]:
        """The score lines of ``outputs`` (line-aligned with the sample): ``metric``'s,
        then the problem's own when that is another."""
        metrics = dict.fromkeys([self.metric, self.problem.eval_metric])  # in order, once
        references_name = f"the {self.split} references"
        # Normalised (and warned about) once: each metric's own pass then changes nothing.
        outputs, _ = lookalike.scored_pair(outputs, self.references, "the decoded lines",
                                           references_name)
        return [line for metric in metrics
                for line in score_decodes(self.problem, outputs, self.references,
                                          references_name=references_name, metric=metric)]

    def figure(self, report: list[str]) -> float:
        """The headline figure of a report of ``__call__`` (what the best is chosen by)."""
        return headline_figure(report, self.metric)

    def check_figure(self) -> None:
        """Refuses a metric whose report has no headline figure, before any training:
        the references scored against themselves must give one."""
        self.figure(self.report(self.references))
