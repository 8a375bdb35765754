"""What every decode does to a line on its way in and out: one statement of the rules.

A line's ids are cut to ``max_input_length`` (EOS included) and end in EOS; a
decode runs for at most the input's length plus ``extra_length`` tokens, never
past the positions a model learned; a decoded text's line breaks become spaces,
trailing ones dropped, so each input keeps exactly one output line.

``InputRules`` holds the numbers, resolved once for a model
(``InputRules.for_model``). This module is their Python implementation
(t2t-decoder, the dev-set scorer, t2t-attention, ``--score_file``); the
exported graph's TensorFlow implementation (``t2t_lite/export/graph_rules.py``)
reads the same fields, so the two cannot drift apart.
"""
from __future__ import annotations

import dataclasses
import logging
import re
from typing import ClassVar

from t2t_lite.contracts.reserved_ids import EOS_ID
from t2t_lite.data.encoders import TextEncoder

logger = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True)
class InputRules:
    """The limits one model decodes under."""
    max_input_length: int       # the longest input, EOS included; 0: no limit
    max_positions: int | None   # the longest input or decode it can represent; None: any
    # str.splitlines()'s line boundaries ("\r\n" is one), which become spaces.
    line_break_chars: ClassVar[str] = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"
    line_break: ClassVar[str] = f"\r\n|[{line_break_chars}]"

    @classmethod
    def for_model(cls, max_input_length: int, max_length: int,
                  max_positions: int | None) -> "InputRules":
        """The rules for a model that trained on ``max_length`` tokens and has
        ``max_positions``: inputs are cut at the decode hparam ``max_input_length``,
        else at ``max_length`` (an unlimited length would let one long line take all
        the memory; self-attention grows with its square), never past its positions."""
        limit = max_input_length or max_length
        return cls(min(limit, max_positions or limit), max_positions)

    def decode_length(self, max_decode_length: int) -> int:
        """The most tokens a decode asked for ``max_decode_length`` (its input's length
        plus the decode hparam ``extra_length``) may run for."""
        return min(max_decode_length, self.max_positions or max_decode_length)

    def room(self) -> int:
        """The most tokens any decode may run for (the model's positions)."""
        return self.decode_length(2 ** 31 - 1)

    def padded_length(self, length: int, bucket: int) -> int:
        """``length`` rounded up to a multiple of ``bucket`` (0: not rounded), within
        the model's positions."""
        if bucket:
            length = -(-length // bucket) * bucket
        return min(length, self.max_positions or length)

    def one_line(self, text: str) -> str:
        """``text`` with its line breaks as spaces, trailing ones dropped."""
        return re.sub(self.line_break, " ", text.rstrip(self.line_break_chars))


def encode_input(text: str, encoder: TextEncoder, max_input_length: int) -> tuple[list[int], bool]:
    """``text``'s ids and EOS, cut to ``max_input_length`` ids (0: no limit), and whether
    it was cut."""
    ids = encoder.encode(text)
    cut = bool(max_input_length) and len(ids) > max_input_length - 1
    return (ids[:max_input_length - 1] if cut else ids) + [EOS_ID], cut


def warn_cut(source: str, cut: int, total: int, max_input_length: int) -> None:
    """One warning for all the lines of ``source`` that ``encode_input`` cut."""
    if cut:
        logger.warning(f"{source}: {cut} of {total} input lines are longer than the "
                       f"{max_input_length - 1} tokens (and EOS) this model takes (the decode "
                       f"hparam max_input_length, else the model's max_length); they were "
                       f"cut to their first {max_input_length - 1} tokens")
