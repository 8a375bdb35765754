"""Where a command may write: every t2t-* command declares what it reads and
claims every path it writes here, before it does any work.

The rules (docs/RELIABILITY.md):

* An output is never a path the same command reads (compared after resolving
  links): neither a file it reads nor a folder it reads (a run, a data dir), nor
  a file already inside such a folder.
* A *run folder* (one holding ``hparams.json`` or a checkpoint index) is written
  only by a command that was asked for that very folder: t2t-trainer resuming
  its run, t2t-avg-all replacing its own average, t2t-exporter writing a new
  export below the run it exports.
* An existing file or folder is replaced only when it is the same command's own
  earlier output, unchanged since (``.t2t-lite-outputs.json`` in its folder
  records what each command wrote: name, size, modification time); anything
  else a user had there is refused, never overwritten.
* While a command writes an output it holds a lock beside it, so a second
  process asking for the same output is refused instead of one result vanishing.
* A folder where a file is expected, a file where a folder is expected, an
  unreadable path: one line naming the flag.

Every refusal is an ``OutputPathError`` (a ValueError: one line, exit status 2).
"""
from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
from typing import Callable, Iterator

MANIFEST = ".t2t-lite-outputs.json"
TRAINER_LOCK = ".trainer.lock"  # training/output_lock.py's, in a run folder
RUN_MARKERS = ("hparams.json", "checkpoint")
_LOCK_PREFIX = ".t2t-lite-lock."


class OutputPathError(ValueError):
    """An output the command may not write (or an input it cannot read)."""


def real(path: str) -> str:
    return os.path.realpath(os.path.abspath(os.path.expanduser(path)))


def is_run_folder(folder: str) -> bool:
    """A folder t2t-trainer or t2t-avg-all wrote: it holds hparams.json or a checkpoint
    index."""
    return any(os.path.isfile(os.path.join(folder, name)) for name in RUN_MARKERS)


def enclosing_run(path: str) -> str | None:
    """The nearest run folder at or above ``path`` (a file's or a folder's path)."""
    folder = real(path)
    while True:
        if os.path.isdir(folder) and is_run_folder(folder):
            return folder
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent


def _given(flag: str, path: str) -> None:
    # An empty path would mean the current folder to some calls and nothing to others.
    if not path or not path.strip():
        raise OutputPathError(f"{flag} is empty; give a path")


def _inside_run(flag: str, path: str, run: str) -> OutputPathError:
    return OutputPathError(f"{flag}={path} is inside the run folder {run}, whose files "
                           "t2t-trainer and t2t-avg-all manage; write elsewhere")


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def _first_few(names: list[str]) -> str:
    """The first three names of a folder's files, for an error message."""
    return ", ".join(names[:3]) + (", ..." if len(names) > 3 else "")


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


def _files_below(folder: str) -> list[str]:
    """Every file below ``folder`` (relative), the manifest and locks left out."""
    found = []
    for root, _, names in os.walk(folder):
        for name in names:
            if name != MANIFEST and not name.startswith(_LOCK_PREFIX):
                found.append(os.path.relpath(os.path.join(root, name), folder))
    return sorted(found)


def own_file(path: str, command: str) -> bool:
    """``path`` was written by ``command`` and is unchanged since."""
    entry = _read_manifest(os.path.dirname(real(path))).get(os.path.basename(path))
    return bool(entry) and entry.get("command") == command and os.path.isfile(path) \
        and entry.get("stamp") == _stamp(path)


def own_folder(folder: str, command: str) -> bool:
    """Every file in ``folder`` was written by ``command`` and is unchanged since."""
    entry = _read_manifest(folder).get(".")
    if not entry or entry.get("command") != command:
        return False
    files = _files_below(folder)
    return files == sorted(entry.get("files", {})) and all(
        entry["files"][name] == _stamp(os.path.join(folder, name)) for name in files)


