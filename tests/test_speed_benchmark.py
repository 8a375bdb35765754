"""benchmarks/speed.py still runs against the library it times (it builds a model
from a problem of its own, which the Problem interface can outgrow)."""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), os.pardir, "benchmarks"))
import speed  # noqa: E402


def test_the_speed_benchmark_decodes_a_tiny_shape_and_reports_it(monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", [
        "speed.py", "--shape=tiny", "--only=beam", "--beam=2", "--vocab=50",
        "--decode_batch=2", "--src_len=4", "--out_len=3"])
    speed.main()
    report = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert report["beam"]["beam"] == 2 and report["beam"]["out_len"] == 3
    assert report["beam"]["out_tokens_per_s"] > 0 and report["beam"]["decode_traces"] == 1
