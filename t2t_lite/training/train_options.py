"""What the train loop is asked to do (``TrainOptions``: how long, how often to
evaluate, save and log, the best to keep, the first weights) and what scores
its dev decodes (``DevScorer``)."""
from __future__ import annotations

import dataclasses
from typing import Protocol

import keras

from t2t_lite.training.best_checkpoint import KeepBestOptions
from t2t_lite.training.warm_start import WarmStart


@dataclasses.dataclass
class TrainOptions:
    """How long to train and how often to evaluate, save and log."""
    train_steps: int = 1000
    train_minutes: float = 0.0  # stop (and save) after this much training in all attempts; 0 = none
    eval_every_steps: int = 1000
    eval_batches: int = 0  # 0: the whole dev split
    save_checkpoints_steps: int = 1000
    save_checkpoints_minutes: float = 10.0
    keep_checkpoint_max: int = 20
    log_every_steps: int = 100
    seed: int = 1234
    # Decode a dev sample and score it (BLEU / F1) every this many steps; 0 = never.
    decode_eval_every_steps: int = 0
    evaluate: bool = True  # False: no dev evaluation at all (schedule "train")
    # Keep the best checkpoint by a dev metric (OUTPUT_DIR/best), and stop once it
    # stops improving (best_checkpoint.py); None: neither.
    keep_best: KeepBestOptions | None = None
    # Keep one checkpoint per this many hours beyond keep_checkpoint_max; 0 = none.
    keep_checkpoint_every_n_hours: float = 0.0
    # A new run's first weights (warm_start.plan_warm_start); unused when it resumes.
    warm_start: WarmStart | None = None


class DevScorer(Protocol):
    """Scores real decodes of the dev set (``decoding.dev_eval.DevDecodeScorer``)."""

    def __call__(self, model: keras.Model) -> list[str]:
        """The score report of ``model`` as it is, its headline first."""

    def figure(self, report: list[str]) -> float:
        """The headline figure of a report."""
