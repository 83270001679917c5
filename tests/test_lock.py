"""The experiment lock: a second live run is refused at once; a killed holder is taken over."""

import os
import signal
import subprocess
import sys
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
