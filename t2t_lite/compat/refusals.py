"""One-line refusals of tensor2tensor names t2t-lite does not have.

Each refusal names the T2T element, the user's line that reached it (the innermost
frame outside t2t-lite) and what to use instead, so a usr_dir written for T2T stops
before any work with a sentence, not with an AttributeError or a traceback.
"""
from __future__ import annotations

import os
import sys
from typing import Any, Callable, Mapping

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FROM_T2T_DOC = "docs/FROM_T2T.md"


class T2TNameError(ValueError):
    """A tensor2tensor name, module or value t2t-lite does not honour; the message
    already names the user's FILE:LINE (``place``)."""

    def __init__(self, message: str, place: str = ""):
        super().__init__(f"{place}: {message}" if place else message)
        self.place = place


def users_place() -> str:
    """``FILE:LINE`` of the innermost frame outside t2t-lite and Python's import
    machinery: the user's line that asked for the refused name ('' when none)."""
    frame = sys._getframe(1)
    while frame is not None:
        filename = frame.f_code.co_filename
        ours = os.path.abspath(filename).startswith(_PACKAGE_DIR + os.sep)
        if not ours and not filename.startswith("<frozen importlib"):
            return f"{frame.f_code.co_filename}:{frame.f_lineno}"
        frame = frame.f_back
    return ""


def refuse(element: str, advice: str) -> T2TNameError:
    """The error for T2T's ``element``, placed at the user's line."""
    return T2TNameError(f"tensor2tensor's {element} has no t2t-lite twin: {advice}",
                        users_place())


def missing_names(module: str, advice: Mapping[str, str],
                  default: str = "") -> Callable[[str], Any]:
    """A module ``__getattr__`` refusing every T2T name the module lacks: ``advice``
    says what to use instead of a known one; others get ``default``."""
    fallback = default or f"{FROM_T2T_DOC} lists what {module} has here"

    def __getattr__(name: str) -> Any:
        if name.startswith("__"):  # Python's own probes (__path__, __wrapped__, ...)
            raise AttributeError(name)
        raise T2TNameError(f"tensor2tensor's {module}.{name} has no t2t-lite twin: "
                           f"{advice.get(name, fallback)}", users_place())
    return __getattr__
