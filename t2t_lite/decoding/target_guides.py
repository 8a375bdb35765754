"""What a user asks of each line's outputs beside its input: a target prefix they
begin with (``--decode_prefixes``, ``forced_prefix``) and terminology phrases they
hold (``--decode_constraints``, ``lexical_constraints``). Read from files
line-aligned with the input (``GuideFiles``), or after tabs of an interactive line;
encoded and checked here (``encode_guides``), padded into the search's tensors for
a batch (``batch_guides``).

A constraints line holds tab-separated phrases in plain text, each encoded on its
own by the target encoder (a subword phrase is matched as the encoder splits it
alone; empty fields are no phrase). A blank input line takes no guide (it decodes
to a blank line without the model).
"""
from __future__ import annotations

import dataclasses
import itertools
from typing import Any, Iterator, Sequence

import numpy as np

from t2t_lite.contracts.reserved_ids import PAD_ID
from t2t_lite.data.text_files import count_utf8_lines, iter_utf8_lines


@dataclasses.dataclass(frozen=True)
class GuideText:
    """One line's guides as given: a prefix and tab-separated phrases ("" for none)."""
    prefix: str = ""
    constraints: str = ""

    def phrases(self) -> list[str]:
        return [phrase.strip() for phrase in self.constraints.split("\t") if phrase.strip()]

    def is_blank(self) -> bool:
        return not self.prefix.strip() and not self.phrases()


@dataclasses.dataclass(frozen=True)
class LineGuide:
    """One line's guides as target ids (no EOS)."""
    prefix: tuple[int, ...] = ()
    phrases: tuple[tuple[int, ...], ...] = ()

    @property
    def tokens(self) -> int:
        """The tokens every output of the line must hold before its EOS, at least."""
        return len(self.prefix) + sum(map(len, self.phrases))


@dataclasses.dataclass(frozen=True)
class GuideFiles:
    """The files of guides, line-aligned with an input (None: not given); also the
    names that errors about a line's guides point to (``<stdin>`` interactively)."""
    prefixes: str | None = None
    constraints: str | None = None

    def given(self) -> list[tuple[str, str]]:
        """(field of ``GuideText``, path) of each file given."""
        return [(field, path) for field, path in (("prefix", self.prefixes),
                                                  ("constraints", self.constraints)) if path]

    def __bool__(self) -> bool:
        return bool(self.given())

    def with_lines(self, path: str) -> Iterator[tuple[str, GuideText | None]]:
        """Each line of ``path`` with its line of each file (None without any);
        refused when a file has another number of lines."""
        given = self.given()
        if not given:
            yield from ((line, None) for line in iter_utf8_lines(path))
            return
        missing = object()
        rows = itertools.zip_longest(iter_utf8_lines(path),
                                     *(_lines(field, file) for field, file in given),
                                     fillvalue=missing)
        for line, *fields in rows:
            for (field, file), value in zip(given, fields):
                if line is missing or value is missing:
                    raise ValueError(
                        f"{file} has {sum(1 for _ in _lines(field, file))} lines but {path} has "
                        f"{count_utf8_lines(path)}: give "
                        f"one {'prefix' if field == 'prefix' else 'set of phrases'} a line "
                        "(an empty line for none)")
            yield line, GuideText(**{field: value for (field, _), value in zip(given, fields)})

    def windows(self, windows: Sequence[Any]) -> Iterator[list[GuideText] | None]:
        """The guides of each of ``windows`` (``kept_windows.Window``), None without files."""
        given = self.given()
        if not given:
            yield from itertools.repeat(None, len(windows))
            return
        columns = [window_lines(file, windows, allow_tab=field == "constraints")
                   for field, file in given]
        for fields in zip(*columns):
            yield [GuideText(**dict(zip((field for field, _ in given), values)))
                   for values in zip(*fields)]


