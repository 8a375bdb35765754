"""One trainer per output dir: a lock that dies with its holder.

Two trainers writing checkpoints into one folder would interleave them and
corrupt the run. A trainer holds an exclusive ``flock`` on
``OUTPUT_DIR/.trainer.lock`` while it trains; a second one is refused in one
line naming the holder. The kernel drops the lock when the holding process
exits, however it exits (``kill -9`` included), so a killed trainer never
leaves a stale lock behind: the next trainer simply takes it. A trainer that
finishes removes the file.
"""
from __future__ import annotations

import datetime
import fcntl
import json
import os
import socket

LOCK_FILE = ".trainer.lock"


class OutputDirInUseError(OSError):
    """Another live trainer holds the output dir."""


class OutputDirLock:
    """``with OutputDirLock(output_dir): train()``; raises ``OutputDirInUseError``."""

    def __init__(self, output_dir: str):
        self.path = os.path.join(output_dir, LOCK_FILE)
        self._file = None

    def acquire(self) -> None:
        os.makedirs(os.path.dirname(self.path), exist_ok=True)
        while True:
            handle = open(self.path, "a+", encoding="utf-8")
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                handle.seek(0)
                holder = handle.read().strip() or "another process"
                handle.close()
                raise OutputDirInUseError(
                    f"{os.path.dirname(self.path)} is in use by a running t2t-trainer "
                    f"({holder}); wait for it to finish or stop it, or give another "
                    "--output_dir") from None
            # The holder before us unlinks the file as it releases: locked the
            # unlinked file? Then try the one at the path now.
            if os.path.exists(self.path) and os.path.samestat(os.fstat(handle.fileno()),
                                                              os.stat(self.path)):
                break
            handle.close()
        handle.seek(0)
        handle.truncate()
        handle.write(json.dumps({"host": socket.gethostname(), "pid": os.getpid(),
                                 "since": datetime.datetime.now().isoformat(timespec="seconds")}))
        handle.flush()
        self._file = handle

    def release(self) -> None:
        """Removes the lock file (the output dir is left as training left it) and
        drops the lock."""
        if self._file is not None:
            os.remove(self.path)
            self._file.close()  # closing drops the flock
            self._file = None

    def __enter__(self) -> "OutputDirLock":
        self.acquire()
        return self

    def __exit__(self, *exc_info) -> None:
        self.release()
