"""Fine-tuning: a new run whose first weights are another run's (``--warm_start_from``).

The source is a run folder t2t-trainer wrote (its latest checkpoint), a folder
t2t-avg-all wrote (the averaged weights) or one checkpoint (``RUN/ckpt-N``).
Only the model's weights are taken, as tensor2tensor's warm start took the
trainable variables: the new run counts its steps from 0, with a fresh optimizer
(Adam's moments) and its own learning-rate schedule, warmup included, in its own
output dir. (fairseq's ``--restore-file`` with ``--reset-optimizer
--reset-lr-scheduler --reset-meters``; OpenNMT's ``-train_from`` with
``-reset_optim all``.) To keep all three, resume the run itself instead.

Allowed: another problem whose data has the same vocabulary (domain adaptation),
and other training hparams (learning rate, dropout, batch size, schedule).
Refused in one line, before anything is written: a source of another model,
another architecture hparam (named) or another vocabulary, and one whose
checkpoint is missing or damaged (``checkpoint_state``: the newest good one is
named). The source is only read.

An output dir that holds checkpoints resumes from them, as tensor2tensor's
Estimator ignored a warm start beside a checkpoint: re-running the command that
started a fine-tuning resumes it (one line says so), while another source is
refused rather than ignored. ``OUTPUT_DIR/warm_start.json`` records where the
first weights came from.
"""
from __future__ import annotations

import dataclasses
import json
import logging
import os
import re

import keras
import tensorflow as tf

from t2t_lite.experiment import Experiment, load_record
from t2t_lite.training.checkpoint_state import (checkpoint_step, checkpoint_to_read,
                                                checkpoints_on_disk, first_difference,
                                                read_index, recorded_architecture)
from t2t_lite.training.checkpoints import load_weights

FLAG = "--warm_start_from"
RECORD_FILE = "warm_start.json"
_CHECKPOINT_FILE = re.compile(r"\.(index|data-\d{5}-of-\d{5})$")


class WarmStartError(ValueError):
    """The source cannot start this run (another model, architecture or vocabulary),
    or the output dir resumes a run of its own."""


@dataclasses.dataclass(frozen=True)
class WarmStart:
    """A checked source: ``source`` as given (absolute), ``checkpoint`` the one read."""
    source: str
    checkpoint: str

    def load(self, model: keras.Model) -> None:
        """``model``'s weights from the source (the optimizer and the step stay fresh)."""
        load_weights(model, self.checkpoint)
        logging.info("fine-tuning from %s: the weights of %s; step, optimizer state and "
                     "learning-rate schedule start afresh", self.source, self.checkpoint)

    def write_record(self, output_dir: str) -> None:
        """``OUTPUT_DIR/warm_start.json``: where the run's first weights came from."""
        record = {"source": self.source, "checkpoint": self.checkpoint,
                  "checkpoint_step": checkpoint_step(self.checkpoint),
                  "restarted": ["step", "optimizer state", "learning-rate schedule"]}
        path = os.path.join(output_dir, RECORD_FILE)
        with tf.io.gfile.GFile(path + ".tmp", "w") as f:
            f.write(json.dumps(record, indent=2, sort_keys=True))
        tf.io.gfile.rename(path + ".tmp", path, overwrite=True)


def source_checkpoint(source: str) -> str:
    """The checkpoint ``source`` names: a folder's latest, or the prefix itself; checked
    good (else CheckpointStateError naming the newest good one)."""
    if os.path.isdir(source):
        return checkpoint_to_read(source, flag=FLAG)
    if tf.io.gfile.exists(source + ".index"):
        return checkpoint_to_read(os.path.dirname(source), source, flag=FLAG)
    prefix = _CHECKPOINT_FILE.sub("", source)
    hint = (f"; give the checkpoint's prefix, {FLAG}={prefix}"
            if prefix != source and tf.io.gfile.exists(prefix + ".index") else
            "; give a run folder, an average's folder or a checkpoint such as RUN/ckpt-N")
    raise FileNotFoundError(f"{FLAG}={source} is neither a folder nor a checkpoint "
                            f"(no {source}.index){hint}")


