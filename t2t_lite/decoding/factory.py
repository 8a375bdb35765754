"""The one way to set up decoding: a model (or an ensemble) and a problem, under
``DecodeSettings``, become a ``Decoding``: the compiled search, the input rules,
the codecs and the problem's postprocessing.

t2t-decoder, the dev-set scorer, the exporter, t2t-attention and the benchmarks
all build their search here, so whether a model decodes compiled (the run's
hparam ``xla``), with which constraint and within which input limits never
depends on the caller.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable, Sequence

import numpy as np

from t2t_lite.data.encoders import TextEncoder
from t2t_lite.data.problem import Problem
from t2t_lite.decoding.ensemble import Ensemble
from t2t_lite.decoding.input_rules import InputRules
from t2t_lite.decoding.search_decoder import BeamSearchDecoder
from t2t_lite.decoding.settings import DecodeSettings, proportioned
from t2t_lite.decoding.shortlist import Shortlist
from t2t_lite.decoding.vocabulary_map import VocabularyMap

# int32 inputs [B, S] (each row ending in EOS, PAD-padded), the most tokens to
# decode and each row's line number (what a sampling decode's randomness is keyed
# by) -> (ids [B, beam, L], scores [B, beam]), best beam first (or every sample); and
# optionally keywords prefixes and constraints (``Decoding.__call__``).
SearchFn = Callable[..., tuple[Any, Any]]
# (input line, decoded text) -> output line; e.g. parsing rebuilds a tree over the words.
Postprocess = Callable[[str, str], str]


@dataclasses.dataclass(frozen=True)
class Decoding:
    """Everything that turns input lines into output lines (``t2t_lite.decoding.decoder``)."""
    search: SearchFn            # a BeamSearchDecoder; tests give stand-ins
    settings: DecodeSettings
    rules: InputRules
    encoder: TextEncoder        # encodes the inputs
    target_encoder: TextEncoder  # decodes the outputs (the same object when shared)
    postprocess: Postprocess | None = None

    def __call__(self, inputs: np.ndarray, max_decode_length: int, line_numbers: np.ndarray,
                 **guides: np.ndarray) -> tuple[Any, Any]:
        """The search (a ``SearchFn`` itself), for as many of ``max_decode_length``
        tokens as the model has positions for; ``guides`` (``target_guides.batch_guides``):
        ``prefixes`` (int32 [B, P], PAD-padded target ids) each row's outputs begin
        with, ``constraints`` (int32 [B, N, L]) the phrases they hold."""
        return self.search(inputs, self.rules.decode_length(max_decode_length), line_numbers,
                           **guides)


def build_decoding(model: Any, problem: Problem, data_dir: str, settings: DecodeSettings,
                   members: Sequence[Any] = (), vocabulary_map: str | None = None,
                   map_flag: str = "--vocabulary_map") -> Decoding:
    """The decoding of restored ``model`` (with ``members``: their ensemble, each
    step's distribution the mean of theirs) for ``problem`` (its vocabulary in
    ``data_dir``, its decode constraint and postprocessing) under ``settings``;
    with ``vocabulary_map`` (a file, given by ``map_flag``), each batch's search
    ranks only its shortlist (``t2t_lite.decoding.shortlist``).
    Inputs are cut at ``model``'s max_length unless the settings say otherwise; a
    beam or an extra length beyond what can help is capped (``proportioned``)."""
    decoder_model = Ensemble([model, *members]) if members else model
    encoders = problem.feature_encoders(data_dir)
    settings = proportioned(settings, encoders["targets"].vocab_size, model.hparams.max_length)
    shortlist = None
    if vocabulary_map:
        if settings.xla:
            raise ValueError(f"{map_flag} makes each batch's shortlist as long as its "
                             "tokens need, and a model with xla=true decodes fixed shapes "
                             "only: leave one out")
        shortlist = Shortlist(
            VocabularyMap.read(vocabulary_map, encoders["inputs"], encoders["targets"], map_flag),
            encoders["inputs"].vocab_size, encoders["targets"].vocab_size,
            f"{map_flag}={vocabulary_map}")
    search = BeamSearchDecoder(
        decoder_model, settings.search_options(problem.decode_constraint(data_dir), shortlist),
        jit_compile=settings.xla)
    rules = InputRules.for_model(settings.max_input_length, model.hparams.max_length,
                                 decoder_model.max_positions)
    return Decoding(search, settings, rules, encoders["inputs"], encoders["targets"],
                    problem.postprocess_decode)
