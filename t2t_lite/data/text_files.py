"""Text files as the commands read and write them: UTF-8 lines in, read strictly,
with errors that name the file and line; whole files out, atomically (a ``.gz``
name gzipped).

Every command that reads a user's text reads it here, so that all read it alike:

* lines end at "\\n"; a "\\r" before it (CRLF) is dropped, and a final line
  without "\\n" counts. A "\\r" anywhere else is refused like any control
  character: it is not a line end here (only old Mac files end lines with it
  alone), and decoding would treat it as a line break in some places and a
  space in others;
* a UTF-8 byte-order mark at the start of the file (or of stdin) is dropped;
* a line that is not UTF-8, or holds a control character (C0, DEL or C1: NUL,
  ESC, a form feed ...) is an error naming ``FILE:LINE`` and the character's
  code; a tab passes only where the format uses it (``allow_tab``: a
  ``source<TAB>target`` file, trees, where it is white space);
* a line over ``MAX_LINE_BYTES`` is refused as it is read, before it can take
  the memory of its encoding (a model takes a few hundred tokens; far less
  than a megabyte);
* ``FILE.gz`` is decompressed, and must hold gzip data; gzip data under another
  name is refused rather than read as text; a folder, a missing or unreadable
  file is one error line.
"""
from __future__ import annotations

import contextlib
import gzip
import os
import re
import zlib
from typing import BinaryIO, Iterable, Iterator

MAX_LINE_BYTES = 1 << 20
_GZIP_MAGIC = b"\x1f\x8b"
_BOM = "\ufeff"
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")
_CONTROL_BUT_TAB = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f]")
_CONTROL_NAMES = {0x00: "NUL", 0x09: "tab", 0x0b: "vertical tab", 0x0c: "form feed",
                  0x0d: "carriage return", 0x1b: "ESC", 0x7f: "DEL"}
# Why a user would have such a character, where a likely cause is known.
_CONTROL_HINTS = {0x00: "; is the file UTF-16 or binary? re-encode it as UTF-8",
                  0x09: "; this file holds one text a line, not tab-separated fields",
                  0x0d: "; only CRLF or LF ends a line (convert old Mac line ends with "
                        "tr '\\r' '\\n')"}


# Bound once: a generator left unfinished is closed at interpreter exit, when the
# gzip and zlib modules' names may already be gone.
_DAMAGED_GZIP = (EOFError, zlib.error, gzip.BadGzipFile)


def read_utf8_lines(path: str, allow_tab: bool = False) -> list[str]:
    """The lines of ``path`` (``.gz`` decompressed), read strictly (see the module
    docstring); every error is one line naming the file (and line)."""
    return list(iter_utf8_lines(path, allow_tab))


def iter_utf8_lines(path: str, allow_tab: bool = False) -> Iterator[str]:
    """``read_utf8_lines``, a line at a time (for files larger than memory)."""
    with _open_checked(path) as raw, _decompressed(raw, path) as f:
        try:
            yield from stream_utf8_lines(f, path, allow_tab)
        except _DAMAGED_GZIP as error:
            raise ValueError(f"{path} is damaged gzip data ({error}); download or "
                             "compress it again") from None


def count_utf8_lines(path: str) -> int:
    """The lines of ``path``, each checked as ``iter_utf8_lines`` checks them."""
    return sum(1 for _ in iter_utf8_lines(path))


def stream_utf8_lines(stream: BinaryIO, name: str, allow_tab: bool = False,
                      max_line_bytes: int = MAX_LINE_BYTES) -> Iterator[str]:
    """The lines of a binary ``stream`` (a file, stdin's buffer) as they arrive,
    checked as the module docstring says; errors call it ``name``."""
    number = 0
    while True:
        # One byte more than allowed tells a line at the limit from a longer one.
        raw = stream.readline(max_line_bytes + 1)
        if not raw:
            return
        number += 1
        if len(raw) > max_line_bytes and not raw.endswith(b"\n"):
            raise ValueError(f"{name}:{number}: line is longer than {max_line_bytes} bytes; "
                             "this is not one sentence a line (is it the right file?)")
        yield check_line(raw.rstrip(b"\n"), name, number, allow_tab)


def check_line(raw: bytes, name: str, number: int, allow_tab: bool = False) -> str:
    """One line's bytes (without "\\n") as text, checked; ``number`` is 1-based."""
    if raw.endswith(b"\r"):
        raw = raw[:-1]
    try:
        line = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise ValueError(f"{name}: line {number} is not valid UTF-8 ({error.reason} at "
                         f"byte {error.start}); re-encode the file as UTF-8") from None
    if number == 1 and line.startswith(_BOM):
        line = line[1:]
    check_text(line, f"{name}:{number}", allow_tab)
    return line


def check_text(text: str, where: str, allow_tab: bool = False) -> None:
    """Refuses a control character in ``text`` (a line, or a flag's value), naming
    ``where`` it is, its column (1-based) and its code."""
    found = (_CONTROL_BUT_TAB if allow_tab else _CONTROL).search(text)
    if found:
        code = ord(found.group())
        name = f" ({_CONTROL_NAMES[code]})" if code in _CONTROL_NAMES else ""
        raise ValueError(f"{where}: control character U+{code:04X}{name} at column "
                         f"{found.start() + 1}{_CONTROL_HINTS.get(code, '; remove it')}")


def _open_checked(path: str) -> BinaryIO:
    """``path`` opened for reading bytes, or one clear error."""
    if os.path.isdir(path):
        raise IsADirectoryError(f"{path} is a folder; expected a text file")
    if not os.path.exists(path):
        raise FileNotFoundError(f"no such file: {path}")
    try:
        return open(path, "rb")
    except PermissionError:
        raise PermissionError(f"cannot read {path}: permission denied") from None


def _decompressed(f: BinaryIO, path: str) -> BinaryIO:
    """The text of an open file: gunzipped when named ``.gz``, which it must then be
    (peeking, so that a pipe such as /dev/stdin loses nothing)."""
    is_gzip = f.peek(len(_GZIP_MAGIC))[:len(_GZIP_MAGIC)] == _GZIP_MAGIC
    if path.endswith(".gz"):
        if not is_gzip and f.peek(1):
            raise ValueError(f"{path} is named .gz but is not gzip data; rename it or "
                             "compress it with gzip")
        return gzip.GzipFile(fileobj=f, mode="rb")
    if is_gzip:
        raise ValueError(f"{path} holds gzip data but is not named .gz; name it "
                         f"{os.path.basename(path)}.gz or decompress it")
    return f


def write_lines_atomically(path: str, lines: Iterable[str]) -> None:
    """Writes ``lines`` to ``path`` via a temporary file and a rename, so a
    failure never leaves a partial file or clobbers an existing one. A ``.gz``
    name gets gzip data, as every reader here requires of that name (and as a
    user's zcat expects); the header has no time or name, so equal lines give
    equal bytes."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    tmp_path = f"{path}.tmp-{os.getpid()}"
    try:
        with open(tmp_path, "wb") as raw:
            with (gzip.GzipFile(filename="", fileobj=raw, mode="wb", mtime=0)
                  if path.endswith(".gz") else contextlib.nullcontext(raw)) as f:
                for line in lines:
                    f.write((line + "\n").encode("utf-8"))
        os.replace(tmp_path, path)
    except BaseException:
        if os.path.exists(tmp_path):
            os.unlink(tmp_path)
        raise
