"""tensor2tensor.utils.registry: T2T's decorators and look-ups over t2t-lite's registries.

``register_problem`` does what T2T's did: the registered name (the snake_case class
name unless given) is written into the class's ``name``, so the name a run records
is one every command looks up. A problem is checked against T2T's contract before it
is registered (``problem_contract.check_problem_class``). ``register_hparams`` wraps
the user's function so that every key it sets that t2t-lite cannot honour is told in
one line, with the user's lines, when the set is built.
"""
from __future__ import annotations

import functools
import logging
from typing import Any, Callable

from t2t_lite import registry as _ours
from t2t_lite.compat.problem_contract import T2TText2TextProblem, check_problem_class
from t2t_lite.compat.refusals import T2TNameError, missing_names, refuse
from t2t_lite.data.problem import Problem
from t2t_lite.hparam import HParams, collecting_errors

logger = logging.getLogger(__name__)
default_name = _ours.snake_case


def _decorator(name: Any, register: Callable[[Any, str], Any]) -> Any:
    """T2T's two spellings: ``@register_x`` and ``@register_x("name")``."""
    if callable(name) and not isinstance(name, str):
        return register(name, default_name(name.__name__))
    return lambda obj: register(obj, name or default_name(obj.__name__))


def register_problem(name: Any = None) -> Any:
    def register(cls: type, registered: str) -> type:
        if not (isinstance(cls, type) and issubclass(cls, Problem)):
            raise refuse(f"register_problem of {getattr(cls, '__name__', cls)!r}",
                         "register a subclass of text_problems.Text2TextProblem or "
                         "translate.TranslateProblem")
        cls.name = registered  # T2T's registry overwrote it: the name runs record
        if issubclass(cls, T2TText2TextProblem):
            try:
                check_problem_class(cls, registered)
            except T2TNameError as refusal:
                # The usr_dir's other problems stay usable; this one is refused by name.
                logger.warning("problem %s is not registered: %s", registered, refusal)
                _ours.problems.withhold(registered, str(refusal))
                return cls
        return _ours.problems.register(registered)(cls)
    return _decorator(name, register)


# A lone schedule name that is t2t-lite's too means T2T's factor in T2T code: "NAME*"
# (hparams/schedule_grammar.py: a trailing "*" is T2T's product of one factor).
_T2T_LONE_FACTORS = ("constant", "rsqrt_decay", "linear_warmup")


def register_hparams(name: Any = None) -> Any:
    def register(function: Callable[[], HParams], registered: str) -> Callable[[], HParams]:
        @functools.wraps(function)
        def hparams_set() -> HParams:
            with collecting_errors(f"hparams set {registered}"):
                hparams = function()
            if hparams.get("learning_rate_schedule") in _T2T_LONE_FACTORS:
                hparams.learning_rate_schedule += "*"
            return hparams
        _ours.hparams_sets.register(registered)(hparams_set)
        return function  # the user's other sets call it as they did in T2T
    return _decorator(name, register)


def register_ranged_hparams(name: Any = None) -> Any:
    """T2T's tuning ranges, which only its tuner read: kept out of every run, said."""
    def register(function: Callable, registered: str) -> Callable:
        logger.warning("ranged hparams %s: t2t-lite has no hyperparameter tuner; the "
                       "ranges are not used (a run takes one set: --hparams_set)",
                       registered)
        return function
    return _decorator(name, register)


def register_model(name: Any = None) -> Any:
    raise refuse("register_model", "a T2TModel's body(features) does not run on t2t-lite's "
                 "Keras models; use --model=transformer or the LSTM models "
                 "(--registry_help lists them)")


def problem(name: str) -> Problem:
    """An instance of the problem registered as ``name``."""
    return _ours.problems[name]()


def hparams(name: str) -> HParams:
    """The hparams set registered as ``name``, built."""
    return _ours.hparams_sets[name]()


def model(name: str) -> type:
    return _ours.models[name]


def list_problems() -> list[str]:
    return _ours.problems.names()


def list_hparams() -> list[str]:
    return _ours.hparams_sets.names()


def list_models() -> list[str]:
    return _ours.models.names()


__getattr__ = missing_names("utils.registry", {
    "register_modality": "t2t-lite's text problems have one symbol modality a side",
})
