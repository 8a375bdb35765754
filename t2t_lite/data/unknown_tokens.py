"""Tokens of a user's input that a word- or token-level vocabulary cannot represent.

Such a token is encoded as the vocabulary's unknown id, which is normal for
translation with a closed vocabulary and for parsing's word vocabulary, but
worth knowing: the commands that encode a user's text count these tokens and
say once, as a warning, how many there were and where the first ones are.
Byte and subword encoders represent every text, so they never warn.
"""
from __future__ import annotations

import logging

from t2t_lite.data.encoders import TextEncoder

logger = logging.getLogger(__name__)


class UnknownTokens:
    """Counts the unknown tokens of the lines of one source (a file, stdin, a flag).

    ``count`` each line with the encoder that encodes it (the two sides of a
    ``source<TAB>target`` line may have their own), then ``warn`` once.
    """

    def __init__(self, source: str, shown: int = 5):
        self.source = source
        self.shown = shown
        self.tokens = 0
        self.lines = 0       # lines with an unknown token (counted once each, in order)
        self._last_line = 0
        self.first: list[tuple[str, int]] = []   # (token, line) of the first few
        self.unknown_names: set[str] = set()     # what the encoders turned them into

    def count(self, encoder: TextEncoder, text: str, line: int) -> None:
        """Counts the unknown tokens of ``text``, line ``line`` (1-based) of the source."""
        unknown = encoder.unknown_tokens(text)
        if not unknown:
            return
        self.tokens += len(unknown)
        if line != self._last_line:  # a line's two sides are counted as one line
            self.lines, self._last_line = self.lines + 1, line
        self.first += [(token, line) for token in unknown[:self.shown - len(self.first)]]
        self.unknown_names.add(getattr(encoder, "oov_token", "the unknown token"))

    def message(self, outcome: str) -> str | None:
        """The warning (None when every token was known); ``outcome`` says what became
        of them: "decoded", "scored", "drawn"."""
        if not self.tokens:
            return None
        tokens = f"{self.tokens} token{'s' if self.tokens != 1 else ''}"
        lines = f"{self.lines} line{'s' if self.lines != 1 else ''}"
        first = ", ".join(f"{token!r} line {line}" for token, line in self.first)
        more = ", ..." if self.tokens > len(self.first) else ""
        return (f"{self.source}: {tokens} in {lines} {'is' if self.tokens == 1 else 'are'} "
                f"not in the vocabulary (first: {first}{more}); they were {outcome} as "
                f"{' / '.join(sorted(self.unknown_names))}")

    def warn(self, outcome: str) -> None:
        """Logs ``message(outcome)`` as a warning, if there is one."""
        message = self.message(outcome)
        if message:
            logger.warning(message)