def digest_text(line: str, text: GuideText | None) -> str:
    """What a window's digest takes for one line: the line, and its guides after NULs
    (no line holds a control character: ``iter_utf8_lines``); a prefix alone as it
    always was, so kept windows and shards of a prefix file stay valid."""
    if text is None:
        return line
    return line + f"\0{text.prefix}" + (f"\0\0{text.constraints}" if text.constraints else "")


def encode_guides(texts: Sequence[GuideText], encoder: Any, room: int, files: GuideFiles,
                  first_line: int = 0) -> list[LineGuide]:
    """Each line's guides as target ids under ``encoder``, refused naming the file's
    line (``files``' names) where the prefix and phrases and an EOS do not fit in
    ``room``, the most tokens the model decodes (its positions)."""
    guides = []
    for number, text in enumerate(texts, start=first_line + 1):
        guide = LineGuide(tuple(encoder.encode(text.prefix.strip())),
                          tuple(tuple(encoder.encode(phrase)) for phrase in text.phrases()))
        if guide.tokens >= room:
            if not guide.phrases:
                raise ValueError(f"{files.prefixes}:{number}: the prefix has "
                                 f"{len(guide.prefix)} tokens, but the model decodes at "
                                 f"most {room} (its positions): shorten it")
            with_prefix = f" and the prefix {len(guide.prefix)}" if guide.prefix else ""
            raise ValueError(
                f"{files.constraints}:{number}: the phrases take "
                f"{sum(map(len, guide.phrases))} tokens{with_prefix}, but the model decodes "
                f"at most {room} with the EOS (its positions): give fewer or shorter ones")
        guides.append(guide)
    return guides


def check_blank_lines(line: str, text: GuideText | None, files: GuideFiles, path: str,
                      number: int) -> None:
    """Refuses guides for a blank input line (it decodes to a blank line), naming the file."""
    if text is None or line.strip() or text.is_blank():
        return
    field, file = next((field, file) for field, file in files.given()
                       if getattr(text, field).strip())
    what = "a prefix" if field == "prefix" else "phrases"
    raise ValueError(f"{file}:{number}: {what} for a blank line of {path} (a blank line "
                     "decodes to a blank line): leave it empty")


def batch_guides(guides: Sequence[LineGuide], rows: int) -> dict[str, np.ndarray]:
    """The search's keywords for a batch of ``rows`` (the ``guides`` first, filler rows
    guideless): ``prefixes`` int32 [rows, P] and ``constraints`` (phrases) int32
    [rows, N, L], PAD-padded; each only when a line of the batch has one (a search
    without it returns the same)."""
    tensors = {}
    if any(guide.prefix for guide in guides):
        prefixes = np.full((rows, max(len(g.prefix) for g in guides)), PAD_ID, np.int32)
        for row, guide in enumerate(guides):
            prefixes[row, :len(guide.prefix)] = guide.prefix
        tensors["prefixes"] = prefixes
    if any(guide.phrases for guide in guides):
        count = max(len(g.phrases) for g in guides)
        longest = max((len(p) for g in guides for p in g.phrases), default=0)
        phrases = np.full((rows, count, longest), PAD_ID, np.int32)
        for row, guide in enumerate(guides):
            for j, phrase in enumerate(guide.phrases):
                phrases[row, j, :len(phrase)] = phrase
        tensors["constraints"] = phrases
    return tensors


def _lines(field: str, path: str) -> Iterator[str]:
    """A guide file's lines (a constraints line's tabs part its phrases)."""
    return iter_utf8_lines(path, allow_tab=field == "constraints")


def window_lines(path: str, windows: Sequence[Any], allow_tab: bool = False
                 ) -> Iterator[list[str]]:
    """The lines of ``path`` in each of ``windows`` (in input order), read as a scan
    reads them."""
    lines, position = iter_utf8_lines(path, allow_tab), 0
    for window in windows:
        for _ in itertools.islice(lines, window.first_line - position):
            pass
        yield list(itertools.islice(lines, window.lines))
        position = window.first_line + window.lines
