"""Learning-rate schedules as pure functions of the step (nanoGPT style): easy to test, trivially resumable."""

from __future__ import annotations

import math


def learning_rate(step: int, peak: float, warmup: int, total: int, kind: str, floor: float = 0.1) -> float:
    """Linear warmup to `peak`, then cosine decay to `floor` x peak at `total`, or Noam's inverse square root."""
    step = max(step, 1)
    if kind == "noam":
        warmup = max(warmup, 1)
        return peak * min(step / warmup, math.sqrt(warmup / step))
    if step <= warmup:
        return peak * step / max(warmup, 1)
    progress = min(1.0, (step - warmup) / max(total - warmup, 1))
    # 0.1 by default: the last epochs still learn, and averaging the best checkpoints does the smoothing
    end = floor * peak
    return end + (peak - end) * 0.5 * (1 + math.cos(math.pi * progress))
