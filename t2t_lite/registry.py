"""Name -> object registries for problems, models, hparams sets and metrics.

Registration is by decorator; the registered name is the snake_case form of the
class or function name unless given explicitly (``TranslateEndeWmt32k`` ->
``translate_ende_wmt32k``). Looking up an unknown name raises a ``KeyError``
that lists everything registered, grouped by name prefix, so a typo is easy to
spot. ``import_usr_dir`` imports a user's own package so its registrations
appear without touching the library. The library's own registrations are
loaded by ``t2t_lite.builtins``: this module is the ground floor they all
register with, so it names none of them.
"""
from __future__ import annotations

import importlib
import os
import re
import sys
import traceback
from collections import defaultdict
from typing import Any, Callable, Iterator, TypeVar

T = TypeVar("T")

_FIRST_CAP = re.compile(r"(.)([A-Z][a-z0-9]+)")
_ALL_CAP = re.compile(r"([a-z0-9])([A-Z])")


def snake_case(name: str) -> str:
    """``TranslateEndeWmt32k`` -> ``translate_ende_wmt32k``."""
    return _ALL_CAP.sub(r"\1_\2", _FIRST_CAP.sub(r"\1_\2", name)).lower()


class UnknownNameError(KeyError):
    """An unknown registry name; the message lists what is registered."""

    def __str__(self) -> str:  # KeyError's own str() would quote the message
        return str(self.args[0])


class Registry:
    """A named mapping from snake_case names to registered objects."""

    def __init__(self, kind: str):
        self.kind = kind
        self._entries: dict[str, Any] = {}
        self._refused: dict[str, str] = {}
        self._withheld: dict[str, str] = {}

    def register(self, name_or_obj: Any = None) -> Any:
        """Decorator: ``@reg.register`` or ``@reg.register("explicit_name")``."""
        if callable(name_or_obj) and not isinstance(name_or_obj, str):
            return self._add(snake_case(name_or_obj.__name__), name_or_obj)

        def decorator(obj: T) -> T:
            return self._add(name_or_obj or snake_case(obj.__name__), obj)
        return decorator

    def _add(self, name: str, obj: T) -> T:
        if name in self._entries and self._entries[name] is not obj:
            raise ValueError(
                f"{self.kind} {name!r} is already registered "
                f"(by {_origin(self._entries[name])}); pick another name.")
        self._entries[name] = obj
        return obj

    def refuse(self, name: str, advice: str) -> None:
        """Looking up ``name`` (a tensor2tensor name with no meaning here) fails with
        one line of ``advice``, the name to use instead, rather than the list of names;
        a registration of ``name`` (a user's) still wins."""
        self._refused[name] = advice

    def withhold(self, name: str, reason: str) -> None:
        """``name`` is not registered, for ``reason`` (a user's problem t2t-lite cannot
        honour): looking it up says so in one line, and the rest of its usr_dir stays."""
        self._withheld[name] = reason

    def __getitem__(self, name: str) -> Any:
        if name in self._withheld and name not in self._entries:
            raise UnknownNameError(f"{self.kind} {name!r} is not registered: "
                                   f"{self._withheld[name]}")
        if name in self._refused and name not in self._entries:
            raise UnknownNameError(f"{self.kind} {name!r} is tensor2tensor's and has no "
                                   f"t2t-lite twin: {self._refused[name]}")
        if name not in self._entries:
            raise UnknownNameError(f"unknown {self.kind} {name!r}. Registered {self.kind}s:\n"
                           f"{self.help()}")
        return self._entries[name]

    def __contains__(self, name: str) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(self._entries))

    def names(self) -> list[str]:
        return sorted(self._entries)

    def help(self) -> str:
        """Names grouped by their first snake_case word, one group a line."""
        groups: dict[str, list[str]] = defaultdict(list)
        for name in self.names():
            groups[name.split("_")[0]].append(name)
        if not groups:
            return "  (none)"
        return "\n".join(f"  {prefix}: {', '.join(names)}"
                         for prefix, names in sorted(groups.items()))


