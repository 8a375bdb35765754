"""Text files as the commands read and write them: UTF-8 lines in, with errors
that name the file and line; whole files out, atomically."""
from __future__ import annotations

import gzip
import os
from typing import Iterable


def read_utf8_lines(path: str) -> list[str]:
    """The lines of ``path`` (split on "\\n"; ``.gz`` is decompressed); a missing
    file or a non-UTF-8 line is an error naming the file (and the 1-based line)."""
    if not os.path.isfile(path):
        raise FileNotFoundError(f"no such file: {path}")
    with (gzip.open if path.endswith(".gz") else open)(path, "rb") as f:
        data = f.read()
    raw_lines = data.split(b"\n")
    if raw_lines[-1] == b"":  # the final newline ends the last line, it starts none
        raw_lines.pop()
    lines = []
    for number, raw in enumerate(raw_lines, start=1):
        try:
            lines.append(raw.decode("utf-8"))
        except UnicodeDecodeError as error:
            raise ValueError(f"{path}: line {number} is not valid UTF-8 ({error.reason} at "
                             f"byte {error.start}); re-encode the file as UTF-8") from None
    return lines


def write_lines_atomically(path: str, lines: Iterable[str]) -> None:
    """Writes ``lines`` to ``path`` via a temporary file and a rename, so a
    failure never leaves a partial file or clobbers an existing one."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    tmp_path = f"{path}.tmp-{os.getpid()}"
    try:
        with open(tmp_path, "w", encoding="utf-8") as f:
            f.writelines(line + "\n" for line in lines)
        os.replace(tmp_path, path)
    except BaseException:
        if os.path.exists(tmp_path):
            os.unlink(tmp_path)
        raise
