"""Which ``learning_rate_schedule`` and ``optimizer`` strings are valid: the ranges
of those two keys, read before anything is built (``--hparams`` is refused at parse
time). What the names compute is ``t2t_lite/training/schedules.py``'s and
``optimizers.py``'s.

A schedule is one of t2t-lite's names (``SCHEDULES``), or tensor2tensor's product
form: factor names joined by ``*``, spaces allowed (``"constant*linear_warmup*
rsqrt_decay*rsqrt_hidden_size"``). A lone factor name that is also one of ours
(``constant``, ``rsqrt_decay``, ``linear_warmup``) is ours; with a trailing ``*``
(``rsqrt_decay*``) it is T2T's factor. schedules.py says how they differ.
"""
from __future__ import annotations

import re

from t2t_lite.hparam import HParamsError, Range

# t2t-lite's own schedules (hparams/common.py documents them).
SCHEDULES = ("rsqrt_decay", "constant", "step_decay", "linear_warmup")

# T2T's factors we compute, in T2T's meaning (schedules.py writes each out).
T2T_FACTORS = ("constant", "linear_warmup", "rsqrt_decay", "rsqrt_normalized_decay",
               "rsqrt_hidden_size", "cosdecay", "exp_decay", "multi_cycle_cos_decay", "legacy")

# T2T's factors that read what a run here does not have, with what to write instead.
REFUSED_FACTORS = {
    "linear_decay": "it reads train_steps, which is the --train_steps flag here, not an "
                    "hparam: use exp_decay or multi_cycle_cos_decay",
    "single_cycle_cos_decay": "it reads train_steps, which is the --train_steps flag here, "
                              "not an hparam: use multi_cycle_cos_decay with "
                              "learning_rate_decay_steps = train_steps - "
                              "learning_rate_warmup_steps (the same curve)",
}

# The optimizers schedules.py and optimizers.py build.
OPTIMIZERS = ("adam", "sgd", "adadelta", "adam_w", "adafactor", "momentum", "multistep_adam")

# T2T's names we do not take, with the one to write. T2T's registry took UpperCamelCase
# (older sets' "Adam", "Adafactor") with a warning; its legacy schedule then missed the
# 0.002 Adam correction (it tests "adam" in the name), so the spelling changed the rate:
# one spelling here, said once at parse time.
_OPTIMIZER_ADVICE = {
    "true_adam": "adam (Keras's Adam is TensorFlow's AdamOptimizer, which true_adam was)",
    "lazy_adam": "adam (Keras's Adam updates every embedding row, as dense Adam does)",
}


def t2t_factors(schedule: str) -> tuple[str, ...] | None:
    """The T2T factors of ``schedule`` in order, or None when it is one of ours.
    Raises ``HParamsError`` naming a factor that is unknown or refused."""
    if schedule in SCHEDULES:
        return None
    # T2T dropped empty names ("a**b", a trailing "*"); so do we.
    names = tuple(name.strip() for name in schedule.split("*") if name.strip())
    if not names:
        raise HParamsError(f"hparam 'learning_rate_schedule' must name a schedule, "
                           f"got {schedule!r}")
    for name in names:
        if name in REFUSED_FACTORS:
            raise HParamsError(f"hparam 'learning_rate_schedule': T2T's factor {name!r} "
                               f"is not offered: {REFUSED_FACTORS[name]}")
        if name not in T2T_FACTORS:
            raise HParamsError(
                f"hparam 'learning_rate_schedule' has an unknown factor {name!r} in "
                f"{schedule!r}: a schedule is one of {', '.join(SCHEDULES)}, or T2T's "
                f"factors joined by '*': {', '.join(T2T_FACTORS)}")
    return names


def _valid_schedule(schedule: str) -> bool:
    t2t_factors(schedule)  # raises the precise complaint
    return True


def schedule_range(default: str = SCHEDULES[0]) -> Range:
    """The range of ``learning_rate_schedule``."""
    return Range(default, _valid_schedule,
                 f"one of {', '.join(map(repr, SCHEDULES))}, or T2T's factors joined by "
                 f"'*' ({', '.join(T2T_FACTORS)})")


def _snake_case(name: str) -> str:
    """T2T's conversion of an UpperCamelCase optimizer name ("AdamW" -> "adam_w")."""
    if name == "SGD":
        return "sgd"
    return re.sub(r"([a-z0-9])([A-Z])", r"\1_\2",
                  re.sub(r"(.)([A-Z][a-z]+)", r"\1_\2", name)).lower()


def _valid_optimizer(name: str) -> bool:
    if name in OPTIMIZERS:
        return True
    snake = _snake_case(name)
    if snake in OPTIMIZERS:
        raise HParamsError(f"hparam 'optimizer' is {snake!r} here: {name!r} is older T2T's "
                           f"spelling, write optimizer={snake}")
    if snake in _OPTIMIZER_ADVICE:
        raise HParamsError(f"hparam 'optimizer': T2T's {name!r} is not offered; write "
                           f"optimizer={_OPTIMIZER_ADVICE[snake]}")
    return False


def optimizer_range() -> Range:
    """The range of ``optimizer`` (Adam the default)."""
    return Range(OPTIMIZERS[0], _valid_optimizer,
                 f"one of {', '.join(map(repr, OPTIMIZERS))}")
