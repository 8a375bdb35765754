"""The best checkpoint of a run by a dev metric, and stopping once it stops improving
(fairseq's --best-checkpoint-metric and --patience, Marian's --keep-best and
--early-stopping, tensor2tensor's eval_early_stopping_steps).

Two things in the run's output dir, written by the chief only:

* ``best.json``: the metric, its direction, the patience, the best evaluation
  (step, value, report line), the evaluations since it and every evaluation so far.
  Rewritten whole (then renamed) after each evaluation.
* ``best/``: the best evaluation's checkpoint ``ckpt-N`` (hard links to the run's own
  files, so rotation by keep_checkpoint_max never removes it; copies where links
  fail), its ``checkpoint`` index, the run's ``hparams.json`` and ``best.json`` as it
  was then: a run folder, as t2t-avg-all writes one, that t2t-decoder, t2t-exporter
  (--output_dir) and t2t-avg-all (--model_dir) take. Built beside it
  (``.best.partial``) and swapped in, so a kill leaves the previous best whole.

An evaluation improves when it beats the best by more than ``min_improvement``
(higher for a decode metric unless it says otherwise, as TER does; lower for the
loss): a tie keeps the first best, and a NaN (or infinite) value never improves; it
counts as an evaluation without improvement. The trainer saves the run's checkpoint of an improving step first,
then writes ``best.json``, then ``best/``. So a resumed run (from its latest
checkpoint, at or after the best's step) forgets only evaluations made after that
checkpoint, which it makes again, and it rebuilds ``best/`` from the run's
checkpoint when a kill came between the record and the folder.
"""
from __future__ import annotations

import dataclasses
import json
import logging
import math
import os
import shutil
from typing import Callable

from t2t_lite.experiment import HPARAMS_FILE
from t2t_lite.training.checkpoint_state import (INDEX, checkpoint_step, data_files,
                                                read_index, write_index)
from t2t_lite.training.run_checkpoints import RunCheckpoints

RECORD = "best.json"
FOLDER = "best"
LOSS = "loss"  # the teacher-forced dev loss; any other metric is a decode metric's name
_STAGING, _OLD = ".best.partial", ".best.old"


class BestCheckpointError(ValueError):
    """The run's record of its best disagrees with the request or the disk."""


@dataclasses.dataclass(frozen=True)
class KeepBestOptions:
    """Which dev metric decides the best checkpoint, and when to stop."""
    metric: str                  # LOSS or a decode metric (bleu, chrf, ter, evalb, ...)
    patience: int = 0            # evaluations without improvement before stopping; 0: never
    patience_steps: int = 0      # or steps since the best (eval_early_stopping_steps); 0: off
    min_improvement: float = 0.0  # an improvement is by more than this
    lower_is_better: bool = False  # a decode metric that improves going down (TER)

    @property
    def maximize(self) -> bool:
        return self.metric != LOSS and not self.lower_is_better


@dataclasses.dataclass(frozen=True)
class Evaluation:
    step: int
    value: float  # NaN when the evaluation gave no number
    report: str   # its headline: "dev loss 1.2345", "sequence accuracy 87.50% (35/40)"

    def to_json(self) -> dict:
        return {"step": self.step, "value": self.value if math.isfinite(self.value) else None,
                "report": self.report}


