"""HParams: typed hyperparameters, each with the values it allows.

A key is declared once, with its default and its range, in an hparams set
(``t2t_lite/hparams/``)::

    HParams(hidden_size=at_least(1, 512),              # an int >= 1, default 512
            layer_prepostprocess_dropout=fraction(0.1),  # a float in [0, 1)
            learning_rate=positive(1.0),               # a float > 0
            optimizer=one_of("adam", "sgd"),            # the first choice is the default
            normalize_before=False)                    # a bool: its type is its range

A key keeps the type of its default (bool, int, float, str, or a list of one of
those, whose range then holds for each element). A plain default (a user's own
key: ``hparams.extend(my_size=3)``) declares the type only. Floats are finite
everywhere: NaN and infinities are refused whatever the key.

Every value is checked however it arrives: in the set, by attribute, from an
override string ``"a=1,b=0.5,c=[1,2],d=true"`` (``parse``: ``--hparams``) or a
dict (``override_from_dict``: ``hparams.json``). Rules between keys
(``add_rule``) are checked after each parse and override and by ``check()``.
A failed parse or override changes nothing. Unknown keys are never accepted.
Every refusal is an ``HParamsError`` that names the key, the value, what is
allowed and, given a ``source``, where the value came from::

    --hparams: hparam 'layer_prepostprocess_dropout' must be in [0, 1), got 1.5
"""
from __future__ import annotations

import contextlib
import dataclasses
import json
import math
import re
from typing import Any, Callable, Iterator

_SCALARS = (bool, int, float, str)
# name=value, where value is [..] or runs to the next comma at bracket depth 0.
_ASSIGN = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(\[[^\]]*\]|[^,\[\]]*)\s*(?:,|$)")


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
        if not source:
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


def _convert(key: str, text: str, default: Any) -> Any:
    """Parses ``text`` into the type of ``default``."""
    if isinstance(default, list):
        body = text.strip()
        if not (body.startswith("[") and body.endswith("]")):
            raise HParamsError(f"hparam {key!r} expects {_a(_type_name(default))} "
                               f"written as [a,b,...], got {text!r}")
        items = [t for t in body[1:-1].split(",") if t.strip()]
        elem = default[0] if default else _guess(items[0]) if items else 0
        return [_convert(key, t, elem) for t in items]
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


def _check(key: str, value: Any, default: Any, allowed: Range | None) -> Any:
    """``value`` in ``default``'s type, refused unless finite and in ``allowed``."""
    value = _check_type(key, value, default)
    for item in value if isinstance(value, list) else [value]:
        if isinstance(item, float) and not math.isfinite(item):
            text = f"finite and {allowed.text}" if allowed else "finite"
            raise HParamsError(f"hparam {key!r} must be {text}, got {item!r}")
        if allowed and not allowed.allows(item):
            raise HParamsError(f"hparam {key!r} must be {allowed.text}, got {item!r}")
    return value


