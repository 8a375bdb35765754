"""What a key allows (``Range`` and its makers), how text and Python values
become a key's type, and ``HParamsError``, which every refusal is."""
from __future__ import annotations

import contextlib
import dataclasses
import math
import re
from typing import Any, Callable, Iterator

SCALARS = (bool, int, float, str)
# name=value, where value is [..] or runs to the next comma at bracket depth 0.
ASSIGNMENT = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(\[[^\]]*\]|[^,\[\]]*)\s*(?:,|$)")


class HParamsError(ValueError):
    """A bad hyperparameter name, value or override string."""


@dataclasses.dataclass(frozen=True)
class Range:
    """A key's default and the values it allows, described by ``text``
    (which completes "must be ...")."""
    default: Any
    allows: Callable[[Any], bool]
    text: str


def at_least(least: float, default: Any) -> Range:
    """``default``'s type, >= ``least`` (sizes and counts: ``at_least(1, 512)``)."""
    return Range(default, lambda v: v >= least, f">= {least}")


def positive(default: Any) -> Range:
    """``default``'s type, > 0 (rates, epsilons)."""
    return Range(default, lambda v: v > 0, "> 0")


def fraction(default: float) -> Range:
    """A float in [0, 1) (dropouts, label smoothing, Adam's betas)."""
    return Range(default, lambda v: 0 <= v < 1, "in [0, 1)")


def between(low: float, high: float, default: Any) -> Range:
    """``default``'s type, in [``low``, ``high``]."""
    return Range(default, lambda v: low <= v <= high, f"in [{low}, {high}]")


def off_or_above(threshold: float, default: float) -> Range:
    """0 (the feature off) or > ``threshold``."""
    return Range(default, lambda v: v == 0 or v > threshold, f"0 (off) or > {threshold}")


def one_of(*choices: str) -> Range:
    """One of ``choices``; the first is the default."""
    return Range(choices[0], lambda v: v in choices,
                 f"one of {', '.join(map(repr, choices))}")


@contextlib.contextmanager
def from_source(source: str) -> Iterator[None]:
    """An ``HParamsError`` raised inside starts with ``source`` (``--hparams``,
    ``hparams set transformer_tiny``): where the bad value came from."""
    try:
        yield
    except HParamsError as e:
        if not source or str(e).startswith(f"{source}: "):  # said already, inside
            raise
        raise HParamsError(f"{source}: {e}") from None


# A rule between keys: the complaint about ``hparams``, or None when they agree.
Rule = Callable[["HParams"], "str | None"]


def _type_name(value: Any) -> str:
    if isinstance(value, list):
        inner = _type_name(value[0]) if value else "value"
        return f"list of {inner}"
    return type(value).__name__


def _a(noun: str) -> str:
    """'an int', 'a float', 'a list of int'."""
    return f"{'an' if noun[0] in 'aeiou' else 'a'} {noun}"


def convert_text(key: str, text: str, default: Any) -> Any:
    """Parses ``text`` into the type of ``default``."""
    if isinstance(default, list):
        body = text.strip()
        if not (body.startswith("[") and body.endswith("]")):
            raise HParamsError(f"hparam {key!r} expects {_a(_type_name(default))} "
                               f"written as [a,b,...], got {text!r}")
        items = [t for t in body[1:-1].split(",") if t.strip()]
        elem = default[0] if default else _guess(items[0]) if items else 0
        return [convert_text(key, t, elem) for t in items]
    text = text.strip()
    try:
        if isinstance(default, bool):
            low = text.lower()
            if low in ("true", "1", "yes"):
                return True
            if low in ("false", "0", "no"):
                return False
            raise ValueError
        if isinstance(default, int):
            return int(text)
        if isinstance(default, float):
            return float(text)
    except ValueError:
        raise HParamsError(f"hparam {key!r} expects {_a(_type_name(default))}, "
                           f"got {text!r}") from None
    return text


def _guess(text: str) -> Any:
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return text


def _check_type(key: str, value: Any, default: Any) -> Any:
    """Coerces a Python value to the default's type (int -> float is allowed)."""
    if isinstance(default, list):
        if not isinstance(value, (list, tuple)):
            raise HParamsError(f"hparam {key!r} expects {_a(_type_name(default))}, "
                               f"got {value!r}")
        return [_check_type(key, v, default[0]) if default else v for v in value]
    if isinstance(default, bool):
        ok = isinstance(value, bool)
    elif isinstance(default, float):
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        value = float(value) if ok else value
    elif isinstance(default, int):
        ok = isinstance(value, int) and not isinstance(value, bool)
    else:
        ok = isinstance(value, str)
    if not ok:
        raise HParamsError(f"hparam {key!r} expects {_a(_type_name(default))}, "
                           f"got {value!r}")
    return value


def check_value(key: str, value: Any, default: Any, allowed: Range | None) -> Any:
    """``value`` in ``default``'s type, refused unless finite and in ``allowed``."""
    value = _check_type(key, value, default)
    for item in value if isinstance(value, list) else [value]:
        if isinstance(item, float) and not math.isfinite(item):
            text = f"finite and {allowed.text}" if allowed else "finite"
            raise HParamsError(f"hparam {key!r} must be {text}, got {item!r}")
        if allowed and not allowed.allows(item):
            raise HParamsError(f"hparam {key!r} must be {allowed.text}, got {item!r}")
    return value