def record_file(path: str, command: str) -> None:
    """Notes ``path`` as ``command``'s own output (so a re-run may replace it)."""
    folder = os.path.dirname(real(path))
    manifest = _read_manifest(folder)
    manifest[os.path.basename(path)] = {"command": command, "stamp": _stamp(path)}
    _write_manifest(folder, manifest)


def record_folder(folder: str, command: str, **details: str) -> None:
    """Notes every file in ``folder`` as ``command``'s own output."""
    manifest = _read_manifest(folder)
    manifest["."] = {"command": command, **details, "files": {
        name: _stamp(os.path.join(folder, name)) for name in _files_below(folder)}}
    _write_manifest(folder, manifest)


def folder_details(folder: str) -> dict:
    """What ``record_folder`` noted besides the files (e.g. what was averaged)."""
    return {key: value for key, value in _read_manifest(folder).get(".", {}).items()
            if key not in ("command", "files")}


@contextlib.contextmanager
def exclusive_lock(lock_path: str, refuse: Callable[[str], Exception],
                   holder: str) -> Iterator[None]:
    """Holds an exclusive ``flock`` on ``lock_path`` (writing ``holder`` into it) for the
    block; while another process holds it, raises ``refuse(what that one wrote)``.

    The kernel drops the lock when its holder exits, ``kill -9`` included, so a killed
    holder never leaves a stale lock. The holder removes the file as it releases: a
    process that locked the file just unlinked tries the one at the path again.
    """
    os.makedirs(os.path.dirname(os.path.abspath(lock_path)), exist_ok=True)
    while True:
        handle = open(lock_path, "a+", encoding="utf-8")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            text = handle.read().strip() or "another process"
            handle.close()
            raise refuse(text) from None
        if os.path.exists(lock_path) and os.path.samestat(os.fstat(handle.fileno()),
                                                          os.stat(lock_path)):
            break
        handle.close()
    try:
        handle.truncate(0)
        # Who holds it is for a refusal's message only: on a full disk the lock holds
        # without it (the write into the output then says what is full). Unbuffered, so
        # that closing the file has nothing left to fail on.
        with contextlib.suppress(OSError):
            os.write(handle.fileno(), holder.encode("utf-8"))
        yield
    finally:
        with contextlib.suppress(OSError):
            os.remove(lock_path)
        handle.close()  # closing drops the flock


def _lock(lock_path: str, what: str) -> contextlib.AbstractContextManager:
    return exclusive_lock(lock_path, lambda holder: OutputPathError(
        f"{what} is being written by {holder}; wait for it to finish, or choose another "
        "output"), f"pid {os.getpid()}")


