"""benchmarks/step_cost.py (continuous batching's estimate): its arithmetic, and that
it still times the library's decode step."""
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), os.pardir, "benchmarks"))
import step_cost  # noqa: E402


def test_batches_run_their_longest_output_and_sentences_sum_theirs():
    # Sorted by source length: (9: 5), (8: 2) | (7: 1), (3: 4).
    lengths = [(3, 4), (9, 5), (7, 1), (8, 2)]
    assert step_cost.schedule(lengths, 2) == (5 + 4, 12)
    assert step_cost.schedule(lengths, 4) == (5, 12)
    assert step_cost.schedule(lengths, 1) == (12, 12)


def test_the_fit_recovers_a_line():
    fixed, per_input = step_cost.linear_fit({2: 1.5 + 0.2 * 2, 8: 1.5 + 0.2 * 8, 64: 1.5 + 0.2 * 64})
    assert fixed == pytest.approx(1.5) and per_input == pytest.approx(0.2)


def test_it_times_decode_steps_of_a_tiny_shape(capsys):
    assert step_cost.main(["--hparams_set=transformer_tiny", "--vocab_size=40", "--beams=2",
                           "--items=2,1", "--source_length=3", "--steps=2",
                           "--repeats=1"]) == 0
    line = capsys.readouterr().out.strip().splitlines()[-1]
    assert line.startswith("beam 2: 2 inputs ") and "an input" in line


def test_part_two_needs_all_three_flags(capsys):
    with pytest.raises(SystemExit):
        step_cost.main(["--output_dir=run"])
    assert "--output_dir, --source and --decoded together" in capsys.readouterr().err
