"""torch's CPU threads, fewer while other programs keep cores busy: training and decoding files.

Why: torch runs a CPU op on an OpenMP team of one thread per core, and every parallel op waits for
the team's slowest thread. When another program keeps one of two cores busy, one thread of the team
gets half a core and the whole team waits for it at every op, while the others spin on the core the
other program wants. On this 2-core machine with one busy process beside it, the demo's training ran
at 30 utterances/s against 120 alone (one thread would have run at 94; OMP_WAIT_POLICY=PASSIVE 79,
but 103 alone), and `seqx evaluate` took 82 s against 41 (one thread: 42 s). So a long CPU loop (the
training steps, the batches of a file search) checks every `interval_s` what the rest of the machine
used: the whole machine's busy CPU time (/proc/stat) less its own and its children's (the DataLoader
workers); the cores left over are its threads (at least 1, at most the count it started with).

A machine nothing else uses keeps every thread at every step, so training there computes the same
numbers as before and a run still repeats. When the count does change, the numbers differ in their
last bits from a run that kept it (matmuls sum in another order): two runs on a machine that was busy
at different moments are no longer equal to the bit. OMP_NUM_THREADS set by the user (or by torchrun
for several processes) means "this many": the governor then stays off, as it does where /proc is
missing (not Linux).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Self

import torch

from seqx.workers import process_cpu_seconds

PROC = Path("/proc")
TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100  # /proc's time unit


def machine_cpu() -> tuple[float, int] | None:
    """(seconds of busy CPU time summed over every core since boot, cores) from /proc/stat; None without it."""
    try:
        lines = (PROC / "stat").read_text().splitlines()
    except OSError:
        return None
    total = lines[0].split()  # cpu user nice system idle iowait irq softirq steal guest guest_nice
    if total[0] != "cpu" or len(total) < 9:
        return None
    user, nice, system, _idle, _iowait, irq, softirq, steal = (int(x) for x in total[1:9])
    cores = sum(1 for line in lines if line.startswith("cpu") and line[3:4].isdigit())
    return (user + nice + system + irq + softirq + steal) / TICKS, max(cores, 1)


def _process_cpu(pid: int) -> float:
    """Seconds of CPU one process (all its threads, and the children it has waited for) has used; 0
    for one that has gone."""
    try:
        return process_cpu_seconds(pid, reaped=True)
    except OSError:
        return 0.0


def children(pid: int) -> list[int]:
    """The live child processes of `pid` and theirs (/proc/PID/task/TID/children)."""
    found, todo = [], [pid]
    while todo:
        parent = todo.pop()
        for task in (PROC / str(parent) / "task").glob("*"):
            try:
                kids = [int(k) for k in (task / "children").read_text().split()]
            except (OSError, ValueError):
                continue
            found += kids
            todo += kids
    return found


REAPED = 0  # own_cpu()'s key for the children this process has waited for (no process has pid 0)


def own_cpu() -> dict[int, float]:
    """Seconds of CPU this process and each of its live children have used, by pid, each with the
    children it has waited for; under REAPED, those this process has waited for (the DataLoader
    workers are ours; they come and go with every epoch)."""
    me = os.getpid()
    mine = os.times()
    return {
        me: mine.user + mine.system,
        REAPED: mine.children_user + mine.children_system,
        **{kid: _process_cpu(kid) for kid in children(me)},
    }


def used_since(now: dict[int, float], then: dict[int, float]) -> float:
    """CPU seconds our processes used between two `own_cpu()` readings. A process that started since
    counts whole. One that ended since shows its whole life in its parent's waited-for children; what
    it had used at the first reading is taken off again, so only its last moments count as ours."""
    grown = sum(cpu - then.get(pid, 0.0) for pid, cpu in now.items())
    gone = sum(cpu for pid, cpu in then.items() if pid not in now)
    return max(0.0, grown - gone)


def threads_for(others: float, cores: int, most: int) -> int:
    """Threads for the cores the other programs leave: `others` cores busy on average -> cores - others,
    rounded to the nearest (half a core taken keeps the thread), between 1 and `most`."""
    return max(1, min(most, int(cores - others + 0.5)))


class ThreadGovernor:
    """`tick()` at every step of a loop: at most every `interval_s` seconds, sets torch's thread count to
    the cores the rest of the machine left over in the last interval. `active` is False where it does
    nothing (not `enabled`, one thread, OMP_NUM_THREADS set, no /proc). As a context manager it
    restores the count it started with on the way out."""

    def __init__(
        self,
        most: int | None = None,
        interval_s: float = 2.0,
        clock: Callable[[], float] = time.monotonic,
        pinned: bool | None = None,
        enabled: bool = True,
    ) -> None:
        self.most = most if most is not None else torch.get_num_threads()
        self.interval_s, self.clock = interval_s, clock
        pinned = bool(os.environ.get("OMP_NUM_THREADS")) if pinned is None else pinned
        first = machine_cpu() if enabled and self.most > 1 and not pinned else None
        self.active = first is not None
        self.threads = self.most
        self.fewer_seconds = 0.0  # wall time spent with fewer threads than `most`
        self.lowest = self.most
        self._last = (self.clock(), first[0] if first else 0.0, own_cpu() if first else {})
        self.cores = first[1] if first else 1

    def others(self) -> float | None:
        """Cores the rest of the machine kept busy, on average, since the last reading; None when no time passed."""
        now, (busy, _cores), own = self.clock(), machine_cpu() or (0.0, 1), own_cpu()
        then, busy_then, own_then = self._last
        self._last = (now, busy, own)
        if now <= then:
            return None
        return max(0.0, (busy - busy_then) - used_since(own, own_then)) / (now - then)

    def tick(self) -> int:
        """Check the machine if `interval_s` has passed; returns the thread count in force."""
        if not self.active or self.clock() - self._last[0] < self.interval_s:
            return self.threads
        since = self._last[0]
        others = self.others()
        if self.threads < self.most:
            self.fewer_seconds += self._last[0] - since
        if others is not None:
            wanted = threads_for(others, self.cores, self.most)
            if wanted != self.threads:
                torch.set_num_threads(wanted)
                self.threads = wanted
                self.lowest = min(self.lowest, wanted)
        return self.threads

    def restore(self) -> None:
        """Back to the thread count it started with (validation, the bundle and decoding come after)."""
        if self.active and self.threads != self.most:
            torch.set_num_threads(self.most)
            self.threads = self.most

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.restore()
