"""Registered models: importing this package registers them."""
from t2t_lite.models import bahdanau  # noqa: F401
from t2t_lite.models import lstm_seq2seq  # noqa: F401
from t2t_lite.models import luong  # noqa: F401
from t2t_lite.models import transformer  # noqa: F401
