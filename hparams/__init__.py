"""Registered hparams sets (installed as ``t2t_lite.hparams``)."""
from t2t_lite.hparams import lstm  # noqa: F401
from t2t_lite.hparams import parsing  # noqa: F401
from t2t_lite.hparams import transformer  # noqa: F401
