"""The library's own registrations: the problems, models, hparams sets and metrics
that register themselves when their modules are imported.

This module stands above all four, so that ``registry.py`` (the ground floor every
one of them registers with) names none of them. Like ``registry.import_usr_dir``
for a user's package, it imports them by name when a command asks.
"""
from __future__ import annotations

import importlib


def load_builtins() -> None:
    """Imports the library's own problems, models, hparams sets and metrics."""
    importlib.import_module("t2t_lite.problems")
    importlib.import_module("t2t_lite.models")
    importlib.import_module("t2t_lite.hparams")
    importlib.import_module("t2t_lite.metrics.scoring")
