"""Timing shared by the bench scripts: the best of several runs."""

from __future__ import annotations

import time
from collections.abc import Callable


def best_of(repeats: int, work: Callable[[], object]) -> float:
    """The fastest of `repeats` runs: the least disturbed by the rest of a noisy machine."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return min(times)
