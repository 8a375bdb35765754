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
import logging
import os
from typing import Any, Mapping

from t2t_lite.contracts.decode_constraint import DecodeConstraint
from t2t_lite.data.problem import Problem
from t2t_lite.decoding.sampling import SAMPLING_METHODS, SamplingOptions
from t2t_lite.decoding.search_options import STOP_RULES, SearchOptions
from t2t_lite.decoding.shortlist import Shortlist
from t2t_lite.hparam import HParams, HParamsError, Range, at_least, between, one_of, positive

logger = logging.getLogger(__name__)

BATCH_TYPES = ("sentences", "tokens")

# Each key with its range (t2t_lite/hparam.py).
DECODE_DEFAULTS = {
    "beam_size": at_least(1, 4),      # 1 = greedy
    "alpha": at_least(0, 0.6),        # length penalty exponent: ((5 + length) / 6) ** alpha
    # When beam search stops an input (t2t_lite.decoding.search_options.STOP_RULES):
    # "beam_finished" (fairseq's and CTranslate2's) or "exact" (tensor2tensor's).
    "stop_rule": one_of(*STOP_RULES),
    "extra_length": at_least(0, 50),  # max decode length = input length + extra_length
    "batch_size": at_least(1, 32),    # per search call: lines, or tokens (batch_type)
    # What batch_size counts: "sentences", or "tokens" (a batch's lines times its longest
    # input, padding included, as fairseq's --max-tokens and CTranslate2's batch_type).
    "batch_type": one_of(*BATCH_TYPES),
    # A file is read and decoded this many lines at a time (sorted by length within),
    # so memory does not grow with the file; each window decoded is kept until the
    # output is whole, so an interrupted decode goes on from the first missing one.
    "read_window_lines": at_least(1, 4096),
    # Batches searched at once, each on its own thread (CTranslate2's inter_threads);
    # 0: one a core, at most MAX_AUTO_PARALLEL_BATCHES. t2t-decoder then gives each
    # search one thread of its own (parallel_threads). Outputs are the same either way.
    "parallel_batches": at_least(0, 0),
    "return_beams": False,            # write every beam, tab-separated, best first
    "write_beam_scores": False,       # follow each output (each beam) with a tab and its score
    # Truncate longer inputs (EOS included); 0 = the model's max_length.
    "max_input_length": at_least(0, 0),
    # Under XLA (model hparam xla=true) inputs are padded to a multiple of this many
    # tokens and every batch to batch_size lines: one compiled program per bucket.
    "length_bucket": at_least(1, 16),
    # (t2t_lite.decoding.sampling) "argmax": search as beam_size says; "random": draw
    # each token from the model's distribution (beam_size=1), shaped by the keys below.
    "sampling_method": one_of(*SAMPLING_METHODS),
    "sampling_temp": positive(1.0),   # the scores' divisor: < 1 sharper, > 1 flatter
    # Draw among the k most probable tokens only (tensor2tensor's key; 0 = every token).
    "sampling_keep_top_k": Range(0, lambda v: v >= 0, ">= 0 (0: every token)"),
    # Then among the most probable tokens holding this much of that mass (nucleus).
    "sampling_keep_top_p": Range(1.0, lambda v: 0 < v <= 1, "in (0, 1] (1: every token)"),
    "num_samples": at_least(1, 1),    # samples an input, tab-separated in draw order
    # The samples are a function of this seed and each input's line number.
    "sampling_seed": between(0, 2**31 - 1, 1),
}

# parallel_batches=0 searches this many batches at once at most (one a core): each
# batch in flight holds its own decode state.
MAX_AUTO_PARALLEL_BATCHES = 4
# Settings that change how fast a decode runs, never what it writes: not part of the
# identity an interrupted decode's kept windows are checked against.
SPEED_ONLY_SETTINGS = ("parallel_batches",)


