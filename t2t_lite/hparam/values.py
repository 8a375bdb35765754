"""``HParams``: typed, range-checked hyperparameters with attribute access."""
from __future__ import annotations

import difflib
import json
from typing import Any, Iterator

from t2t_lite.hparam.aliases import Alias, collectable
from t2t_lite.hparam.ranges import (ASSIGNMENT, SCALARS, HParamsError, Range, Rule,
                                    check_value, convert_text, from_source)


class HParams:
    """Typed, range-checked hyperparameters with attribute access."""

    def __init__(self, **values: Any):
        object.__setattr__(self, "_values", {})
        object.__setattr__(self, "_ranges", {})
        object.__setattr__(self, "_rules", [])
        object.__setattr__(self, "_aliases", {})   # name -> Alias
        object.__setattr__(self, "_refused", {})   # name -> advice
        object.__setattr__(self, "_given", {})     # alias -> (value, real keys it wrote)
        object.__setattr__(self, "_added", set())  # keys of add_hparam: the user's own
        for key, value in values.items():
            self._declare(key, value)

    def _declare(self, key: str, value: Any) -> None:
        """A real key: it takes the place of an alias or refusal of its name."""
        if key in self._values:
            raise HParamsError(f"hparam {key!r} already exists; use set_hparam")
        allowed = value if isinstance(value, Range) else None
        default = allowed.default if allowed else value
        if not (isinstance(default, SCALARS) or isinstance(default, (list, tuple))):
            raise HParamsError(f"hparam {key!r}: unsupported type {type(default).__name__}")
        default = list(default) if isinstance(default, tuple) else default
        self._values[key] = check_value(key, default, default, allowed)
        self._ranges[key] = allowed
        self._aliases.pop(key, None)
        self._refused.pop(key, None)
        self._given.pop(key, None)

    @collectable
    def add_hparam(self, key: str, value: Any) -> None:
        """T2T's: a new key (a plain default, its type only, or a ``Range``). An
        existing key raises, as in T2T; a T2T key declared here (an alias) is set."""
        if key in self._aliases or key in self._refused:
            self._set(key, value)
        else:
            self._declare(key, value)
            self._added.add(key)

    def extend(self, **values: Any) -> "HParams":
        """Adds real keys (an existing one raises ``HParamsError``; an alias or
        refusal of the name gives way); returns self."""
        for key, value in values.items():
            self._declare(key, value)
        return self

    def add_alias(self, key: str, alias: Alias) -> "HParams":
        """``key`` as another name of real keys; never over a real key. Returns self."""
        if key in self._values:
            raise HParamsError(f"hparam {key!r} is a real key: an alias may not shadow it")
        self._refused.pop(key, None)
        self._aliases[key] = alias
        return self

    def refuse_key(self, key: str, advice: str) -> "HParams":
        """``key`` (tensor2tensor's) is refused with ``advice``; never a real key's."""
        if key in self._values:
            raise HParamsError(f"hparam {key!r} is a real key: it may not be refused")
        self._aliases.pop(key, None)
        self._refused[key] = advice
        return self

    def aliases(self) -> dict[str, Alias]:
        return dict(self._aliases)

    def refused(self) -> dict[str, str]:
        return dict(self._refused)

    def add_rule(self, rule: Rule) -> "HParams":
        """A constraint between keys, checked by ``check()`` and after every
        ``parse`` and ``override_from_dict``; returns self."""
        self._rules.append(rule)
        return self

    @collectable
    def set_hparam(self, key: str, value: Any) -> None:
        self._set(key, value)

    def _set(self, key: str, value: Any) -> dict[str, Any]:
        """Sets a key or an alias; returns the real keys' new values."""
        alias = self._aliases.get(key)
        if alias is None:
            self._values[key] = self._checked(self._known(key), value)
            # An alias that wrote this key no longer speaks for it.
            for name, (_, wrote) in list(self._given.items()):
                if key in wrote:
                    del self._given[name]
            return {key: self._values[key]}
        try:
            writes = {real: self._checked(self._known(real), v)
                      for real, v in alias.write(self, value).items()}
        except HParamsError as e:
            message = str(e)
            raise HParamsError(message if message.startswith(f"hparam {key!r}")
                               else f"hparam {key!r} ({alias.text}): {message}") from None
        self._values.update(writes)
        self._given[key] = (value, frozenset(writes) | frozenset(alias.keys))
        return writes

    def given(self, key: str, default: Any = None) -> Any:
        """The value last given to alias ``key`` (``default`` if none, or if a real
        key it wrote was set since): what an alias's ``read`` may report."""
        return self._given[key][0] if key in self._given else default

    @collectable
    def del_hparam(self, key: str) -> None:
        """T2T's: forgets a key the user added (or a T2T name); an absent key is
        ignored, as in T2T. The set's own keys are read by the models: refused."""
        if key in self._values and key not in self._added:
            raise HParamsError(f"hparam {key!r} is read by t2t-lite's models and trainer: "
                               "set it instead of deleting it")
        for table in (self._values, self._ranges, self._aliases, self._refused, self._given):
            table.pop(key, None)
        self._added.discard(key)

    def get(self, key: str, default: Any = None) -> Any:
        """T2T's: the value of a key or alias, ``default`` for any other name."""
        if key in self._values:
            return self._values[key]
        if key in self._aliases:
            return self._aliases[key].read(self)
        return default

    def _checked(self, key: str, value: Any) -> Any:
        return check_value(key, value, self._values[key], self._ranges[key])

    def _known(self, key: str) -> str:
        if key in self._values:
            return key
        if key in self._refused:
            raise HParamsError(f"hparam {key!r} is tensor2tensor's and t2t-lite does not "
                               f"have it: {self._refused[key]}")
        close = difflib.get_close_matches(key, [*self._values, *self._aliases], n=1)
        hint = (f"did you mean {close[0]!r}?" if close
                else f"known: {', '.join(sorted(self._values))}")
        raise HParamsError(f"unknown hparam {key!r}; {hint}")

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
        if key.startswith("_"):
            raise AttributeError(key)
        if key in self._values:
            return self._values[key]
        if key in self._aliases:
            return self._aliases[key].read(self)
        if key in self._refused:
            raise AttributeError(f"hparam {key!r} is tensor2tensor's and t2t-lite does not "
                                 f"have it: {self._refused[key]}")
        raise AttributeError(f"unknown hparam {key!r}")

    @collectable
    def __setattr__(self, key: str, value: Any) -> None:
        self._set(key, value)

    def __contains__(self, key: str) -> bool:
        return key in self._values or key in self._aliases

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(self._values))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, HParams) and self._values == other._values

    def __repr__(self) -> str:
        return f"HParams({self.to_json()})"

    def values(self) -> dict[str, Any]:
        """The real keys' values (never an alias's)."""
        return dict(self._values)

    def copy(self) -> "HParams":
        """The same keys, ranges, rules and aliases, with values of its own."""
        twin = HParams()
        twin._take(self)
        return twin

    def _take(self, other: "HParams") -> None:
        """Every table of ``other`` (values copied) in place of this one's."""
        for name in ("_values", "_ranges", "_aliases", "_refused", "_given"):
            table = getattr(self, name)
            table.clear()
            table.update(getattr(other, name))
        self._values.update({k: list(v) for k, v in self._values.items()
                             if isinstance(v, list)})
        self._rules[:] = other._rules
        self._added.clear()
        self._added.update(other._added)

    def parse(self, overrides: str, source: str = "") -> "HParams":
        """Applies ``"a=1,b=[2,3]"`` in place and returns self; errors name ``source``."""
        with from_source(source):
            text = overrides.strip()
            pos = 0
            pairs = []
            while pos < len(text):
                match = ASSIGNMENT.match(text, pos)
                if not match or match.end() == pos:
                    raise HParamsError(f"malformed hparams string at {text[pos:]!r}: "
                                       "expected name=value pairs separated by commas")
                key, raw = match.group(1), match.group(2)
                example = (self._aliases[key].example if key in self._aliases
                           else self._values[self._known(key)])
                pairs.append((key, raw, convert_text(key, raw, example)))
                pos = match.end()
            self._update(pairs)
        return self

    def override_from_dict(self, values: dict[str, Any], source: str = "") -> "HParams":
        """Sets every key of ``values`` at once and returns self; errors name ``source``."""
        with from_source(source):
            self._update([(key, repr(value), value) for key, value in values.items()])
        return self

    def _update(self, pairs: list[tuple[str, str, Any]]) -> None:
        """(key, as given, value) set in order on a twin; the rules between keys
        decide whether they stay. Two names giving one real key two values (a key
        twice, or a key and its alias) are refused: only the last would count."""
        twin = self.copy()
        said: dict[str, tuple[str, str, Any]] = {}
        for key, raw, value in pairs:
            for real, new in twin._set(key, value).items():
                if real in said and said[real][2] != new:
                    first, first_raw, _ = said[real]
                    if first == key:
                        raise HParamsError(f"hparam {key!r} is given twice ({key}={first_raw}, "
                                           f"then {key}={raw}): give it once")
                    raise HParamsError(f"{first}={first_raw} and {key}={raw} disagree "
                                       f"(both set {real}): give one of them")
                said[real] = (key, raw, new)
        twin.check()
        self._take(twin)

    def to_json(self, **kwargs: Any) -> str:
        return json.dumps(self._values, sort_keys=True, allow_nan=False, **kwargs)

    @classmethod
    def from_json(cls, text: str) -> "HParams":
        """Plain keys (types only): the ranges live with the hparams sets."""
        return cls(**json.loads(text))
