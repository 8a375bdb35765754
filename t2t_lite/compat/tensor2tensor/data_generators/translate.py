"""tensor2tensor.data_generators.translate: T2T's TranslateProblem and compile_data."""
from t2t_lite.compat.refusals import missing_names
from t2t_lite.compat.translate_sources import TranslateProblem, compile_data  # noqa: F401

__getattr__ = missing_names("data_generators.translate", {})
