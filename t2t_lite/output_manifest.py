"""What each command wrote: the record (``.t2t-lite-outputs.json``) that lets a
command replace its own earlier output, unchanged since, and nothing else.

Each folder's record maps a file's name to the command that wrote it and the
file's size and modification time; a folder written whole (an average, an
export) is recorded under ``"."`` with every file below it. ``output_paths``
reads the record before replacing anything.
"""
from __future__ import annotations

import contextlib
import json
import os

MANIFEST = ".t2t-lite-outputs.json"
LOCK_PREFIX = ".t2t-lite-lock."  # output_paths's locks beside an output: no output


def _stamp(path: str) -> list[int]:
    stat = os.stat(path)
    return [stat.st_size, stat.st_mtime_ns]


def _read_manifest(folder: str) -> dict[str, dict]:
    try:
        with open(os.path.join(folder, MANIFEST), encoding="utf-8") as f:
            manifest = json.load(f)
        return manifest if isinstance(manifest, dict) else {}
    except (OSError, ValueError):
        return {}


def _write_manifest(folder: str, manifest: dict[str, dict]) -> None:
    path = os.path.join(folder, MANIFEST)
    temporary = f"{path}.tmp-{os.getpid()}"
    try:
        with open(temporary, "w", encoding="utf-8") as f:
            json.dump(manifest, f, indent=1, sort_keys=True)
        os.replace(temporary, path)
    finally:  # a full disk leaves no temporary record behind
        with contextlib.suppress(OSError):
            os.remove(temporary)


def files_below(folder: str) -> list[str]:
    """Every file below ``folder`` (relative), the manifest and locks left out."""
    found = []
    for root, _, names in os.walk(folder):
        for name in names:
            if name != MANIFEST and not name.startswith(LOCK_PREFIX):
                found.append(os.path.relpath(os.path.join(root, name), folder))
    return sorted(found)


def own_file(path: str, command: str) -> bool:
    """``path`` was written by ``command`` and is unchanged since."""
    entry = _read_manifest(os.path.dirname(os.path.realpath(path))).get(os.path.basename(path))
    return bool(entry) and entry.get("command") == command and os.path.isfile(path) \
        and entry.get("stamp") == _stamp(path)


def own_folder(folder: str, command: str) -> bool:
    """Every file in ``folder`` was written by ``command`` and is unchanged since."""
    entry = _read_manifest(folder).get(".")
    if not entry or entry.get("command") != command:
        return False
    files = files_below(folder)
    return files == sorted(entry.get("files", {})) and all(
        entry["files"][name] == _stamp(os.path.join(folder, name)) for name in files)


def record_file(path: str, command: str) -> None:
    """Notes ``path`` as ``command``'s own output (so a re-run may replace it)."""
    folder = os.path.dirname(os.path.realpath(path))
    manifest = _read_manifest(folder)
    manifest[os.path.basename(path)] = {"command": command, "stamp": _stamp(path)}
    _write_manifest(folder, manifest)


def record_folder(folder: str, command: str, **details: str) -> None:
    """Notes every file in ``folder`` as ``command``'s own output."""
    manifest = _read_manifest(folder)
    manifest["."] = {"command": command, **details, "files": {
        name: _stamp(os.path.join(folder, name)) for name in files_below(folder)}}
    _write_manifest(folder, manifest)


def folder_details(folder: str) -> dict:
    """What ``record_folder`` noted besides the files (e.g. what was averaged)."""
    return {key: value for key, value in _read_manifest(folder).get(".", {}).items()
            if key not in ("command", "files")}


def folder_writer(folder: str) -> str | None:
    """The command that wrote ``folder`` whole or started it (``record_started``)."""
    return _read_manifest(folder).get(".", {}).get("command")


def record_started(folder: str, command: str) -> None:
    """Notes ``folder`` as ``command``'s work folder, which a re-run of it resumes."""
    manifest = _read_manifest(folder)
    manifest["."] = {"command": command, "resumable": True}
    _write_manifest(folder, manifest)
