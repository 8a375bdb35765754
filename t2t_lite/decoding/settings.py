"""Decode settings: the decode hparams, checked, and one typed ``DecodeSettings``.

The user's ``--decode_hparams`` string (tensor2tensor's names) is parsed once,
over the library defaults and the problem's, into an ``HParams`` with declared
ranges (``t2t_lite/hparam.py``), then frozen into ``DecodeSettings``, together
with whether the run's model decodes compiled (its hparam ``xla``). Every
decoding caller (t2t-decoder, the dev-set scorer, the exporter, t2t-attention,
the benchmarks) reads its settings from one of these, never from the hparams.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Mapping

from t2t_lite.data.problem import Problem
from t2t_lite.decoding.beam_search import STOP_RULES
from t2t_lite.hparam import HParams, HParamsError, at_least, one_of

# Each key with its range (t2t_lite/hparam.py).
DECODE_DEFAULTS = {
    "beam_size": at_least(1, 4),      # 1 = greedy
    "alpha": at_least(0, 0.6),        # length penalty exponent: ((5 + length) / 6) ** alpha
    # When beam search stops an input (t2t_lite.decoding.beam_search.STOP_RULES):
    # "exact" (tensor2tensor's) or "beam_finished" (fairseq's and CTranslate2's).
    "stop_rule": one_of(*STOP_RULES),
    "extra_length": at_least(0, 50),  # max decode length = input length + extra_length
    "batch_size": at_least(1, 32),    # lines per search call
    "return_beams": False,            # write every beam, tab-separated, best first
    "write_beam_scores": False,       # follow each output (each beam) with a tab and its score
    # Truncate longer inputs (EOS included); 0 = the model's max_length.
    "max_input_length": at_least(0, 0),
    # Under XLA (model hparam xla=true) inputs are padded to a multiple of this many
    # tokens and every batch to batch_size lines: one compiled program per bucket.
    "length_bucket": at_least(1, 16),
}


def decode_hparams(overrides: str = "", defaults: dict[str, Any] | None = None,
                   source: str = "--decode_hparams") -> HParams:
    """Decode settings: library defaults, then a problem's ``defaults``, then ``overrides``.

    ``overrides`` is the user's ``"beam_size=8,alpha=1.0"`` string, from the flag
    ``source``. Unknown keys, values of the wrong type and values out of range
    (NaN and infinities included) raise ``HParamsError`` naming the key and source.
    """
    hparams = HParams(**DECODE_DEFAULTS)
    hparams.override_from_dict(defaults or {}, source="the problem's decode defaults")
    return hparams.parse(overrides, source=source)


@dataclasses.dataclass(frozen=True)
class DecodeSettings:
    """One decode's settings (the keys of ``DECODE_DEFAULTS``, then the run's ``xla``)."""
    beam_size: int
    alpha: float
    stop_rule: str
    extra_length: int
    batch_size: int
    return_beams: bool
    write_beam_scores: bool
    max_input_length: int  # 0: the model's max_length (``InputRules.for_model``)
    length_bucket: int
    xla: bool              # compile the search with XLA, on length-bucketed batches

    @classmethod
    def from_hparams(cls, decode: HParams, run: HParams) -> "DecodeSettings":
        """The settings of ``decode`` (``decode_hparams``) for a model with hparams ``run``."""
        return cls(**decode.values(), xla=run.xla)

    @property
    def fielded(self) -> bool:
        """Output lines hold tab-separated fields (every beam, or text and score)."""
        return self.return_beams or self.write_beam_scores

    @property
    def padded_length_bucket(self) -> int:
        """The length inputs are padded to a multiple of: ``length_bucket`` under XLA,
        which compiles a program per shape; else 0 (batches as long as their longest line)."""
        return self.length_bucket if self.xla else 0


def decode_settings(overrides: str, problem: Problem, run: HParams,
                    source: str = "--decode_hparams",
                    unused: Mapping[str, str] | None = None) -> DecodeSettings:
    """``problem``'s decode settings with the user's ``overrides`` (from the flag
    ``source``), for a model with hparams ``run``.

    ``unused`` maps the keys a caller does not apply to the reason: one set away
    from its default is refused (HParamsError), not dropped without a word.
    """
    defaults = problem.decode_hparams_defaults()
    chosen = decode_hparams(overrides, defaults, source)
    plain = decode_hparams("", defaults).values() if unused else {}
    for key, reason in (unused or {}).items():
        if chosen.values()[key] != plain[key]:
            raise HParamsError(f"{source}: {key} changes nothing here ({reason}); "
                               "leave it out")
    return DecodeSettings.from_hparams(chosen, run)
