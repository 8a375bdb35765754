"""Scoring real decodes of a dev sample during training (BLEU, or F1 for parsing).

Teacher-forced loss and accuracy say little about what beam search will
produce; this decodes the first examples of a split with the same code as
``t2t-decoder`` (``decode_lines``, the problem's decode settings, constraint
and postprocessing) and scores them with the problem's metric (``Problem.eval_metric``).
Sources and references are rebuilt from the split's TFRecords, so no raw files
are needed: the reference of an example is its target text after the same
postprocessing as a decoded line.
"""
from __future__ import annotations

from typing import Any

from t2t_lite.data.problem import Problem
from t2t_lite.decoding.search_decoder import BeamSearchDecoder
from t2t_lite.decoding.decoder import decode_hparams, decode_with_hparams
from t2t_lite.metrics.scoring import score_decodes


class DevDecodeScorer:
    """``scorer(model)`` decodes ``num_examples`` of ``split`` and returns the score lines."""

    def __init__(self, problem: Problem, data_dir: str, split: str = "dev",
                 num_examples: int = 100, decode_overrides: str = ""):
        self.problem = problem
        self.hparams = decode_hparams(decode_overrides, problem.decode_hparams_defaults(),
                                      source="--decode_eval_hparams")
        self.hparams.return_beams = False  # one hypothesis a line, to score
        encoders = problem.feature_encoders(data_dir)
        self.encoder, self.target_encoder = encoders["inputs"], encoders["targets"]
        self.constraint = problem.decode_constraint(data_dir)
        self.sources: list[str] = []
        self.references: list[str] = []
        for example in problem.dataset(split, data_dir).take(num_examples):
            source = self.encoder.decode(example["inputs"].numpy().tolist())
            target = self.target_encoder.decode(example["targets"].numpy().tolist())
            self.sources.append(source)
            self.references.append(problem.postprocess_decode(source, target))
        if not self.sources:
            raise ValueError(f"the {split} split of {problem.name} in {data_dir} is empty: "
                             "nothing to decode for the dev score")
        self._search: BeamSearchDecoder | None = None

    def __call__(self, model: Any) -> list[str]:
        if self._search is None or self._search.model is not model:  # traced once per model
            self._search = BeamSearchDecoder(model, self.hparams.beam_size, self.hparams.alpha,
                                             constraint=self.constraint)
        outputs = decode_with_hparams(self.hparams, self.sources, self.encoder, self._search,
                                      self.problem.postprocess_decode, self.target_encoder)
        return score_decodes(self.problem, outputs, self.references)
