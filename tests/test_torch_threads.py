"""The trainer's threads give way to other programs (seqx/torch_threads.py), measured on real processes."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest
import torch

from seqx.torch_threads import ThreadGovernor, machine_cpu, own_cpu, threads_for, used_since

pytestmark = pytest.mark.skipif(machine_cpu() is None, reason="needs Linux's /proc/stat")

SPIN = "import time\nend = time.monotonic() + {s}\nwhile time.monotonic() < end: pass\n"


def spin_elsewhere(seconds: float) -> None:
    """A busy process that is not ours: started by a shell that exits at once, so init adopts it."""
    subprocess.run(["sh", "-c", '("$1" -c "$2" &)', "sh", sys.executable, SPIN.format(s=seconds)], check=True)


def test_threads_are_the_cores_the_others_leave() -> None:
    assert threads_for(0.0, 2, 2) == 2
    assert threads_for(0.4, 2, 2) == 2  # a little background work keeps both
    assert threads_for(0.67, 2, 2) == 1  # one busy process sharing two cores with two threads
    assert threads_for(1.0, 2, 2) == 1
    assert threads_for(5.0, 4, 4) == 1  # never none
    assert threads_for(3.2, 16, 8) == 8  # never more than it started with
    assert threads_for(3.2, 16, 16) == 13


def test_our_children_are_ours() -> None:
    """A DataLoader worker's CPU is the trainer's own, not another program's."""
    then = own_cpu()
    child = subprocess.Popen([sys.executable, "-c", SPIN.format(s=2.0)])
    try:
        time.sleep(1.5)
        now = own_cpu()
        assert child.pid in now
        assert used_since(now, then) >= 0.3  # the child's spinning, however much of a core it got
    finally:
        child.kill()
        child.wait()


def test_a_child_that_ended_counts_as_ours_for_its_last_moments_only() -> None:
    """A DataLoader worker ends with its epoch: what it used after the last reading is ours, and what it
    used before that reading is not counted a second time."""
    child = subprocess.Popen([sys.executable, "-c", SPIN.format(s=1.5)])
    time.sleep(0.6)
    then, start = own_cpu(), time.monotonic()
    child.wait()
    now, elapsed = own_cpu(), time.monotonic() - start
    assert child.pid in then and child.pid not in now
    used = used_since(now, then)
    assert used >= 0.3  # its last ~0.9 s of spinning, however much of a core it got
    assert used <= elapsed + 0.3  # one thread cannot use more than the wall time between the readings


def test_a_busy_program_takes_a_thread_and_gives_it_back_when_done() -> None:
    before = torch.get_num_threads()
    cores = machine_cpu()[1]  # type: ignore[index]  # the module's skip: /proc/stat is there
    if cores < 2:
        pytest.skip("one core: no thread to give")
    governor = ThreadGovernor(most=cores, interval_s=0.0, pinned=False)
    assert governor.active and governor.threads == cores
    try:
        spin_elsewhere(2.0)
        time.sleep(1.2)
        assert governor.others() >= 0.6
        time.sleep(0.5)
        assert governor.tick() <= cores - 1 and torch.get_num_threads() == governor.threads
        assert governor.lowest <= cores - 1
        time.sleep(0.5)
        governor.tick()
        assert governor.fewer_seconds > 0.3
        governor.restore()
        assert torch.get_num_threads() == cores and governor.threads == cores
    finally:
        torch.set_num_threads(before)


def test_a_thread_count_the_user_set_is_kept() -> None:
    assert not ThreadGovernor(most=2, pinned=True).active
    assert not ThreadGovernor(most=1, pinned=False).active  # one thread: nothing to give
    governor = ThreadGovernor(most=2, pinned=True)
    assert governor.tick() == 2
