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

import contextlib
import datetime
import json
import os
import socket

from t2t_lite.output_paths import TRAINER_LOCK, exclusive_lock


class OutputDirInUseError(OSError):
    """Another live trainer holds the output dir."""


class OutputDirLock:
    """``with OutputDirLock(output_dir): train()``; raises ``OutputDirInUseError``."""

    def __init__(self, output_dir: str):
        self.path = os.path.join(output_dir, TRAINER_LOCK)
        self._held = contextlib.ExitStack()

    def acquire(self) -> None:
        holder = json.dumps({"host": socket.gethostname(), "pid": os.getpid(),
                             "since": datetime.datetime.now().isoformat(timespec="seconds")})
        self._held.enter_context(exclusive_lock(self.path, self._in_use, holder))

    def _in_use(self, holder: str) -> OutputDirInUseError:
        return OutputDirInUseError(
            f"{os.path.dirname(self.path)} is in use by a running t2t-trainer ({holder}); "
            "wait for it to finish or stop it, or give another --output_dir")

    def release(self) -> None:
        """Removes the lock file (the output dir is left as training left it) and
        drops the lock."""
        self._held.close()

    def __enter__(self) -> "OutputDirLock":
        self.acquire()
        return self

    def __exit__(self, *exc_info) -> None:
        self.release()
