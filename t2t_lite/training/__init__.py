"""Training: schedules, losses, the train/eval loop, checkpoints."""
