"""Stage worker pools start from the fork server, never by forking a process that runs threads.

The speech-embedding featurize stage run from such a process (with a timeout, as a hang is the
failure): tests/test_featurize_embedding.py::test_featurize_stage_with_speech_embedding.
"""

from __future__ import annotations

import os

import pytest

from seqx.workers import forkserver_cpu_seconds, worker_pool

pytest.importorskip("onnxruntime")


@pytest.mark.timeout(120)
@pytest.mark.usefixtures("threaded_process")
def test_workers_are_not_children_of_a_threaded_process() -> None:
    before = forkserver_cpu_seconds()
    with worker_pool(2) as pool:
        parents = set(pool.map(_parent_pid, range(4)))
        pool.map(_burn, range(4))
    assert os.getpid() not in parents  # forked from the fork server, a clean single-threaded process
    assert forkserver_cpu_seconds() - before >= 0.4  # the workers' CPU, found where it is counted


def _parent_pid(_: int) -> int:
    return os.getppid()


def _burn(_: int) -> None:
    """Spend 0.1 s of user CPU."""
    start = os.times().user
    while os.times().user - start < 0.1:
        pass
