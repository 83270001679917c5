"""Process pools for the stages that fan work out (synthesis, featurize, negatives): started safely.

Why not `fork`: forking a process that already runs threads (onnxruntime's session pools, torch's
OpenMP pool, a BLAS pool) copies their locks in whatever state they were, held ones included, and
the child can hang on its first use of one. It happened: the speech-embedding featurize test hung
when the runtime tests had run first in the same pytest process.

`forkserver` instead: a fresh interpreter (no threads of ours) is started once per process, imports
the stage modules below once, and forks each worker from that clean state. A worker thus starts
as fast as a forked one after the first pool (no torch import of its own), and the first pool pays
the server's one import (measured in docs/benchmarks.md, "2026-11-25: featurizer speed"). Workers
get their functions and arguments by pickling: module-level functions and plain data only, and an
initializer makes any model (onnxruntime session, piper process) inside the worker itself.

As with every start method but `fork`, each worker imports the main module as `__mp_main__`
(not for `python -m`): a script that starts a pool must keep its work under
`if __name__ == "__main__":`.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable
from multiprocessing import forkserver
from multiprocessing.pool import Pool
from pathlib import Path
from typing import Any

START_METHOD = "forkserver"
# imported once by the server, so that each worker forked from it has torch, torchaudio,
# onnxruntime and the engines ready (a worker's own `import torch` costs ~1 s of CPU); an import
# that fails here is skipped by the server and done by the worker instead. scipy.signal (1.2 s):
# librosa's lengthening and the other augmentations use it in the render workers, and
# seqx.data.augment leaves it to them so that a seqx process that starts no pool never pays it
PRELOAD = ["seqx.featurize.stage", "seqx.data.synth", "seqx.decode.negatives", "scipy.signal"]


def worker_pool(processes: int, initializer: Callable[..., None] | None = None, initargs: tuple[Any, ...] = ()) -> Pool:
    """A `multiprocessing.Pool` of `processes` workers started from the fork server (see above)."""
    context = multiprocessing.get_context(START_METHOD)
    context.set_forkserver_preload(PRELOAD)  # only read when this process starts its server: harmless later
    return context.Pool(processes, initializer=initializer, initargs=initargs)


def forkserver_cpu_seconds() -> float:
    """CPU seconds (user + system) of this process's fork server and of the workers it has reaped;
    0 before it starts. Benchmarks add it to their own: the workers are the server's children,
    not this process's, so RUSAGE_CHILDREN (and `time` of the command) never sees them."""
    pid = forkserver._forkserver._forkserver_pid  # no public way to find the server
    if pid is None:
        return 0.0
    return process_cpu_seconds(pid, reaped=True)


def process_cpu_seconds(pid: int, reaped: bool = False) -> float:
    """CPU seconds (user + system, all threads) of process `pid` from /proc/PID/stat; `reaped`: with
    those of the children it has waited for. OSError when there is no such process (or no /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()  # proc(5) fields 3 on: utime is 14
    times = fields[11:15] if reaped else fields[11:13]  # utime, stime[, cutime, cstime]
    return sum(int(x) for x in times) / os.sysconf("SC_CLK_TCK")
