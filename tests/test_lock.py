"""The experiment lock: a second live run is refused at once; a killed holder is taken over."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from seqx.lock import HOLDER_NAME, LockedError, experiment_lock

HOLD = """
import sys, time
from pathlib import Path
from seqx.lock import experiment_lock
with experiment_lock(Path(sys.argv[1])):
    print("held", flush=True)
    time.sleep(60)
"""


def _holder(folder: Path) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-c", HOLD, str(folder)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "held"
    return proc


def test_second_run_is_refused_naming_the_holder(tmp_path: Path) -> None:
    proc = _holder(tmp_path)
    try:
        with pytest.raises(LockedError, match=f"PID {proc.pid}"):
            with experiment_lock(tmp_path):
                pass
    finally:
        proc.kill()
        proc.wait()


def test_killed_holder_is_taken_over_with_a_warning(tmp_path: Path) -> None:
    proc = _holder(tmp_path)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    warnings: list[str] = []
    with experiment_lock(tmp_path, warn=warnings):
        assert (tmp_path / HOLDER_NAME).exists()
    assert len(warnings) == 1 and f"PID {proc.pid}" in warnings[0] and "killed" in warnings[0]
    assert not (tmp_path / HOLDER_NAME).exists()


def test_lock_is_reentrant_within_a_process(tmp_path: Path) -> None:
    with experiment_lock(tmp_path):
        with experiment_lock(tmp_path):
            pass
        assert (tmp_path / HOLDER_NAME).exists()  # the inner exit did not release the outer hold
    with experiment_lock(tmp_path):  # released: can be taken again
        pass


HOLD_WITH_CHILD = """
import os, sys, time
from pathlib import Path
from seqx.lock import experiment_lock
with experiment_lock(Path(sys.argv[1])):
    if os.fork() == 0:  # a worker forked while the lock is held shares the locked file
        time.sleep(1.5)
        os._exit(0)
    print("held", flush=True)
    time.sleep(60)
"""


def test_children_of_a_killed_holder_are_waited_for(tmp_path: Path) -> None:
    proc = subprocess.Popen([sys.executable, "-c", HOLD_WITH_CHILD, str(tmp_path)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "held"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    warnings: list[str] = []
    began = time.monotonic()
    with experiment_lock(tmp_path, warn=warnings):  # waits for the orphan to exit instead of refusing
        pass
    assert time.monotonic() - began > 0.5, "the orphan did not hold the lock: the test shows nothing"
    assert len(warnings) == 1 and "killed" in warnings[0]
