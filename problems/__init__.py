"""Registered problems (installed as ``t2t_lite.problems``).

Importing this package registers every built-in problem: each problem module
is imported here (translation and parsing modules are added to this list).
"""
from t2t_lite.problems import algorithmic  # noqa: F401  (registers on import)
from t2t_lite.problems import multi30k  # noqa: F401
from t2t_lite.problems import wmt  # noqa: F401
from t2t_lite.problems import parsing  # noqa: F401
from t2t_lite.problems import translate_files  # noqa: F401
from t2t_lite.problems import parsing_files  # noqa: F401