class HParams:
    """Typed, range-checked hyperparameters with attribute access."""

    def __init__(self, **values: Any):
        object.__setattr__(self, "_values", {})
        object.__setattr__(self, "_ranges", {})
        object.__setattr__(self, "_rules", [])
        for key, value in values.items():
            self.add_hparam(key, value)

    def add_hparam(self, key: str, value: Any) -> None:
        """A new key: a plain default (its type only) or a ``Range``."""
        if key in self._values:
            raise HParamsError(f"hparam {key!r} already exists; use set_hparam")
        allowed = value if isinstance(value, Range) else None
        default = allowed.default if allowed else value
        if not (isinstance(default, _SCALARS) or isinstance(default, (list, tuple))):
            raise HParamsError(f"hparam {key!r}: unsupported type {type(default).__name__}")
        default = list(default) if isinstance(default, tuple) else default
        self._values[key] = _check(key, default, default, allowed)
        self._ranges[key] = allowed

    def extend(self, **values: Any) -> "HParams":
        """Adds new keys (an existing one raises ``HParamsError``); returns self."""
        for key, value in values.items():
            self.add_hparam(key, value)
        return self

    def add_rule(self, rule: Rule) -> "HParams":
        """A constraint between keys, checked by ``check()`` and after every
        ``parse`` and ``override_from_dict``; returns self."""
        self._rules.append(rule)
        return self

    def set_hparam(self, key: str, value: Any) -> None:
        self._values[key] = self._checked(self._known(key), value)

    def _checked(self, key: str, value: Any) -> Any:
        return _check(key, value, self._values[key], self._ranges[key])

    def _known(self, key: str) -> str:
        if key not in self._values:
            raise HParamsError(f"unknown hparam {key!r}; known: {', '.join(sorted(self._values))}")
        return key

    def range_of(self, key: str) -> Range | None:
        """The key's declared ``Range``; None for a plain (type-only) key."""
        return self._ranges[self._known(key)]

    def check(self) -> "HParams":
        """Applies the rules between keys (each value was checked on arrival)."""
        for rule in self._rules:
            complaint = rule(self)
            if complaint:
                raise HParamsError(complaint)
        return self

    def __getattr__(self, key: str) -> Any:
        try:
            return self._values[key]
        except KeyError:
            raise AttributeError(f"unknown hparam {key!r}") from None

    def __setattr__(self, key: str, value: Any) -> None:
        self.set_hparam(key, value)

    def __contains__(self, key: str) -> bool:
        return key in self._values

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(self._values))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, HParams) and self._values == other._values

    def __repr__(self) -> str:
        return f"HParams({self.to_json()})"

    def values(self) -> dict[str, Any]:
        return dict(self._values)

    def copy(self) -> "HParams":
        """The same keys, ranges and rules, with values of its own."""
        twin = HParams()
        twin._values.update({k: list(v) if isinstance(v, list) else v
                             for k, v in self._values.items()})
        twin._ranges.update(self._ranges)
        twin._rules.extend(self._rules)
        return twin

    def parse(self, overrides: str, source: str = "") -> "HParams":
        """Applies ``"a=1,b=[2,3]"`` in place and returns self; errors name ``source``."""
        with from_source(source):
            text = overrides.strip()
            pos = 0
            updates, given = {}, {}
            while pos < len(text):
                match = _ASSIGN.match(text, pos)
                if not match or match.end() == pos:
                    raise HParamsError(f"malformed hparams string at {text[pos:]!r}: "
                                       "expected name=value pairs separated by commas")
                key, raw = match.group(1), match.group(2)
                value = self._checked(key, _convert(key, raw, self._values[self._known(key)]))
                # Only the last of two values would count, without a word.
                if key in updates and updates[key] != value:
                    raise HParamsError(f"hparam {key!r} is given twice ({key}={given[key]}, "
                                       f"then {key}={raw}): give it once")
                updates[key], given[key] = value, raw
                pos = match.end()
            self._update(updates)
        return self

    def override_from_dict(self, values: dict[str, Any], source: str = "") -> "HParams":
        """Sets every key of ``values`` at once and returns self; errors name ``source``."""
        with from_source(source):
            self._update({key: self._checked(self._known(key), value)
                          for key, value in values.items()})
        return self

    def _update(self, updates: dict[str, Any]) -> None:
        """Checked values in; the rules between keys decide whether they stay."""
        before = dict(self._values)
        self._values.update(updates)
        try:
            self.check()
        except HParamsError:
            self._values.clear()
            self._values.update(before)
            raise

    def to_json(self, **kwargs: Any) -> str:
        return json.dumps(self._values, sort_keys=True, allow_nan=False, **kwargs)

    @classmethod
    def from_json(cls, text: str) -> "HParams":
        """Plain keys (types only): the ranges live with the hparams sets."""
        return cls(**json.loads(text))