class BestRecord:
    """The evaluations of ``options.metric`` in ``output_dir``, their best, the
    patience spent; ``keep`` writes the best folder."""

    def __init__(self, options: KeepBestOptions, output_dir: str):
        self.options = options
        self.output_dir = output_dir
        self.history: list[Evaluation] = []
        self.best: Evaluation | None = None
        self.since_best = 0  # evaluations since the best (all of them while there is none)
        self.stopped_at: int | None = None

    @property
    def folder(self) -> str:
        return os.path.join(self.output_dir, FOLDER)

    @property
    def record_path(self) -> str:
        return os.path.join(self.output_dir, RECORD)

    def improves(self, value: float) -> bool:
        if not math.isfinite(value):
            return False
        if self.best is None:
            return True
        gain = value - self.best.value if self.options.maximize else self.best.value - value
        return gain > self.options.min_improvement

    def add(self, step: int, value: float, report: str) -> bool:
        """Notes an evaluation at ``step``; True when it is the new best."""
        evaluation = Evaluation(step, value, report)
        self.history.append(evaluation)
        improved = self.improves(value)
        if improved:
            self.best, self.since_best = evaluation, 0
        else:
            self.since_best += 1
        return improved

    def patience_spent(self) -> bool:
        """The last evaluation's patience is used up: the run stops."""
        if not self.history:
            return False
        if self.options.patience_steps:
            since = self.history[-1].step - (self.best.step if self.best else 0)
            return since >= self.options.patience_steps
        return bool(self.options.patience) and self.since_best >= self.options.patience

    def evaluated_at(self, step: int) -> bool:
        return any(evaluation.step == step for evaluation in self.history)

    # ----- the record -----
    def to_json(self) -> dict:
        opts = self.options
        patience = ({"patience_steps": opts.patience_steps} if opts.patience_steps
                    else {"patience": opts.patience})
        return {"metric": opts.metric, "direction": "max" if opts.maximize else "min",
                "min_improvement": opts.min_improvement, **patience,
                "best": self.best.to_json() if self.best else None,
                "best_checkpoint": (os.path.join(FOLDER, f"ckpt-{self.best.step}")
                                    if self.best else None),
                "evaluations_since_best": self.since_best, "stopped_early_at": self.stopped_at,
                "history": [evaluation.to_json() for evaluation in self.history]}

    def write_record(self) -> None:
        _write_json(self.record_path, self.to_json())

    def resume(self, step: int) -> None:
        """Takes up the record of a run resumed at ``step``: evaluations after it are
        forgotten (the run makes them again), the best and the patience spent are
        those of the rest (under this run's options), and a best folder that a kill
        left behind the record is rebuilt from the run's checkpoint."""
        for leftover in (_STAGING, _OLD):
            shutil.rmtree(os.path.join(self.output_dir, leftover), ignore_errors=True)
        record = self._read_record()
        if record is None:
            if os.path.exists(self.folder):
                raise BestCheckpointError(
                    f"{self.folder} exists but {self.record_path}, which says what it holds, "
                    f"does not: move {self.folder} away (or restore {self.record_path}) to "
                    "keep the best of this run there")
            return
        if record.get("metric") != self.options.metric:
            raise BestCheckpointError(
                f"{self.record_path} keeps the best by {record.get('metric')!r}, not "
                f"{self.options.metric!r}: give --best_checkpoint_metric="
                f"{record.get('metric')}, or move {self.record_path} and {self.folder} away "
                "to start a new record")
        kept = [entry for entry in record["history"] if entry["step"] <= step]
        for entry in kept:
            value = math.nan if entry["value"] is None else float(entry["value"])
            self.add(entry["step"], value, entry["report"])
        if len(kept) < len(record["history"]):
            logging.info("%s: %d evaluations after step %d (the checkpoint resumed from) are "
                         "forgotten; the run makes them again", self.record_path,
                         len(record["history"]) - len(kept), step)
        if self.best and self._folder_step() != self.best.step:
            self._rebuild()

    def _read_record(self) -> dict | None:
        if not os.path.exists(self.record_path):
            return None
        try:
            with open(self.record_path, encoding="utf-8") as f:
                record = json.load(f)
            for entry in record["history"]:  # each field of the type it is read as
                if not (isinstance(entry["step"], int) and isinstance(entry["report"], str)
                        and (entry["value"] is None or isinstance(entry["value"], (int, float)))):
                    raise ValueError(f"evaluation {entry} is not step, value, report")
            return record
        except (OSError, ValueError, KeyError, TypeError) as error:
            raise BestCheckpointError(
                f"{self.record_path} is unreadable ({type(error).__name__}: {error}); fix it, "
                f"or move it and {self.folder} away to start a new record") from None

    def _folder_step(self) -> int | None:
        index = read_index(self.folder) if os.path.isdir(self.folder) else None
        return checkpoint_step(index.latest) if index and index.latest else None

    def _rebuild(self) -> None:
        source = os.path.join(self.output_dir, f"ckpt-{self.best.step}")
        if not os.path.exists(source + ".index"):
            logging.warning("%s names step %d as the best, but %s is gone: %s is not that "
                            "checkpoint", self.record_path, self.best.step, source, self.folder)
            return
        logging.info("rebuilding %s from %s (a kill came before it was written)",
                     self.folder, source)
        self.keep(source)

    # ----- the folder -----
    def keep(self, checkpoint: str) -> str:
        """Makes the run's checkpoint ``checkpoint`` (the best's) the best folder;
        returns its path there."""
        staging = os.path.join(self.output_dir, _STAGING)
        shutil.rmtree(staging, ignore_errors=True)
        os.makedirs(staging)
        for path in [checkpoint + ".index", *data_files(checkpoint)]:
            _link_or_copy(path, os.path.join(staging, os.path.basename(path)))
        kept = os.path.join(staging, os.path.basename(checkpoint))
        write_index(staging, [kept])
        shutil.copyfile(os.path.join(self.output_dir, HPARAMS_FILE),
                        os.path.join(staging, HPARAMS_FILE))
        _write_json(os.path.join(staging, RECORD), self.to_json())
        self._swap(staging)
        return os.path.join(self.folder, os.path.basename(checkpoint))

    def _swap(self, staging: str) -> None:
        old = os.path.join(self.output_dir, _OLD)
        shutil.rmtree(old, ignore_errors=True)
        if os.path.isdir(self.folder):
            foreign = [name for name in os.listdir(self.folder) if not _written_here(name)]
            if foreign:  # e.g. an export below it: kept, with the checkpoint it came from
                old = os.path.join(self.output_dir, f"{FOLDER}-{self._folder_step()}")
                while os.path.exists(old):
                    old += "+"
                logging.warning("%s holds files the trainer did not write (%s): it is kept "
                                "as %s", self.folder, ", ".join(sorted(foreign)[:3]), old)
            os.replace(self.folder, old)
        os.replace(staging, self.folder)
        shutil.rmtree(os.path.join(self.output_dir, _OLD), ignore_errors=True)

    # ----- what the trainer says -----
    def stop_line(self) -> str:
        """Why the run stops, and where its best is (one line)."""
        opts = self.options
        if opts.patience_steps:
            since = self.history[-1].step - (self.best.step if self.best else 0)
            waited = f"for {since} steps (--eval_early_stopping_steps={opts.patience_steps})"
        else:
            waited = f"for {self.since_best} evaluations (--patience={opts.patience})"
        if self.best is None:
            return (f"stopping early at step {self.history[-1].step}: no evaluation of "
                    f"{opts.metric} gave a number {waited}; no best checkpoint was kept")
        return (f"stopping early at step {self.history[-1].step}: {opts.metric} has not "
                f"improved {waited}; the best, {self.best.report} at step {self.best.step}, "
                f"is {os.path.join(self.folder, f'ckpt-{self.best.step}')}")

    def summary(self) -> dict:
        """The best, for the trainer's closing JSON line."""
        if self.best is None:
            return {"best_metric": self.options.metric, "best_checkpoint": None}
        return {"best_metric": self.options.metric, "best_step": self.best.step,
                "best_value": self.best.to_json()["value"],
                "best_checkpoint": os.path.join(self.folder, f"ckpt-{self.best.step}"),
                "stopped_early": self.stopped_at is not None}


