"""Registered problems (installed as ``t2t_lite.problems``)."""
