"""Training: length-bucketed batches, the loop, schedules, checkpoints, DDP, the bundle at the end."""
