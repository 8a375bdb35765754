"""``Alias``: another name for real keys (tensor2tensor's), never stored; and
``collecting_errors``, under which every refused change of a user's hparams
function is noted with their FILE:LINE and told at the end, in one error."""
from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import functools
import os
import sys
from typing import Any, Callable, Iterator

from t2t_lite.hparam.ranges import HParamsError


@dataclasses.dataclass(frozen=True)
class Alias:
    """Another name for real keys (tensor2tensor's): ``write(hparams, value)`` gives
    the real keys' new values (or raises ``HParamsError`` with advice), ``read``
    the alias's value from them; text (``--hparams``) parses to ``example``'s type.
    ``keys``: the real keys it speaks for; setting one of them directly forgets the
    value given to the alias (``HParams.given``)."""
    example: Any
    write: Callable[["HParams", Any], "dict[str, Any]"]
    read: Callable[["HParams"], Any]
    text: str
    keys: tuple[str, ...] = ()


# The refusals noted inside ``collecting_errors``: (FILE:LINE, message) pairs.
_COLLECTED: contextvars.ContextVar["list[tuple[str, str]] | None"] = \
    contextvars.ContextVar("hparams_collected", default=None)
_PACKAGE = __name__.split(".")[0]


def _users_place() -> str:
    """FILE:LINE of the innermost frame outside the package: the user's statement."""
    frame = sys._getframe(1)
    while frame is not None:
        module = frame.f_globals.get("__name__", "")
        if module != _PACKAGE and not module.startswith(_PACKAGE + "."):
            path = frame.f_code.co_filename
            relative = os.path.relpath(path) if os.path.isabs(path) else path
            return f"{path if relative.startswith('..') else relative}:{frame.f_lineno}"
        frame = frame.f_back
    return "?"


@contextlib.contextmanager
def collecting_errors(source: str) -> Iterator[None]:
    """Inside, a refused attribute set, ``set_hparam``, ``add_hparam`` or
    ``del_hparam`` is noted with the user's FILE:LINE and skipped (reads of unknown
    keys still raise at once); at the end one ``HParamsError`` names them all::

        hparams set my_set: usr/h.py:12 unknown hparam 'num_hidden_layerz' ...; usr/h.py:14 ...
    """
    collected: list[tuple[str, str]] = []
    token = _COLLECTED.set(collected)
    try:
        yield
    finally:
        _COLLECTED.reset(token)
    if collected:
        lines = "; ".join(f"{place} {message}" for place, message in collected)
        raise HParamsError(f"{source}: {lines}" if source else lines)


def collectable(method: Callable[..., Any]) -> Callable[..., Any]:
    """A public change that ``collecting_errors`` notes and skips when refused."""
    @functools.wraps(method)
    def change(self: "HParams", *args: Any) -> Any:
        try:
            return method(self, *args)
        except HParamsError as e:
            collected = _COLLECTED.get()
            if collected is None:
                raise
            collected.append((_users_place(), str(e)))
            return None
    return change
