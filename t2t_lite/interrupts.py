"""Ctrl-C (SIGINT) and a scheduler's SIGTERM, the one way every command takes them.

While a command runs (``handling_signals``), either signal raises where Python
is at that moment: SIGINT as ``KeyboardInterrupt``, SIGTERM as ``Terminated``,
a ``KeyboardInterrupt`` too, so every ``finally`` that removes a temporary file
or a lock runs, and every handler that asks ``interrupted(error)`` (the trainer's
last checkpoint; TensorFlow's C code can hand the signal back as a SystemError)
acts on a preemption as on Ctrl-C. A second signal while the
command ends is ignored: it would cut short the very cleanup the first one
started (``kill -9`` still stops at once). A block that must not be cut in two
(writing a checkpoint) runs under ``deferred()``: a signal that arrives inside
it is raised once the block is done.

The command says what it is doing (``describe``); ``report`` turns the
interrupt into its one line and the shell's exit status (128 + the signal).
"""
from __future__ import annotations

import contextlib
import dataclasses
import functools
import signal
import sys
import threading
import time
from typing import Iterator

SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Terminated(KeyboardInterrupt):
    """SIGTERM (a scheduler's preemption, ``kill``), raised as Ctrl-C is."""


@dataclasses.dataclass
class _State:
    received: int = 0         # the first signal (0: none yet)
    held: int = 0             # a signal received inside deferred(), raised at its end
    deferring: int = 0        # nesting depth of deferred()
    what: str = ""            # "while decoding in.txt"
    left: str = ""            # what is kept and how to go on


_state = _State()


def _raise(signum: int) -> None:
    raise (Terminated if signum == signal.SIGTERM else KeyboardInterrupt)()


def _handle(signum: int, _frame) -> None:
    if _state.received:
        return  # the command is ending already
    if _state.deferring:
        _state.held = _state.held or signum
        return
    _state.received = signum
    _raise(signum)


def _unraisable(hook_args, previous) -> None:
    """A signal that arrived inside a callback whose exceptions Python ignores (a
    weakref's, a ``__del__``: TensorFlow's garbage runs them at any moment) would
    be lost, and the command would go on to the end: it is raised again in the code
    that runs next (sent again from another thread a moment later: sent from here,
    it would be raised inside this hook, whose exceptions are ignored too)."""
    if isinstance(hook_args.exc_value, KeyboardInterrupt) and _state.received:
        signum, _state.received = _state.received, 0
        threading.Thread(target=_send_again, args=(signum, threading.main_thread().ident),
                         daemon=True).start()
        return
    previous(hook_args)


def _send_again(signum: int, thread_id: int) -> None:
    time.sleep(0.01)
    signal.pthread_kill(thread_id, signum)


@contextlib.contextmanager
def handling_signals() -> Iterator[None]:
    """SIGINT and SIGTERM raise as described above for the block (a command's run);
    the handlers before it come back after. Outside the main thread (where Python
    delivers no signal) the block runs as it is."""
    global _state
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    saved, before = _state, [signal.getsignal(signum) for signum in SIGNALS]
    hook = sys.unraisablehook
    _state = _State()
    for signum in SIGNALS:
        signal.signal(signum, _handle)
    sys.unraisablehook = functools.partial(_unraisable, previous=hook)
    try:
        yield
    finally:
        sys.unraisablehook = hook
        for signum, handler in zip(SIGNALS, before):
            signal.signal(signum, handler)
        _state = saved


@contextlib.contextmanager
def deferred() -> Iterator[None]:
    """A signal that arrives in the block is raised when the block ends, not in it."""
    _state.deferring += 1
    try:
        yield
    finally:
        _state.deferring -= 1
    if not _state.deferring and _state.held and not _state.received:
        _state.received, _state.held = _state.held, 0
        _raise(_state.received)


def describe(what: str, left: str) -> None:
    """What the command is doing now ("while decoding in.txt") and what an
    interrupt would leave and how to go on, for ``report``'s line."""
    _state.what, _state.left = what, left


def interrupted(error: BaseException) -> bool:
    """``error`` ends the command because of a signal: the KeyboardInterrupt raised, or
    what C code it was raised through made of it (TensorFlow's and NumPy's calls back
    into Python turn it into a SystemError)."""
    return isinstance(error, KeyboardInterrupt) or (
        bool(_state.received) and isinstance(error, Exception))


def report(prog: str, interrupt: BaseException) -> tuple[str, int]:
    """The one line an interrupted command prints, and its exit status (130 for
    SIGINT, 143 for SIGTERM, as a shell reports a process the signal ended)."""
    signum = _state.received or (signal.SIGTERM if isinstance(interrupt, Terminated)
                                 else signal.SIGINT)
    what = f" {_state.what}" if _state.what else ""
    left = _state.left or ("nothing it writes was left half-written; run the same command "
                           "again to start over")
    return (f"{prog}: interrupted by {signal.Signals(signum).name}{what}: {left}",
            128 + signum)
