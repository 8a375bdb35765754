"""Text <-> integer id encoders shared by every problem and model.

Ids 0 and 1 are reserved in every vocabulary (``t2t_lite.contracts.reserved_ids``):
``PAD_ID`` pads batches (and is the decoder's start symbol), ``EOS_ID`` ends
each sequence. ``encode`` never appends EOS (the problem does); ``decode``
stops at the first EOS and drops padding, so a model's raw output can be
decoded directly.

An encoder is saved as a vocabulary file with ``store_to_file`` and read back
with the class's ``load_from_file``; other encoders (e.g. subwords) fit behind
the same small interface.
"""
from __future__ import annotations

import abc
import collections
from typing import Sequence

from t2t_lite.contracts.reserved_ids import EOS_ID, NUM_RESERVED_IDS, PAD_ID

RESERVED_TOKENS = ("<pad>", "<EOS>")  # the names of ids 0 and 1 in token vocabularies

_BYTE_VOCAB_HEADER = "<byte_text_encoder>"


def trim_ids(ids: Sequence[int]) -> list[int]:
    """The ids before the first EOS, without PAD: the content ``decode`` turns into text."""
    content = []
    for token_id in ids:
        token_id = int(token_id)
        if token_id == EOS_ID:
            break
        if token_id != PAD_ID:
            content.append(token_id)
    return content


class TextEncoder(abc.ABC):
    """Maps text to ids in ``[0, vocab_size)`` and back."""

    @property
    @abc.abstractmethod
    def vocab_size(self) -> int:
        """Number of ids, the reserved ones included."""

    @abc.abstractmethod
    def encode(self, text: str) -> list[int]:
        """Ids for ``text``, without EOS."""

    @abc.abstractmethod
    def decode(self, ids: Sequence[int]) -> str:
        """Text for ``ids``, stopping at the first EOS and dropping PAD."""

    def token_strings(self, ids: Sequence[int]) -> list[str]:
        """One readable string per id (a subword piece, a token, a byte), reserved ids
        as ``<pad>`` / ``<EOS>``: labels for pictures, not text to join."""
        return [RESERVED_TOKENS[i] if i < NUM_RESERVED_IDS else self._token_string(i)
                for i in map(int, ids)]

    def _token_string(self, token_id: int) -> str:
        """The string of one non-reserved id (encoders may show more, e.g. pieces)."""
        return self.decode([token_id])

    def unknown_tokens(self, text: str) -> list[str]:
        """The tokens of ``text`` that ``encode`` cannot represent (it maps them to an
        unknown id), in order; none here: bytes, and subwords with byte fallback,
        spell any text."""
        return []

    @abc.abstractmethod
    def store_to_file(self, path: str) -> None:
        """Writes the vocabulary so that ``load_from_file(path)`` rebuilds this encoder."""

    @classmethod
    @abc.abstractmethod
    def load_from_file(cls, path: str) -> "TextEncoder":
        """Reads an encoder written by ``store_to_file``."""


def _read_lines(path: str) -> list[str]:
    try:
        with open(path, encoding="utf-8") as f:
            return f.read().splitlines()
    except FileNotFoundError:
        raise FileNotFoundError(f"vocabulary file {path} does not exist; generate the "
                                "problem's data (t2t-datagen) first") from None


class ByteTextEncoder(TextEncoder):
    """UTF-8 bytes, each shifted up by ``NUM_RESERVED_IDS``: no vocabulary to learn."""

    @property
    def vocab_size(self) -> int:
        return 2**8 + NUM_RESERVED_IDS

    def encode(self, text: str) -> list[int]:
        return [byte + NUM_RESERVED_IDS for byte in text.encode("utf-8")]

    def decode(self, ids: Sequence[int]) -> str:
        content = trim_ids(ids)
        bad = [i for i in content if not NUM_RESERVED_IDS <= i < self.vocab_size]
        if bad:
            raise ValueError(f"ids {bad[:5]} are outside the byte vocabulary "
                             f"[0, {self.vocab_size})")
        # A model may emit an incomplete UTF-8 sequence; show it rather than fail.
        return bytes(i - NUM_RESERVED_IDS for i in content).decode("utf-8", errors="replace")

    def _token_string(self, token_id: int) -> str:
        byte = token_id - NUM_RESERVED_IDS
        return chr(byte) if 0x20 < byte < 0x7f else f"\\x{byte:02x}"

    def store_to_file(self, path: str) -> None:
        with open(path, "w", encoding="utf-8") as f:
            f.write(_BYTE_VOCAB_HEADER + "\n")

    @classmethod
    def load_from_file(cls, path: str) -> "ByteTextEncoder":
        lines = _read_lines(path)
        if lines[:1] != [_BYTE_VOCAB_HEADER]:
            raise ValueError(f"{path} is not a byte vocabulary file (expected the single "
                             f"line {_BYTE_VOCAB_HEADER}); regenerate the problem's data")
        return cls()


class TokenTextEncoder(TextEncoder):
    """Whitespace-separated tokens from a fixed vocabulary; unknown ones map to ``oov_token``.

    ``tokens`` may start with ``RESERVED_TOKENS`` (as a stored file does); otherwise
    they are put in front, so the id of a token is its line in the vocabulary file.
    ``oov_token`` is appended when the vocabulary lacks it.
    """

    def __init__(self, tokens: Sequence[str], oov_token: str = "<UNK>"):
        tokens = list(tokens)
        if tuple(tokens[:NUM_RESERVED_IDS]) != RESERVED_TOKENS:
            tokens = list(RESERVED_TOKENS) + tokens
        if oov_token not in tokens:
            tokens.append(oov_token)
        for token in tokens:
            if not token or token.split() != [token]:
                raise ValueError(f"vocabulary token {token!r} is empty or contains "
                                 "whitespace; tokens are split on whitespace")
        duplicates = sorted(t for t, n in collections.Counter(tokens).items() if n > 1)
        if duplicates:
            raise ValueError(f"vocabulary has duplicate tokens: {duplicates[:10]}")
        self._tokens = tokens
        # Reserved names are not looked up, so text can never produce PAD or EOS.
        self._ids = {token: i for i, token in enumerate(tokens) if i >= NUM_RESERVED_IDS}
        self.oov_token = oov_token
        self.oov_id = self._ids[oov_token]

    @property
    def tokens(self) -> list[str]:
        """The vocabulary in id order, reserved tokens included."""
        return list(self._tokens)

    @property
    def vocab_size(self) -> int:
        return len(self._tokens)

    def encode(self, text: str) -> list[int]:
        return [self._ids.get(token, self.oov_id) for token in text.split()]

    def unknown_tokens(self, text: str) -> list[str]:
        return [token for token in text.split() if token not in self._ids]

    def decode(self, ids: Sequence[int]) -> str:
        content = trim_ids(ids)
        bad = [i for i in content if i >= self.vocab_size]
        if bad:
            raise ValueError(f"ids {bad[:5]} are outside the vocabulary of "
                             f"{self.vocab_size} tokens")
        return " ".join(self._tokens[i] for i in content)

    def store_to_file(self, path: str) -> None:
        with open(path, "w", encoding="utf-8") as f:
            f.write("".join(token + "\n" for token in self._tokens))

    @classmethod
    def load_from_file(cls, path: str, oov_token: str = "<UNK>") -> "TokenTextEncoder":
        tokens = [line.strip() for line in _read_lines(path)]
        return cls([t for t in tokens if t], oov_token=oov_token)
