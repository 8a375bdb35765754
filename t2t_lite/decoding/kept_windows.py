"""The windows of one file decode kept beside its output, so an interrupt loses little.

t2t-decoder reads a file ``read_window_lines`` lines at a time (a *window*). Once
an input spans more than one window, each window decoded is written whole
(atomically) into ``OUTPUT.windows/``, with a record of the lines it came from
(their sha256) and how many were cut; the folder's ``manifest.json`` holds what
decoded them (the decode's identity: checkpoints, vocabulary, settings). The same
command after an interrupt finds the folder, checks that the input and the
identity are the same, and decodes only the windows missing; the output is then
written from the windows and the folder removed. Another input, model or setting
is refused in one line: nothing decoded differently is ever joined to an output.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import shutil
from typing import Any, Iterable, Iterator, Mapping

from t2t_lite.data.text_files import write_lines_atomically

SUFFIX = ".windows"
MANIFEST = "manifest.json"
WRITTEN_BY = "t2t-decoder's kept windows"  # the manifest's mark: a folder of ours


@dataclasses.dataclass(frozen=True)
class Window:
    """Lines ``first_line`` .. ``first_line + lines - 1`` (0-based) of an input."""
    index: int
    first_line: int
    lines: int
    digest: str   # sha256 of the lines, each with "\n"

    @property
    def shown(self) -> str:
        """'window 3 (lines 8,193-12,288)', 1-based as editors number lines."""
        return (f"window {self.index} (lines {self.first_line + 1:,}-"
                f"{self.first_line + self.lines:,})")


def line_digest() -> "hashlib._Hash":
    """The hash a window's lines go into (``add_line``)."""
    return hashlib.sha256()


def add_line(digest: "hashlib._Hash", line: str) -> None:
    digest.update(line.encode("utf-8") + b"\n")


def joint_digest(windows: Iterable[Window]) -> str:
    """One digest for consecutive windows (a shard's lines)."""
    digest = hashlib.sha256()
    for window in windows:
        digest.update(window.digest.encode("ascii"))
    return digest.hexdigest()


class KeptWindows:
    """The folder ``path`` of the windows decoded so far under ``identity``."""

    def __init__(self, path: str, identity: Mapping[str, Any]):
        self.path = path
        self.identity = json.loads(json.dumps(identity))  # as it reads back from disk

    def check(self, windows: Iterable[Window]) -> int:
        """How many of ``windows`` are kept already; refuses a folder that is not ours,
        was decoded under another identity, or holds a window of other lines."""
        if not os.path.exists(self.path):
            return 0
        manifest = self._manifest()
        if manifest.get("identity") != self.identity:
            differ = sorted(key for key in {**self.identity, **manifest.get("identity", {})}
                            if manifest.get("identity", {}).get(key) != self.identity.get(key))
            raise ValueError(f"{self.path} holds windows decoded with another "
                             f"{' / '.join(differ)} than this command's; run the command "
                             "that decoded them to go on, or remove the folder to start over")
        kept = 0
        for window in windows:
            record = self._record(window)
            if record is None:
                continue
            if record.get("digest") != window.digest or record.get("lines") != window.lines:
                raise ValueError(f"{self.path} holds {window.shown} of another input (its "
                                 "lines, --decode_prefixes or --decode_constraints differ from "
                                 "the input's now); "
                                 "decode the input they came from, or remove the folder to "
                                 "start over")
            kept += 1
        return kept

    def is_kept(self, window: Window) -> bool:
        return self._record(window) is not None

    def cut(self, window: Window) -> int:
        """How many inputs of a kept ``window`` were cut to the input limit."""
        return int(self._record(window)["cut"])

    def keep(self, window: Window, outputs: list[str], cut: int,
             alignments: list[str] | None = None) -> None:
        """Writes ``window``'s outputs (and alignments), then its record (a window is
        kept once all are)."""
        if not os.path.exists(self.path):
            os.makedirs(self.path)
            _write_json(os.path.join(self.path, MANIFEST),
                        {"written_by": WRITTEN_BY, "identity": self.identity})
        if alignments is not None:
            write_lines_atomically(self._text(window, alignments=True), alignments)
        write_lines_atomically(self._text(window), outputs)
        _write_json(self._json(window), {"digest": window.digest, "lines": window.lines,
                                         "cut": cut})

    def lines(self, window: Window, alignments: bool = False) -> Iterator[str]:
        """A kept window's output lines (``keep``'s ``outputs``, or its ``alignments``),
        read back as written (an output may hold what an input may not: a tab, a
        control character)."""
        with open(self._text(window, alignments), "rb") as f:
            for raw in f:
                yield raw[:-1].decode("utf-8")

    def remove(self) -> None:
        shutil.rmtree(self.path, ignore_errors=True)

    def _manifest(self) -> dict:
        if not os.path.isdir(self.path):
            raise ValueError(f"{self.path} is in the way of the windows this decode keeps "
                             "(it is not a folder of them); move it away")
        try:
            with open(os.path.join(self.path, MANIFEST), encoding="utf-8") as f:
                manifest = json.load(f)
        except (OSError, ValueError):
            manifest = None
        if not isinstance(manifest, dict) or manifest.get("written_by") != WRITTEN_BY:
            raise ValueError(f"{self.path} is in the way of the windows this decode keeps "
                             "(t2t-decoder did not write it); move it away")
        return manifest

    def _record(self, window: Window) -> dict | None:
        try:
            with open(self._json(window), encoding="utf-8") as f:
                record = json.load(f)
        except (OSError, ValueError):
            return None  # not kept (a window interrupted mid-write leaves no record)
        return record if isinstance(record, dict) and os.path.isfile(self._text(window)) \
            else None

    def _text(self, window: Window, alignments: bool = False) -> str:
        return os.path.join(self.path,
                            f"{window.index:07d}{'.alignments' if alignments else ''}.txt")

    def _json(self, window: Window) -> str:
        return os.path.join(self.path, f"{window.index:07d}.json")


def _write_json(path: str, value: Any) -> None:
    write_lines_atomically(path, [json.dumps(value, indent=1, sort_keys=True)])