def available_cores() -> int:
    """The CPUs this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (
        os.cpu_count() or 1)


# The keys that shape sampling_method=random, with their DecodeSettings fields.
SAMPLING_KEYS = {"sampling_temp": "temperature", "sampling_keep_top_k": "top_k",
                 "sampling_keep_top_p": "top_p", "num_samples": "num_samples",
                 "sampling_seed": "seed"}
# Keys that sampling does not read, with why (refused away from their defaults).
SAMPLING_UNUSED = {
    "alpha": "a sample is scored by its log-probability, with no length penalty",
    "stop_rule": "sampling runs until every sample has ended",
}


def _sampling_rule(hparams: HParams) -> str | None:
    """The complaint about a sampling key that means nothing with the others."""
    if hparams.sampling_method == "random":
        if hparams.beam_size > 1:
            return (f"sampling_method=random draws each token, it does not search: set "
                    f"beam_size=1, not {hparams.beam_size} (num_samples=N draws N samples "
                    "an input)")
        if hparams.return_beams:
            return ("return_beams writes a beam search's beams; sampling_method=random "
                    "writes its num_samples samples: leave return_beams out")
        return None
    for key in SAMPLING_KEYS:
        if hparams.values()[key] != DECODE_DEFAULTS[key].default:
            return (f"{key}={hparams.values()[key]} shapes sampling_method=random only, and "
                    "this decode searches (sampling_method=argmax): add "
                    f"sampling_method=random,beam_size=1, or leave {key} out")
    return None


def decode_hparams(overrides: str = "", defaults: dict[str, Any] | None = None,
                   source: str = "--decode_hparams") -> HParams:
    """Decode settings: library defaults, then a problem's ``defaults``, then ``overrides``.

    ``overrides`` is the user's ``"beam_size=8,alpha=1.0"`` string, from the flag
    ``source``. Unknown keys, values of the wrong type and values out of range
    (NaN and infinities included) raise ``HParamsError`` naming the key and source.
    """
    hparams = HParams(**DECODE_DEFAULTS).add_rule(_sampling_rule)
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
    batch_type: str        # BATCH_TYPES: what batch_size counts
    read_window_lines: int
    parallel_batches: int  # 0: one a core, at most MAX_AUTO_PARALLEL_BATCHES
    return_beams: bool
    write_beam_scores: bool
    max_input_length: int  # 0: the model's max_length (``InputRules.for_model``)
    length_bucket: int
    sampling_method: str   # sampling.SAMPLING_METHODS
    sampling_temp: float
    sampling_keep_top_k: int
    sampling_keep_top_p: float
    num_samples: int
    sampling_seed: int
    xla: bool              # compile the search with XLA, on length-bucketed batches

    @classmethod
    def from_hparams(cls, decode: HParams, run: HParams) -> "DecodeSettings":
        """The settings of ``decode`` (``decode_hparams``) for a model with hparams ``run``."""
        return cls(**decode.values(), xla=run.xla)

    @property
    def sampling(self) -> SamplingOptions | None:
        """What ``sampling_method=random`` draws from; None when the decode searches."""
        if self.sampling_method != "random":
            return None
        return SamplingOptions(**{field: getattr(self, key)
                                  for key, field in SAMPLING_KEYS.items()})

    def search_options(self, constraint: DecodeConstraint | None = None,
                       shortlist: Shortlist | None = None) -> SearchOptions:
        """The search these settings ask for, under a problem's ``constraint``, ranking
        each batch's ``shortlist`` only if given."""
        return SearchOptions(beam_size=self.beam_size, alpha=self.alpha,
                             stop_rule=self.stop_rule, sampling=self.sampling,
                             constraint=constraint, shortlist=shortlist)

    @property
    def batches_at_once(self) -> int:
        """How many batches are searched at once (``parallel_batches``, 0 resolved)."""
        return self.parallel_batches or min(available_cores(), MAX_AUTO_PARALLEL_BATCHES)

    @property
    def parallel_threads(self) -> tuple[int, int]:
        """(intra-op, inter-op) thread-pool sizes for ``batches_at_once`` searches on
        this machine's cores: each search's ops on cores of its own (at one search,
        TensorFlow's choice: 0, 0). On 2 cores two single-threaded searches decode a
        file 1.8x as fast as one search on both (docs/SPEED.md): a small model's ops
        are too small to split across threads."""
        at_once = self.batches_at_once
        if at_once == 1:
            return 0, 0
        return max(1, available_cores() // at_once), at_once

    @property
    def every_hypothesis(self) -> bool:
        """Output lines hold every hypothesis: every beam, or every sample."""
        return self.return_beams or self.sampling_method == "random"

    @property
    def fielded(self) -> bool:
        """Output lines hold tab-separated fields (every beam or sample, or text and
        score)."""
        return self.return_beams or self.write_beam_scores or self.num_samples > 1

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
    from its default is refused (HParamsError), not dropped without a word; so are
    the keys sampling does not read (``SAMPLING_UNUSED``) under sampling_method=random.
    """
    defaults = problem.decode_hparams_defaults()
    chosen = decode_hparams(overrides, defaults, source)
    if chosen.sampling_method == "random":
        unused = {**SAMPLING_UNUSED, **(unused or {})}
    plain = decode_hparams("", defaults).values() if unused else {}
    for key, reason in (unused or {}).items():
        if chosen.values()[key] != plain[key]:
            raise HParamsError(f"{source}: {key} changes nothing here ({reason}); "
                               "leave it out")
    return DecodeSettings.from_hparams(chosen, run)


def proportioned(settings: DecodeSettings, vocab_size: int, max_length: int) -> DecodeSettings:
    """``settings`` capped where a request cannot help, each cap said in one warning.

    A beam holds distinct hypotheses, and a step extends each by one of the
    ``vocab_size`` target ids but PAD: wider than ``vocab_size - 1`` its extra rows
    hold nothing the first step can fill, while the search's memory grows with it
    (fairseq caps it the same way). A decode runs for its input's length plus
    ``extra_length`` tokens; past ``max_length`` extra tokens it is longer than any
    target the model was trained on (training leaves longer ones out), so a model
    that has not stopped by then only repeats itself, for steps that cost more each.
    """
    changes = {}
    widest = max(vocab_size - 1, 1)
    if settings.beam_size > widest:
        logger.warning("beam_size=%d is wider than the %d target ids a hypothesis can "
                       "continue with (a vocabulary of %d, PAD never chosen): searching with "
                       "beam_size=%d", settings.beam_size, widest, vocab_size, widest)
        changes["beam_size"] = widest
    if settings.extra_length > max_length:
        logger.warning("extra_length=%d would decode past any target the model was trained "
                       "on (max_length=%d): decoding at most the input's length + %d tokens",
                       settings.extra_length, max_length, max_length)
        changes["extra_length"] = max_length
    return dataclasses.replace(settings, **changes) if changes else settings
