"""benchmarks/train_and_score.sh, with stand-ins for the t2t commands: what it runs
for a scored run (a lever's) and for one trained only (a recipe's member)."""
import os
import stat
import subprocess

import pytest

SCRIPT = os.path.join(os.path.dirname(__file__), os.pardir, "benchmarks", "train_and_score.sh")
STAND_IN = """#!/usr/bin/env bash
echo "$(basename "$0") $*" >> "$CALLS"
if [ "$(basename "$0")" = t2t-datagen ] && [[ "$*" == *--eval_split=* ]]; then
  echo "eval files: /eval/src /eval/ref"
fi
"""


def run_script(tmp_path, eval_split):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in ("t2t-datagen", "t2t-trainer", "t2t-avg-all", "t2t-decoder"):
        path = bin_dir / name
        path.write_text(STAND_IN)
        path.chmod(path.stat().st_mode | stat.S_IEXEC)
    calls = tmp_path / "calls"
    env = dict(os.environ, PATH=f"{bin_dir}:{os.environ['PATH']}", CALLS=str(calls),
               PROBLEM="translate_ende_multi30k", HPARAMS_SET="transformer_multi30k_tiny",
               RAW_DIR=str(tmp_path / "raw"), ROOT=str(tmp_path / "run"))
    env.pop("EVAL_SPLIT", None)
    if eval_split is not None:
        env["EVAL_SPLIT"] = eval_split
    done = subprocess.run(["bash", SCRIPT], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1].startswith("training: 0 min; everything: 0 min")
    return [line.split() for line in calls.read_text().splitlines()]


def test_a_scored_run_averages_and_decodes_its_split(tmp_path):
    calls = run_script(tmp_path, "dev")
    assert [call[0] for call in calls] == ["t2t-datagen", "t2t-trainer", "t2t-avg-all",
                                           "t2t-decoder"]
    assert "--eval_split=dev" in calls[0]
    assert "--decode_from_file=/eval/src" in calls[3]
    assert "--decode_reference=/eval/ref" in calls[3]


def test_a_run_trained_only_neither_averages_nor_decodes(tmp_path):
    calls = run_script(tmp_path, "")
    assert [call[0] for call in calls] == ["t2t-datagen", "t2t-trainer"]
    assert not any(part.startswith("--eval") for part in calls[0])


def test_the_split_must_be_given_even_if_empty(tmp_path):
    with pytest.raises(AssertionError, match="EVAL_SPLIT"):
        run_script(tmp_path, None)