class Paths:
    """One command's inputs and outputs: checked when declared, before any work."""

    def __init__(self, command: str):
        self.command = command
        self._files: list[tuple[str, str]] = []    # (flag, real path) read
        self._folders: list[tuple[str, str]] = []  # (flag, real path) read, whole

    # Inputs.

    def input_file(self, flag: str, path: str) -> str:
        """A file the command reads: it must exist, be a file and be readable."""
        _given(flag, path)
        if os.path.isdir(path):
            raise OutputPathError(f"{flag}={path} is a folder; give a file")
        if not os.path.exists(path):
            raise OutputPathError(f"{flag}={path}: no such file")
        if not os.access(path, os.R_OK):
            raise OutputPathError(f"{flag}={path} is not readable (permissions)")
        self._files.append((flag, real(path)))
        return path

    def input_folder(self, flag: str, path: str, must_exist: bool = False) -> str:
        """A folder the command reads (a run, a data dir): nothing is written inside."""
        _given(flag, path)
        if must_exist and not os.path.exists(path):
            raise OutputPathError(f"{flag}={path} does not exist")
        if os.path.exists(path) and not os.path.isdir(path):
            raise OutputPathError(f"{flag}={path} is a file; give a folder")
        if os.path.isdir(path) and not os.access(path, os.R_OK | os.X_OK):
            raise OutputPathError(f"{flag}={path} is not readable (permissions)")
        self._folders.append((flag, real(path)))
        return path

    def scored_against(self, flag: str, reference_flag: str, score: str) -> None:
        """Refuses declared inputs ``flag`` and ``reference_flag`` that are one file
        (through a link too): a file scored against itself gets a perfect ``score``
        whatever the system did, and a script's wrong variable is the usual cause."""
        paths = dict(self._files)
        path, reference = paths[flag], paths[reference_flag]
        if path == reference or os.path.samefile(path, reference):
            raise OutputPathError(
                f"{flag} and {reference_flag} are one file ({reference}): scored against "
                f"itself it gets {score} whatever the system did; give the system's output "
                f"as {flag}")

    def read_also(self, flag: str, *paths: str) -> None:
        """Files the command reads that need no checking here (a checkpoint's files)."""
        self._files += [(flag, real(path)) for path in paths]

    def _collision(self, path: str, flag: str, allowed: str | None = None) -> None:
        target = real(path)
        for other_flag, other in self._files:
            if target == other or (os.path.exists(path) and os.path.exists(other)
                                   and os.path.samefile(path, other)):
                raise OutputPathError(f"{flag}={path} is also read as {other_flag}: "
                                      "the output would destroy the input; write elsewhere")
        for other_flag, other in self._folders:
            # A new file in a folder the command reads is harmless; replacing one is not.
            if other != allowed and (target == other or (_inside(target, other)
                                                          and os.path.isfile(target))):
                raise OutputPathError(f"{flag}={path} is {'' if target == other else 'inside '}"
                                      f"{other_flag}={other}, which {self.command} reads; "
                                      "write elsewhere")

    # Outputs.

    @contextlib.contextmanager
    def output_file(self, flag: str, path: str) -> Iterator[str]:
        """Claims the file ``path`` while the block writes it (atomically), then notes it
        as this command's: a later run of the same command may replace it."""
        _given(flag, path)
        self._collision(path, flag)
        if os.path.isdir(path):
            raise OutputPathError(f"{flag}={path} is a folder; give a file name")
        parent = os.path.dirname(os.path.abspath(path))
        if os.path.exists(parent) and not os.path.isdir(parent):
            raise OutputPathError(f"{flag}={path}: {parent} is a file, not a folder")
        run = enclosing_run(parent)
        if run:
            raise _inside_run(flag, path, run)
        if os.path.exists(path) and not own_file(path, self.command):
            raise OutputPathError(f"{flag}={path} exists and was not written by "
                                  f"{self.command} (or was changed since); remove it or "
                                  "choose a new name")
        if os.path.exists(parent) and not os.access(parent, os.W_OK):
            raise OutputPathError(f"{flag}={path}: {parent} is not writable")
        lock = os.path.join(parent, _LOCK_PREFIX + os.path.basename(path))
        with _lock(lock, f"{flag}={path}"):
            yield path
            if os.path.isfile(path):  # the block may have had nothing to write
                record_file(path, self.command)

    @contextlib.contextmanager
    def output_folder(self, flag: str, path: str, replaces_own: bool = False,
                      inside_run: str | None = None, **details: str) -> Iterator[str]:
        """Claims the folder ``path``: new, empty, or (``replaces_own``) this command's own
        earlier output. The block writes into the folder it is given (a new one beside
        ``path``), which then takes ``path``'s place whole; ``details`` are noted with
        the files, and an earlier output with other ``details`` is not this one's own.

        ``inside_run`` names the one run folder the output may sit inside (an export
        below the run it exports)."""
        _given(flag, path)
        allowed_run = real(inside_run) if inside_run else None
        self._collision(path, flag, allowed_run)
        if os.path.exists(path) and not os.path.isdir(path):
            raise OutputPathError(f"{flag}={path} is a file; give a folder")
        own = (replaces_own and os.path.isdir(path) and own_folder(path, self.command)
               and folder_details(path) == details)
        names = _files_below(path) if os.path.isdir(path) else []
        if names and not own:
            raise OutputPathError(
                f"{flag}={path} holds files {self.command} did not write, or another "
                f"output of it ({_first_few(names)}); "
                "give a new or empty folder")
        run = enclosing_run(path)
        if run and run != allowed_run and not (own and run == real(path)):
            raise _inside_run(flag, path, run)
        target = real(path)
        if _inside(os.getcwd(), target):
            raise OutputPathError(f"{flag}={path} holds the current folder; give another")
        parent, name = os.path.split(target)
        os.makedirs(parent, exist_ok=True)
        staging = os.path.join(parent, f".{name}.partial-{os.getpid()}")
        with _lock(os.path.join(parent, _LOCK_PREFIX + name), f"{flag}={path}"):
            try:
                os.makedirs(staging)
                yield staging
                record_folder(staging, self.command, **details)
                old = os.path.join(parent, f".{name}.old-{os.getpid()}")
                if os.path.exists(target):
                    os.replace(target, old)
                os.replace(staging, target)
                shutil.rmtree(old, ignore_errors=True)
            finally:
                shutil.rmtree(staging, ignore_errors=True)

    def shared_folder(self, flag: str, path: str) -> str:
        """A folder the command adds its own named files to and reuses (a data dir, a
        download dir): anything but a run folder or a file."""
        _given(flag, path)
        self._collision(path, flag)
        if os.path.exists(path) and not os.path.isdir(path):
            raise OutputPathError(f"{flag}={path} is a file; give a folder")
        run = enclosing_run(path)
        if run:
            raise _inside_run(flag, path, run)
        return path

    def run_folder(self, flag: str, path: str) -> str:
        """The output dir of t2t-trainer: new, empty, or a run folder (which the trainer
        checks is the same run). Refuses folders of other commands' or a user's files."""
        _given(flag, path)
        self._collision(path, flag)
        if os.path.exists(path) and not os.path.isdir(path):
            raise OutputPathError(f"{flag}={path} is a file; give a folder")
        outer = enclosing_run(os.path.dirname(real(path)))
        if outer:
            raise _inside_run(flag, path, outer)
        # A trainer killed right after taking its lock leaves the lock file alone.
        if not os.path.isdir(path) or not set(os.listdir(path)) - {TRAINER_LOCK}:
            return path
        entry = _read_manifest(path).get(".")
        if entry:
            raise OutputPathError(f"{flag}={path} holds the output of {entry['command']}, "
                                  "not a training run; give the run's own folder or a new one")
        if not os.path.isfile(os.path.join(path, "hparams.json")):
            names = sorted(os.listdir(path))
            raise OutputPathError(f"{flag}={path} holds files t2t-trainer did not write "
                                  f"({_first_few(names)})"
                                  "; give a new or empty folder")
        return path

    def work_folder(self, flag: str, path: str) -> str:
        """The folder a resumable script fills over many commands (a benchmark's root):
        new, empty, or one this command started (noted in its manifest), which it then
        resumes. A user's folder of other files, or a run folder, is refused."""
        self.shared_folder(flag, path)
        entry = _read_manifest(path).get(".") if os.path.isdir(path) else None
        started = bool(entry) and entry.get("command") == self.command
        names = _files_below(path) if os.path.isdir(path) else []
        if names and not started:
            raise OutputPathError(
                f"{flag}={path} holds files {self.command} did not start "
                f"({_first_few(names)}); "
                "give a new or empty folder, or the folder of an earlier run of it to resume")
        os.makedirs(path, exist_ok=True)
        if not started:  # new or empty: this command's from now on
            manifest = _read_manifest(path)
            manifest["."] = {"command": self.command, "resumable": True}
            _write_manifest(path, manifest)
        return path
