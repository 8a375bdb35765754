"""What a resumed run may change, checked before its checkpoint is restored and before
anything (hparams.json included) is written.

* Training hparams (batch size, learning rate and its schedule, dropout, ...) may
  change: the run goes on with the new values, said in one line naming each key's
  old and new value. The architecture's keys are refused earlier
  (``experiment.resolve``); so are here the keys whose state the checkpoints hold:
  the optimizer (its slots, e.g. Adam's moments, would be dropped without a word)
  and float16's loss scaling.
* The data dir may move: another ``--data_dir`` holding the same train shards
  (``tfrecords.shards_fingerprint``, which the input's saved position records) is
  said in one line and the input continues. Another ``--data_dir`` holding other
  shards is refused: hparams.json would name data the run did not train on.
  Shards rewritten in the same data dir restart the input (``RunCheckpoints``).
"""
from __future__ import annotations

import logging
import os
from typing import Any

from t2t_lite.experiment import HPARAMS_FILE, Experiment, ExperimentError, load_record
from t2t_lite.training.run_checkpoints import RunCheckpoints


class ResumeError(ExperimentError):
    """A resume that would change what the run's checkpoints or data are."""


def _why_fixed(key: str, old: Any, new: Any) -> str | None:
    """Why ``key`` may not go from ``old`` to ``new`` on resume, or None."""
    if key == "optimizer":
        return "the checkpoints hold that optimizer's state (another would start without it)"
    if key == "dtype" and "mixed_float16" in (old, new):
        return "mixed_float16's checkpoints hold its loss scale, which others lack"
    return None


def check_resumed_hparams(experiment: Experiment) -> None:
    """Refuses a change to a key whose state the checkpoints hold; says the others."""
    record = load_record(experiment.output_dir) or {}
    saved, now = record.get("hparams") or {}, experiment.hparams.values()
    changes = [(key, saved[key], now[key]) for key in sorted(now)
               if key in saved and saved[key] != now[key]]
    for key, old, new in changes:
        why = _why_fixed(key, old, new)
        if why:
            raise ResumeError(
                f"--hparams {key}={new!r}: {experiment.output_dir} was trained with "
                f"{key}={old!r} ({HPARAMS_FILE}), and {why}; resume with {key}={old!r}, or "
                f"start a new run from its weights: --warm_start_from={experiment.output_dir}")
    if changes:
        logging.warning("resuming %s with changed hparams: %s", experiment.output_dir,
                        ", ".join(f"{key} {old!r} -> {new!r}" for key, old, new in changes))


def check_resumed_data(experiment: Experiment, checkpoints: RunCheckpoints,
                       step: int) -> None:
    """Resumed at ``step`` with another ``--data_dir`` than hparams.json names: refused
    unless it holds the same train shards (a moved or copied data dir), said in one line."""
    old = (load_record(experiment.output_dir) or {}).get("data_dir")
    new = os.path.abspath(experiment.data_dir)
    if not old or os.path.realpath(old) == os.path.realpath(new):
        return
    recorded = checkpoints.recorded_shards(step)
    if recorded is None:  # a state without its shards' fingerprint, or none (multi-GPU)
        logging.warning("resuming %s on --data_dir=%s (it trained on %s): the input restarts",
                        experiment.output_dir, new, old)
    elif recorded == checkpoints.input_shards:
        logging.warning("resuming %s on --data_dir=%s, which holds the train shards it "
                        "trained on in %s (moved or copied): the input continues",
                        experiment.output_dir, new, old)
    else:
        raise ResumeError(
            f"--data_dir={experiment.data_dir} holds other train shards than {old}, which "
            f"{experiment.output_dir} trained on ({HPARAMS_FILE}); give --data_dir={old} "
            f"(or a copy of it), or train on the new data in a new run: "
            f"--warm_start_from={experiment.output_dir}")
