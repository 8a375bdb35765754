"""The library's own registrations: the problems, models, hparams sets and metrics
that register themselves when their modules are imported.

This module stands above all four, so that ``registry.py`` (the ground floor every
one of them registers with) names none of them.
"""
from __future__ import annotations

from t2t_lite import registry


def load_builtins() -> None:
    """Registers the library's own problems, models, hparams sets and metrics."""
    # Imported on call, not with this module: each import registers its names,
    # and a command asks for them once its flags are read (bin/common.py).
    from t2t_lite import hparams, models, problems  # noqa: F401
    from t2t_lite.hparams import t2t_lstm as t2t_lstm_sets  # noqa: F401
    from t2t_lite.metrics import scoring  # noqa: F401
    from t2t_lite.models import t2t_lstm as t2t_lstm_models  # noqa: F401
    from t2t_lite.compat import aliases
    if aliases.install not in registry.BEFORE_USR_DIR_IMPORT:
        # A usr_dir written for tensor2tensor imports it: give it our twins.
        registry.BEFORE_USR_DIR_IMPORT.append(aliases.install)
