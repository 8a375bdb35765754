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
* A path is what the OS makes of it: resolved once (links followed, a ``..``
  after a link taken from the link's target) and every rule applied to that; an
  output that is a link is written through, never replaced. A literal ``~`` (the
  shell left it), a missing folder of an output file, a folder that is a dangling
  link and a device or pipe as an output (/dev/stdout) are refused.

Every refusal is an ``OutputPathError`` (a ValueError: one line, exit status 2).
"""
from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
from typing import Callable, Iterator

from t2t_lite.output_manifest import (LOCK_PREFIX, files_below, folder_details, folder_writer,
                                     own_file, own_folder, record_file, record_folder,
                                     record_started)

TRAINER_LOCK = ".trainer.lock"  # training/output_lock.py's, in a run folder
RUN_MARKERS = ("hparams.json", "checkpoint")


class OutputPathError(ValueError):
    """An output the command may not write (or an input it cannot read)."""


def real(path: str) -> str:
    """``path`` as the OS resolves it: links followed, and a ``..`` after a link taken
    from the link's target (as ``open`` does), not cut off the text as ``abspath`` would."""
    return os.path.realpath(path)


def as_the_os_sees(path: str) -> str:
    """``path``, or (when it holds a ``..``) ``real(path)``: TensorFlow's file functions
    take ``..`` off the text, not after following a link as the OS does, so a
    command hands them the folder that its checks were applied to."""
    return real(path) if os.pardir in path.split(os.sep) else path


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
    # The shell expands ~ only at the start of a word: after --flag= (or in quotes) it
    # stays, and would name a folder called ~ in the current one.
    if path.startswith("~"):
        raise OutputPathError(
            f"{flag}={path} starts with a literal ~, which the shell left unexpanded (it "
            f"does so after {flag}= and in quotes); write {flag} {path} with a space, or "
            "$HOME instead of ~")


def _not_dangling(flag: str, path: str) -> None:
    if os.path.islink(path) and not os.path.exists(path):
        raise OutputPathError(f"{flag}={path} is a link to {os.readlink(path)}, which does "
                              "not exist; create it, or give another folder")


def _regular_or_absent(flag: str, path: str) -> None:
    """Refuses a device, pipe or socket (/dev/stdout): outputs are written whole, through
    a temporary file beside them, and noted by size and time."""
    # /dev/stdout names a stream even when it leads to a file (a shell's > redirect).
    stream = os.path.abspath(path).startswith(("/dev/std", "/dev/fd/", "/proc/"))
    if stream or os.path.exists(path) and not (os.path.isfile(path) or os.path.isdir(path)):
        raise OutputPathError(f"{flag}={path} is not a regular file (a device, pipe or "
                              "socket); give a file name, and read the file once written")


def _inside_run(flag: str, path: str, run: str) -> OutputPathError:
    return OutputPathError(f"{flag}={path} is inside the run folder {run}, whose files "
                           "t2t-trainer and t2t-avg-all manage; write elsewhere")


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def _first_few(names: list[str]) -> str:
    """The first three names of a folder's files, for an error message."""
    return ", ".join(names[:3]) + (", ..." if len(names) > 3 else "")


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
        return as_the_os_sees(path)

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
        return as_the_os_sees(path)

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
    def output_file(self, flag: str, path: str, new_folder: bool = False) -> Iterator[str]:
        """Claims the file ``path`` while the block writes it (atomically), then notes it
        as this command's: a later run of the same command may replace it. The block is
        given the path to write: ``path`` resolved (links followed). Its folder must
        exist, unless ``new_folder`` (a file in a folder the command makes)."""
        _given(flag, path)
        _regular_or_absent(flag, path)
        # Resolved once, as the OS will: the block writes the resolved path, so a link
        # there is followed (its target written), never replaced by a file.
        target = real(path)
        shown = path if target == os.path.abspath(path) else f"{path} (-> {target})"
        self._collision(path, flag)
        if os.path.isdir(target):
            raise OutputPathError(f"{flag}={shown} is a folder; give a file name")
        parent = os.path.dirname(target)
        if os.path.exists(parent) and not os.path.isdir(parent):
            raise OutputPathError(f"{flag}={shown}: {parent} is a file, not a folder")
        if not os.path.exists(parent) and not new_folder:
            raise OutputPathError(f"{flag}={shown}: the folder {parent} does not exist; "
                                  "create it first (mkdir -p), or check the path")
        run = enclosing_run(parent)
        if run:
            raise _inside_run(flag, shown, run)
        if os.path.exists(target) and not own_file(target, self.command):
            raise OutputPathError(f"{flag}={shown} exists and was not written by "
                                  f"{self.command} (or was changed since); remove it or "
                                  "choose a new name")
        if os.path.exists(parent) and not os.access(parent, os.W_OK):
            raise OutputPathError(f"{flag}={shown}: {parent} is not writable")
        lock = os.path.join(parent, LOCK_PREFIX + os.path.basename(target))
        with _lock(lock, f"{flag}={path}"):
            yield target
            if os.path.isfile(target):  # the block may have had nothing to write
                record_file(target, self.command)

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
        _not_dangling(flag, path)
        allowed_run = real(inside_run) if inside_run else None
        target = real(path)  # resolved once; a link there is followed
        self._collision(path, flag, allowed_run)
        if os.path.exists(target) and not os.path.isdir(target):
            raise OutputPathError(f"{flag}={path} is a file; give a folder")
        own = (replaces_own and os.path.isdir(target) and own_folder(target, self.command)
               and folder_details(target) == details)
        names = files_below(target) if os.path.isdir(target) else []
        if names and not own:
            raise OutputPathError(
                f"{flag}={path} holds files {self.command} did not write, or another "
                f"output of it ({_first_few(names)}); "
                "give a new or empty folder")
        run = enclosing_run(target)
        if run and run != allowed_run and not (own and run == target):
            raise _inside_run(flag, path, run)
        if _inside(os.getcwd(), target):
            raise OutputPathError(f"{flag}={path} holds the current folder; give another")
        parent, name = os.path.split(target)
        os.makedirs(parent, exist_ok=True)
        staging = os.path.join(parent, f".{name}.partial-{os.getpid()}")
        with _lock(os.path.join(parent, LOCK_PREFIX + name), f"{flag}={path}"):
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
        _not_dangling(flag, path)
        self._collision(path, flag)
        if os.path.exists(path) and not os.path.isdir(path):
            raise OutputPathError(f"{flag}={path} is a file; give a folder")
        run = enclosing_run(path)
        if run:
            raise _inside_run(flag, path, run)
        return as_the_os_sees(path)

    def run_folder(self, flag: str, path: str) -> str:
        """The output dir of t2t-trainer: new, empty, or a run folder (which the trainer
        checks is the same run). Refuses folders of other commands' or a user's files."""
        _given(flag, path)
        _not_dangling(flag, path)
        self._collision(path, flag)
        if os.path.exists(path) and not os.path.isdir(path):
            raise OutputPathError(f"{flag}={path} is a file; give a folder")
        outer = enclosing_run(os.path.dirname(real(path)))
        if outer:
            raise _inside_run(flag, path, outer)
        # A trainer killed right after taking its lock leaves the lock file alone.
        if not os.path.isdir(path) or not set(os.listdir(path)) - {TRAINER_LOCK}:
            return as_the_os_sees(path)
        writer = folder_writer(path)
        if writer:
            raise OutputPathError(f"{flag}={path} holds the output of {writer}, "
                                  "not a training run; give the run's own folder or a new one")
        if not os.path.isfile(os.path.join(path, "hparams.json")):
            names = sorted(os.listdir(path))
            raise OutputPathError(f"{flag}={path} holds files t2t-trainer did not write "
                                  f"({_first_few(names)})"
                                  "; give a new or empty folder")
        return as_the_os_sees(path)

    def work_folder(self, flag: str, path: str) -> str:
        """The folder a resumable script fills over many commands (a benchmark's root):
        new, empty, or one this command started (noted in its manifest), which it then
        resumes. A user's folder of other files, or a run folder, is refused."""
        self.shared_folder(flag, path)
        started = os.path.isdir(path) and folder_writer(path) == self.command
        names = files_below(path) if os.path.isdir(path) else []
        if names and not started:
            raise OutputPathError(
                f"{flag}={path} holds files {self.command} did not start "
                f"({_first_few(names)}); "
                "give a new or empty folder, or the folder of an earlier run of it to resume")
        os.makedirs(path, exist_ok=True)
        if not started:  # new or empty: this command's from now on
            record_started(path, self.command)
        return path
