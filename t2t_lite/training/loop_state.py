"""The small pieces of state the training loop keeps between steps: throughput
since the last log line, and what a step with a NaN or Inf loss does (early
stopping is best_checkpoint.py's)."""
from __future__ import annotations

import logging
import time


class NonFiniteLossError(ValueError):
    """A training step whose loss or gradient is NaN or Inf."""


class NonFiniteSteps:
    """What a step with a NaN or Inf loss or gradient does: stop the run (its bad
    weights are never saved) or, with ``skip_nonfinite_steps``, skip it, unless
    ``MAX_CONSECUTIVE`` steps in a row are bad."""

    MAX_CONSECUTIVE = 20

    def __init__(self, skip: bool):
        self.skip = skip
        self.consecutive = self.total = 0

    def after_bad_step(self, loss: float, step: int, last_checkpoint: str | None) -> None:
        kept = f"{last_checkpoint} is the last good checkpoint" if last_checkpoint else (
            "no checkpoint was written yet")
        if not self.skip:
            raise NonFiniteLossError(
                f"the loss or its gradient is not finite (loss {loss}) at step {step}; stopped "
                f"without saving, so {kept}. Lower learning_rate or set clip_grad_norm, or "
                "--hparams=skip_nonfinite_steps=true to skip such steps")
        self.consecutive += 1
        self.total += 1
        logging.warning("skipped a batch with a non-finite loss or gradient (loss %s) after "
                        "step %d; %d skipped so far", loss, step, self.total)
        if self.consecutive >= self.MAX_CONSECUTIVE:
            raise NonFiniteLossError(
                f"{self.consecutive} batches in a row had a non-finite loss or gradient after "
                f"step {step}; stopped, {kept}")


class Window:
    """Loss and throughput since the last log line."""

    def __init__(self):
        self.reset()

    def reset(self) -> None:
        self.start = time.monotonic()
        self.steps = 0
        self.loss = self.tgt = self.src = 0.0

    def add(self, loss: float, tgt: float, src: float) -> None:
        self.steps += 1
        self.loss += loss
        self.tgt += tgt
        self.src += src

    def flush(self) -> dict[str, float]:
        seconds = max(time.monotonic() - self.start, 1e-9)
        stats = {"loss": self.loss / max(self.tgt, 1.0), "steps_per_s": self.steps / seconds,
                 "target_tokens_per_s": self.tgt / seconds,
                 "source_tokens_per_s": self.src / seconds}
        self.reset()
        return stats
