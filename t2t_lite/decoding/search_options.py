"""``SearchOptions``: everything a search of one model is asked to do, in one object.

The search (``beam_search.search``), its compiled form (``BeamSearchDecoder``) and
its in-graph form (an export's) take these rather than a row of arguments, as
Flax's WMT example passes its config: a new way to steer the search is a field
here, checked here, and reaches every caller through ``DecodeSettings``
(``settings.search_options``). Frozen and compared by value: a ``tf.function``
given options equal to ones it has traced with (and that are still alive, as a
``BeamSearchDecoder``'s are) does not trace again.
"""
from __future__ import annotations

import dataclasses

from t2t_lite.contracts.decode_constraint import DecodeConstraint
from t2t_lite.contracts.reserved_ids import EOS_ID
from t2t_lite.decoding.sampling import SamplingOptions
from t2t_lite.decoding.shortlist import Shortlist

# When beam search stops searching an input (the decode hparam stop_rule; the rules
# are described in beam_search.py), the default first: "beam_finished" (fairseq's and
# CTranslate2's; on a real file 1.3x faster than "exact" with BLEU equal or above,
# docs/SPEED.md) or "exact" (tensor2tensor's bound).
STOP_RULES = ("beam_finished", "exact")


def check_stop_rule(stop_rule: str) -> None:
    """Refuses a ``stop_rule`` that is not one of ``STOP_RULES``, naming them."""
    if stop_rule not in STOP_RULES:
        raise ValueError(f"unknown stop_rule {stop_rule!r}; the rules are "
                         f"{', '.join(STOP_RULES)}")


@dataclasses.dataclass(frozen=True)
class SearchOptions:
    """beam_size 1 is greedy; ``sampling`` draws instead of searching (beam_size 1);
    ``constraint`` (a problem's ``decode_constraint``) masks the tokens each
    hypothesis may produce; ``allow_eos=False`` decodes every hypothesis to the full
    length (speed measurements; no constraint then); ``stop_rule``: ``STOP_RULES``;
    ``shortlist`` ranks only each batch's shortlisted target ids (``shortlist``)."""
    beam_size: int = 4
    alpha: float = 0.6
    stop_rule: str = STOP_RULES[0]
    constraint: DecodeConstraint | None = None
    sampling: SamplingOptions | None = None
    eos_id: int = EOS_ID
    allow_eos: bool = True
    shortlist: Shortlist | None = None

    def __post_init__(self) -> None:
        if (not isinstance(self.beam_size, int) or isinstance(self.beam_size, bool)
                or self.beam_size < 1):
            raise ValueError(f"beam_size must be a positive integer, got {self.beam_size!r}")
        if self.sampling and self.beam_size != 1:
            raise ValueError(f"sampling draws each token, it does not search: beam_size "
                             f"must be 1, got {self.beam_size}")
        if self.constraint is not None and not self.allow_eos:
            raise ValueError("allow_eos=False cannot be combined with a decoding constraint: "
                             "the constraint decides where EOS may go")
        if self.shortlist is not None and (self.sampling or self.constraint is not None):
            raise ValueError(f"{self.shortlist.description} shortlists a search's target "
                             "ids; it cannot be combined with "
                             f"{'sampling' if self.sampling else 'a decoding constraint'} "
                             "(which reads every id): leave one out")
        check_stop_rule(self.stop_rule)
        object.__setattr__(self, "alpha", float(self.alpha))