def plan_warm_start(experiment: Experiment, source: str) -> WarmStart | None:
    """The checked warm start of ``experiment`` from ``source``, or None when its
    output dir holds checkpoints (the run resumes: refused unless ``source`` is the
    one that started it)."""
    output_dir = experiment.output_dir
    if read_index(output_dir).exists or checkpoints_on_disk(output_dir):
        _check_resumed_source(output_dir, source)
        logging.info("%s resumes from its own checkpoints; %s=%s started it and is not "
                     "read again", output_dir, FLAG, source)
        return None
    checkpoint = source_checkpoint(source)
    _check_compatible(experiment, source, checkpoint)
    return WarmStart(os.path.abspath(source), os.path.abspath(checkpoint))


def recorded_source(output_dir: str) -> str | None:
    """The source ``OUTPUT_DIR/warm_start.json`` records, or None (none, unreadable)."""
    try:
        with open(os.path.join(output_dir, RECORD_FILE), encoding="utf-8") as f:
            return json.load(f).get("source")
    except (OSError, ValueError, AttributeError):
        return None


def _check_resumed_source(output_dir: str, source: str) -> None:
    started = recorded_source(output_dir)
    if started and os.path.realpath(started) == os.path.realpath(source):
        return
    origin = f"fine-tuned from {started}" if started else "not warm-started"
    raise WarmStartError(
        f"--output_dir={output_dir} holds checkpoints of its own run ({origin}), which "
        f"t2t-trainer resumes from and a warm start never replaces: give a new "
        f"--output_dir to fine-tune from {source}, or leave {FLAG} out to resume")


def _check_compatible(experiment: Experiment, source: str, checkpoint: str) -> None:
    """Refuses a source of another model, architecture or vocabulary than the run's."""
    saved = load_record(os.path.dirname(checkpoint)) or {}
    model = saved.get("model")
    if model and model != experiment.model_name:
        raise WarmStartError(
            f"{FLAG}={source} holds a {model} model and this run trains "
            f"{experiment.model_name}: fine-tuning keeps the model; give --model={model} "
            f"with one of its hparams sets, or a {experiment.model_name} run")
    # The checkpoint's own record; a checkpoint written before records came from the
    # run's hparams.json. With neither, nothing tells what its weights mean.
    recorded = recorded_architecture(checkpoint)
    if recorded is None and not saved:
        raise WarmStartError(
            f"{FLAG}: checkpoint {checkpoint} records no architecture or vocabulary and "
            f"{os.path.dirname(checkpoint) or '.'} holds no hparams.json: it was not written "
            "by t2t-trainer or t2t-avg-all; give one of their runs or checkpoints")
    if recorded is None:
        recorded = {**saved.get("hparams", {}),
                    "vocab_fingerprint": saved.get("vocab_fingerprint")}
    hparams = experiment.hparams.values()
    expected = {key: hparams[key]
                for key in experiment.model_cls.architecture_keys(experiment.hparams)}
    expected["vocab_fingerprint"] = experiment.data_identity()["vocab_fingerprint"]
    difference = first_difference({k: v for k, v in recorded.items() if v is not None},
                                  expected)
    if not difference:
        return
    key, trained = difference
    if key == "vocab_fingerprint":
        raise WarmStartError(
            f"{FLAG}: checkpoint {checkpoint} was trained with another vocabulary than the "
            f"one in --data_dir={experiment.data_dir} (fingerprint {trained}, not "
            f"{expected[key]}): its embeddings mean other tokens; encode the new data with "
            "the source run's vocabulary")
    raise WarmStartError(
        f"{FLAG}: checkpoint {checkpoint} was trained with {key}={trained!r} and this run "
        f"has {key}={expected[key]!r}: fine-tuning keeps the architecture (training "
        f"hparams may change): pass --hparams={key}={trained} or an hparams set with it")
