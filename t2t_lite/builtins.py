"""The library's own registrations: the problems, models, hparams sets and metrics
that register themselves when their modules are imported.

This module stands above all four, so that ``registry.py`` (the ground floor every
one of them registers with) names none of them.
"""
from __future__ import annotations


def load_builtins() -> None:
    """Registers the library's own problems, models, hparams sets and metrics."""
    # Imported on call, not with this module: each import registers its names,
    # and a command asks for them once its flags are read (bin/common.py).
    from t2t_lite import hparams, models, problems  # noqa: F401
    from t2t_lite.metrics import scoring  # noqa: F401
