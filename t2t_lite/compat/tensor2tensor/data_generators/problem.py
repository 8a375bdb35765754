"""tensor2tensor.data_generators.problem: split names and space ids."""
from t2t_lite.compat.problem_contract import DatasetSplit  # noqa: F401
from t2t_lite.compat.refusals import missing_names


class _SpaceIds(type):
    """Any of T2T's SpaceID names: 0. T2T added a learned embedding of the space id to
    every encoder input; with one problem a run that is one constant vector, which
    t2t-lite leaves out (docs/FROM_T2T.md)."""

    def __getattr__(cls, name: str) -> int:
        if name.startswith("__"):
            raise AttributeError(name)
        return 0


class SpaceID(metaclass=_SpaceIds):
    GENERIC = 0


__getattr__ = missing_names("data_generators.problem", {
    "Problem": "subclass text_problems.Text2TextProblem (or translate.TranslateProblem): "
               "t2t-lite's problems are text to text",
})
