"""tensor2tensor.utils.hparam: T2T's HParams is t2t-lite's (add_hparam, set_hparam,
del_hparam, get, values, parse), with every value checked."""
from t2t_lite.hparam import HParams  # noqa: F401
from t2t_lite.compat.refusals import missing_names

__getattr__ = missing_names("utils.hparam", {})
