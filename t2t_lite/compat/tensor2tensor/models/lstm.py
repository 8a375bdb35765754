"""tensor2tensor.models.lstm: T2T's LSTM hparams sets (hparams/t2t_lstm.py)."""
from __future__ import annotations

from t2t_lite import registry
from t2t_lite.compat.refusals import missing_names

_refused = missing_names("models.lstm", {})


def __getattr__(name: str):
    if name in registry.hparams_sets and name.startswith("lstm"):
        return registry.hparams_sets[name]
    return _refused(name)
