"""A full disk, said in one line: before the work when the free space is clearly
too small for the output's estimate, and, when it fills up during the work, with
the output's flag and file instead of an ``[Errno 28]`` that names neither (or a
TensorFlow ``ResourceExhaustedError`` traceback).

The estimates (docs/RELIABILITY.md) are the output's least size, so a refusal
is never wrong; an output that outgrows its estimate still fails cleanly.
"""
from __future__ import annotations

import errno
import os
import shutil

_FULL = (errno.ENOSPC, errno.EDQUOT)
_FULL_TEXTS = ("No space left on device", "Disk quota exceeded")
_RESOURCE_EXHAUSTED = 8  # TensorFlow's error code of a failed write on a full disk


class DiskSpaceError(OSError):
    """Not enough room for an output (a one-line error of the commands, exit 2)."""


def is_full_disk(error: BaseException) -> bool:
    """``error`` is the file system refusing a write for want of room: an ``OSError``
    ENOSPC / EDQUOT, or TensorFlow's ResourceExhaustedError of one."""
    if isinstance(error, OSError) and not isinstance(error, DiskSpaceError):
        return error.errno in _FULL
    return (getattr(error, "error_code", None) == _RESOURCE_EXHAUSTED
            and any(text in str(error) for text in _FULL_TEXTS))


def size_text(size: int) -> str:
    """``size`` bytes as a person reads them: 512 bytes, 3.0 KiB, 1.2 MiB, 2.0 GiB."""
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if size >= scale:
            return f"{size / scale:.1f} {unit}"
    return f"{size} bytes"


def free_bytes(path: str) -> tuple[str, int]:
    """The nearest existing folder at or above ``path`` and the bytes free there (for
    this user)."""
    folder = os.path.abspath(path)
    while not os.path.isdir(folder):
        folder = os.path.dirname(folder)
    return folder, shutil.disk_usage(folder).free


def require_free(flag: str, path: str, needed: int, what: str) -> None:
    """Refuses, before any work, an output ``flag``=``path`` whose least size
    ``needed`` (bytes; ``what`` says of what) is more than its file system has free."""
    folder, free = free_bytes(path)
    if free < needed:
        raise DiskSpaceError(f"{flag}={path}: {what}: at least {size_text(needed)} needed, "
                             f"and {folder} has {size_text(free)} free; make room or write "
                             "elsewhere")


def files_size(paths: list[str]) -> int:
    return sum(os.path.getsize(path) for path in paths if os.path.isfile(path))


def full_disk_error(error: BaseException, flag: str, path: str, what: str,
                    left: str) -> DiskSpaceError:
    """The one line of a write ``what`` into ``flag``=``path`` that ``error`` (a full
    disk) stopped; ``left`` says what stays."""
    # An OSError names its file apart; TensorFlow's text starts with it: "FILE; No space..."
    named = getattr(error, "filename", None) or str(error).partition("; ")[0].split("} ")[-1]
    file = (f" ({named})" if os.sep in named
            and os.path.abspath(named) != os.path.abspath(path) else "")
    return DiskSpaceError(f"{flag}={path}: no space left on device {what}{file}; {left}: "
                          "make room, then run the same command again")
