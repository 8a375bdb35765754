"""HParams: a typed bag of hyperparameters.

Each key keeps the type of its first value (bool, int, float, str, or a list of
one of those). Overrides come as ``"a=1,b=0.5,c=[1,2],d=true"``; the type of
each value is taken from the default, and an unknown key, a value of the wrong
type or a malformed string raises ``HParamsError`` naming the key and the type
it expects. Unknown keys are never silently accepted.
"""
from __future__ import annotations

import json
import re
from typing import Any, Iterator

_SCALARS = (bool, int, float, str)
# name=value, where value is [..] or runs to the next comma at bracket depth 0.
_ASSIGN = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(\[[^\]]*\]|[^,\[\]]*)\s*(?:,|$)")


class HParamsError(ValueError):
    """A bad hyperparameter name, value or override string."""


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


def _check_value(key: str, value: Any, default: Any) -> Any:
    """Coerces a Python value to the default's type (int -> float is allowed)."""
    if isinstance(default, list):
        if not isinstance(value, (list, tuple)):
            raise HParamsError(f"hparam {key!r} expects {_a(_type_name(default))}, "
                               f"got {value!r}")
        return [_check_value(key, v, default[0]) if default else v for v in value]
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


class HParams:
    """Typed hyperparameters with attribute access."""

    def __init__(self, **values: Any):
        object.__setattr__(self, "_values", {})
        for key, value in values.items():
            self.add_hparam(key, value)

    def add_hparam(self, key: str, value: Any) -> None:
        if key in self._values:
            raise HParamsError(f"hparam {key!r} already exists; use set_hparam")
        if not (isinstance(value, _SCALARS) or isinstance(value, (list, tuple))):
            raise HParamsError(f"hparam {key!r}: unsupported type {type(value).__name__}")
        self._values[key] = list(value) if isinstance(value, tuple) else value

    def extend(self, **values: Any) -> "HParams":
        """Adds new keys (an existing one raises ``HParamsError``); returns self."""
        for key, value in values.items():
            self.add_hparam(key, value)
        return self

    def set_hparam(self, key: str, value: Any) -> None:
        default = self._values[self._known(key)]
        self._values[key] = _check_value(key, value, default)

    def _known(self, key: str) -> str:
        if key not in self._values:
            raise HParamsError(f"unknown hparam {key!r}; known: {', '.join(sorted(self._values))}")
        return key

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
        return HParams(**{k: list(v) if isinstance(v, list) else v
                          for k, v in self._values.items()})

    def parse(self, overrides: str) -> "HParams":
        """Applies ``"a=1,b=[2,3]"`` in place and returns self."""
        text = overrides.strip()
        pos = 0
        updates = {}
        while pos < len(text):
            match = _ASSIGN.match(text, pos)
            if not match or match.end() == pos:
                raise HParamsError(f"malformed hparams string at {text[pos:]!r}: "
                                   "expected name=value pairs separated by commas")
            key, raw = match.group(1), match.group(2)
            updates[key] = _convert(key, raw, self._values[self._known(key)])
            pos = match.end()
        self._values.update(updates)
        return self

    def override_from_dict(self, values: dict[str, Any]) -> "HParams":
        for key, value in values.items():
            self.set_hparam(key, value)
        return self

    def to_json(self, **kwargs: Any) -> str:
        return json.dumps(self._values, sort_keys=True, **kwargs)

    @classmethod
    def from_json(cls, text: str) -> "HParams":
        return cls(**json.loads(text))
