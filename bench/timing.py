"""Timing shared by the bench scripts: the best of several runs."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

R = TypeVar("R")


def fastest(repeats: int, work: Callable[[], R]) -> tuple[float, R]:
    """(seconds of the fastest of `repeats` runs, what the last run returned).

    The fastest run is the one the rest of a noisy machine disturbed least.
    """
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        result = work()
        times.append(time.perf_counter() - start)
    return min(times), result


def best_of(repeats: int, work: Callable[[], object]) -> float:
    """Seconds of the fastest of `repeats` runs."""
    return fastest(repeats, work)[0]
