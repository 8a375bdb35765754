"""tensor2tensor's package, as t2t-lite's twins (``t2t_lite.compat``'s docstring)."""
from t2t_lite.compat.refusals import missing_modules

__getattr__ = missing_modules(__name__)
