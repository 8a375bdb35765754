"""tensor2tensor.utils's twins: the names a usr_dir imports from it."""
from t2t_lite.compat.refusals import missing_modules

__getattr__ = missing_modules(__name__)