def _written_here(name: str) -> bool:
    return name in (INDEX, HPARAMS_FILE, RECORD) or (
        name.startswith("ckpt-") and (name.endswith(".index") or ".data-" in name))


def _link_or_copy(source: str, target: str) -> None:
    """A hard link (free, and it outlives the run's name for the file), else a copy."""
    try:
        os.link(source, target)
    except OSError:
        shutil.copyfile(source, target)


def _write_json(path: str, record: dict) -> None:
    with open(path + ".tmp", "w", encoding="utf-8") as f:
        json.dump(record, f, indent=1, allow_nan=False)
    os.replace(path + ".tmp", path)


class BestCheckpoint:
    """What the training loop does with the best metric's evaluations. Every worker
    calls it at the same steps; the chief alone holds the record, decides and writes,
    and the others follow its decisions through ``agree`` (the trainer's: a flag is
    true when it is on any worker), so that they save and stop with it."""

    def __init__(self, options: KeepBestOptions, output_dir: str, chief: bool,
                 agree: Callable[..., list[bool]], checkpoints: RunCheckpoints):
        self.options = options
        self.record = BestRecord(options, output_dir)
        self.chief = chief
        self._agree = agree
        self._checkpoints = checkpoints
        self._tracked_at = -1  # the step of the last evaluation fed
        self.stop = False      # patience is spent: the loop ends

    def wants(self, metric_is_loss: bool, step: int) -> bool:
        """An evaluation of this kind (the dev loss, or decodes) at ``step`` is to be fed."""
        return (self.options.metric == LOSS) == metric_is_loss and self._tracked_at != step

    def resume(self, step: int, every: int) -> bool:
        """Takes up the record (the chief's) of a run at ``step``, whose metric is
        evaluated ``every`` steps; sets ``stop`` when its patience is spent already.
        True when ``step`` is to be evaluated now: a kill came between its checkpoint
        and its evaluation's record."""
        if self.chief:
            self.record.resume(step)
        evaluated, spent = self._agree(self.chief and self.record.evaluated_at(step),
                                       self.chief and self.record.patience_spent())
        if evaluated:
            self._tracked_at = step
        if spent:
            self.stop = True
            if self.chief:
                self.record.stopped_at = self.record.history[-1].step
                logging.warning("nothing to train: %s; raise the patience to train on",
                                self.record.stop_line().replace("stopping", "it stopped", 1))
        return bool(step) and step % every == 0 and not evaluated and not spent

    def track(self, step: int, value: float, report: str) -> None:
        """Feeds the evaluation at ``step`` (the chief's ``value``): an improvement is
        saved as the run's checkpoint, noted in best.json, then kept in the best
        folder; a spent patience sets ``stop``."""
        decided = [False, False]
        if self.chief:
            improved = self.record.add(step, value, report)
            decided = [improved, self.record.patience_spent()]
        improved, self.stop = self._agree(*decided)
        self._tracked_at = step
        if improved and self._checkpoints.saved_step != step:
            self._checkpoints.save(step)  # every worker takes part in a save
        if not self.chief:
            return
        if self.stop:
            self.record.stopped_at = step
        self.record.write_record()
        if improved:
            self.record.keep(os.path.join(self.record.output_dir, f"ckpt-{step}"))
        if self.stop:
            logging.info(self.record.stop_line())

    def summary(self) -> dict:
        """The best kept, for the trainer's closing line (the chief's; {} elsewhere)."""
        return self.record.summary() if self.chief else {}
