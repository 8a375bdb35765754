"""benchmarks/sweep_decode.py's grid edges: a best setting at the end of a range it
swept, where the best may lie beyond the values tried."""
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), os.pardir, "benchmarks"))
from sweep_decode import grid_edges  # noqa: E402

GRID = {"averages": "5,10,20", "beams": "4,5,8", "alphas": "0.6,1.0,1.4"}


@pytest.mark.parametrize("best, edges", [
    ({"averages": 10, "beams": 5, "alphas": 1.0}, []),
    ({"averages": 10, "beams": 5, "alphas": 1.4},
     ["alpha 1.4 is the largest of --alphas=0.6,1.0,1.4"]),
    ({"averages": 5, "beams": 8, "alphas": 0.6},
     ["averaged 5 is the smallest of --averages=5,10,20",
      "beam 8 is the largest of --beams=4,5,8",
      "alpha 0.6 is the smallest of --alphas=0.6,1.0,1.4"]),
])
def test_a_best_at_the_end_of_a_swept_range_is_named(best, edges):
    assert grid_edges(GRID, best) == edges


def test_fixed_or_compared_settings_and_floors_are_no_edges():
    # One value is fixed and two are compared: one of them is always at an end.
    assert grid_edges({"averages": "10", "beams": "4,5", "alphas": "0,0.6,1.0"},
                      {"averages": 10, "beams": 5, "alphas": 0.0}) == []  # alpha 0: the floor
    assert grid_edges({"averages": "1,5,10", "beams": "1,4,5", "alphas": "0.6"},
                      {"averages": 1, "beams": 1, "alphas": 0.6}) == []