def _origin(obj: Any) -> str:
    return f"{getattr(obj, '__module__', '?')}.{getattr(obj, '__qualname__', obj)}"


problems = Registry("problem")
models = Registry("model")
hparams_sets = Registry("hparams set")
metrics = Registry("metric")

register_problem = problems.register
register_model = models.register
register_hparams = hparams_sets.register
register_metric = metrics.register


# Run before a usr_dir is imported: ``builtins.load_builtins`` adds tensor2tensor's
# import paths (t2t_lite/compat/), which this ground floor may not name.
BEFORE_USR_DIR_IMPORT: list[Callable[[], object]] = []


def import_usr_dir(usr_dir: str) -> None:
    """Imports the package at ``usr_dir`` (a folder with ``__init__.py``)."""
    for hook in BEFORE_USR_DIR_IMPORT:
        hook()
    path = os.path.abspath(os.path.expanduser(usr_dir.rstrip("/")))
    if not os.path.isfile(os.path.join(path, "__init__.py")):
        raise FileNotFoundError(
            f"--t2t_usr_dir={usr_dir!r} is not a Python package: expected "
            f"{os.path.join(path, '__init__.py')} importing your registrations.")
    parent, name = os.path.split(path)
    if parent not in sys.path:
        sys.path.insert(0, parent)
    try:
        module = importlib.import_module(name)
    except Exception as error:
        place = _users_place(error, path)
        if place is None:  # raised by our own code, not on purpose: a bug to trace back
            raise
        message = error.msg if isinstance(error, SyntaxError) else str(error)
        message = " ".join(str(message).split())
        if getattr(error, "place", None):  # a refusal that names the user's line itself
            raise UsrDirError(f"--t2t_usr_dir={usr_dir}: importing it failed: {message}"
                              ) from error
        raise UsrDirError(f"--t2t_usr_dir={usr_dir}: importing it failed: {place}: "
                          f"{type(error).__name__}: {message}") from error
    # A folder named as a module Python has already (json, test, tensorflow) imports
    # that module instead, and the user's registrations silently never run.
    found = getattr(module, "__file__", None) or ""
    if os.path.realpath(found) != os.path.realpath(os.path.join(path, "__init__.py")):
        raise UsrDirError(f"--t2t_usr_dir={usr_dir}: the name {name!r} is taken by another "
                          f"Python module ({found or 'built in'}), which an import of it "
                          f"finds instead; rename the folder (e.g. my_{name})")


class UsrDirError(ValueError):
    """A ``--t2t_usr_dir`` whose code fails to import: the user's mistake, told in one
    line with their file and line rather than a traceback."""


def _users_place(error: Exception, folder: str) -> str | None:
    """``FILE:LINE`` in ``folder`` where importing it failed: the line a SyntaxError
    points at, else the innermost frame of ``error`` in the user's files. None when
    the error is not theirs: it arose outside their files, or it is one our own code
    raised by mistake (not the ValueError or KeyError it raises on purpose, as for a
    name registered twice)."""
    def theirs(filename: str) -> bool:
        return os.path.abspath(filename).startswith(folder + os.sep)

    if isinstance(error, SyntaxError):
        return f"{error.filename}:{error.lineno}" if theirs(error.filename or "") else None
    frames = list(traceback.walk_tb(error.__traceback__))
    places = [f"{frame.f_code.co_filename}:{line}" for frame, line in frames
              if theirs(frame.f_code.co_filename)]
    ours = frames[-1][0].f_globals.get("__name__", "").split(".")[0] == __name__.split(".")[0]
    if not places or (ours and not isinstance(error, (ValueError, KeyError))):
        return None
    return places[-1]


def registry_help() -> str:
    """Everything registered, as printed by ``t2t-trainer --registry_help``."""
    return "\n".join(f"{reg.kind}s:\n{reg.help()}"
                     for reg in (problems, models, hparams_sets, metrics))
