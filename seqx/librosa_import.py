"""librosa, imported under one lock that every seqx process on the machine shares.

librosa's signal kernels are numba gufuncs: compiled when their module is first imported and cached
on disk (beside librosa in the venv, or under NUMBA_CACHE_DIR). Two processes that compile them at
once can leave a cached kernel and its gufunc wrapper from different compilations (numba issue
#10128), and every later process that calls it dies of a segmentation fault: on 2026-11-29 a
`make demo` left one that crashed `make test`, on 2026-11-30 CI's test run died in `librosa.yin`.
Under the lock one process compiles and writes the cache; the others wait, then only read it.

`import librosa` alone compiles nothing (librosa loads its submodules lazily, on first use), so the
lock covers the import of the modules that hold the kernels, not of librosa itself.
"""

from __future__ import annotations

import importlib
import os
import sys
import tempfile
from pathlib import Path
from types import ModuleType

from filelock import FileLock

# the librosa modules (0.10-0.11) with gufuncs compiled at import that seqx's calls reach: pitch_shift
# and time_stretch (util.utils, core.audio), load; core.pitch for yin, which the tests measure with.
# librosa.beat has gufuncs too, but nothing in seqx imports it (and it adds 15 s of compiling).
KERNEL_MODULES = ("librosa.util.utils", "librosa.core.audio", "librosa.core.pitch")


def lock_path() -> Path:
    """One lock per numba cache: NUMBA_CACHE_DIR when set, else one per user in the temp folder."""
    folder = Path(os.environ.get("NUMBA_CACHE_DIR") or tempfile.gettempdir())
    folder.mkdir(parents=True, exist_ok=True)
    user = os.getuid() if hasattr(os, "getuid") else 0
    return folder / f"seqx-librosa-import-{user}.lock"


def import_librosa() -> ModuleType:
    """librosa with its kernels compiled (or loaded from numba's cache) by one process at a time.

    Free once this process has them (sys.modules). seqx's pool workers come from its fork server
    (seqx.workers), not from the process that called this, so each worker takes the lock once itself.
    """
    if not all(name in sys.modules for name in KERNEL_MODULES):
        lock: FileLock | None = None
        try:
            lock = FileLock(str(lock_path()))
            lock.acquire()  # an OS lock (flock): released when its holder dies, even by kill -9
        except OSError:  # no folder we may write the lock in: import as librosa would, unguarded
            lock = None
        try:
            for name in KERNEL_MODULES:
                importlib.import_module(name)
        finally:
            if lock is not None:
                lock.release()
    import librosa

    return librosa
