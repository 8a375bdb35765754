"""Progress of long work, shown the way its reader can see it.

When stderr is a terminal: a tqdm bar (count, rate, ETA when the total is
known) that redraws in place. Otherwise (a log file, CI, ``nohup``): a plain
log line every ``log_every_s`` seconds and one at the end, so a file is not
filled with carriage returns. Either way the bar goes to stderr, so stdout
stays clean for what commands print there.
"""
from __future__ import annotations

import logging
import sys
import time
from typing import Iterable, Iterator, TypeVar

T = TypeVar("T")
logger = logging.getLogger("t2t_lite")

LOG_EVERY_S = 30.0


def format_duration(seconds: float) -> str:
    """'1:02:03' or '2:03'."""
    minutes, seconds = divmod(int(seconds + 0.5), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{seconds:02d}" if hours else f"{minutes}:{seconds:02d}"


class Progress:
    """``with Progress("decoding", total=1000, unit="lines") as p: ... p.update(32)``."""

    def __init__(self, description: str, total: int | None = None, unit: str = "items",
                 log_every_s: float = LOG_EVERY_S, terminal: bool | None = None):
        self.description, self.total, self.unit = description, total, unit
        self.log_every_s = log_every_s
        self.done = 0
        self.started = self._last_log = time.monotonic()
        terminal = sys.stderr.isatty() if terminal is None else terminal
        self._bar = None
        if terminal:
            from tqdm import tqdm
            self._bar = tqdm(total=total, desc=description, unit=f" {unit}", file=sys.stderr,
                             dynamic_ncols=True, leave=True)

    def update(self, n: int = 1) -> None:
        self.done += n
        if self._bar is not None:
            self._bar.update(n)
        elif time.monotonic() - self._last_log >= self.log_every_s:
            self._last_log = time.monotonic()
            logger.info("%s", self.status())

    def status(self) -> str:
        """'decoding: 320/1000 lines (32%), 45.1 lines/s, ETA 0:15'."""
        elapsed = max(time.monotonic() - self.started, 1e-9)
        rate = self.done / elapsed
        if self.total:
            eta = (self.total - self.done) / rate if rate else float("inf")
            left = f", ETA {format_duration(eta)}" if eta != float("inf") else ""
            return (f"{self.description}: {self.done}/{self.total} {self.unit} "
                    f"({100.0 * self.done / self.total:.0f}%), {rate:.1f} {self.unit}/s{left}")
        return f"{self.description}: {self.done} {self.unit}, {rate:.1f} {self.unit}/s"

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
        else:
            elapsed = time.monotonic() - self.started
            logger.info("%s: %d %s in %s (%.1f %s/s)", self.description, self.done, self.unit,
                        format_duration(elapsed), self.done / max(elapsed, 1e-9), self.unit)

    def __enter__(self) -> "Progress":
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()


def progress(items: Iterable[T], description: str, total: int | None = None,
             unit: str = "items") -> Iterator[T]:
    """Yields ``items`` while showing their progress."""
    with Progress(description, total, unit) as bar:
        for item in items:
            yield item
            bar.update()
