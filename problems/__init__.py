"""Registered problems (installed as ``t2t_lite.problems``).

Importing this package registers every built-in problem: each problem module
is imported here (translation and parsing modules are added to this list).
"""
from t2t_lite.problems import algorithmic  # noqa: F401  (registers on import)
