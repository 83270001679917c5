"""seqx.librosa_import: librosa's numba kernels are compiled (or loaded) by one process at a time."""

from __future__ import annotations

import subprocess
import sys
import time

from filelock import FileLock

from seqx.librosa_import import KERNEL_MODULES, lock_path

# prints which kernel modules the import left loaded: plain `import librosa` loads none of them
CHILD = (
    "import sys; from seqx.librosa_import import KERNEL_MODULES, import_librosa; import_librosa(); "
    "print(' '.join(m for m in KERNEL_MODULES if m in sys.modules))"
)


def test_a_second_process_waits_for_the_lock_then_has_the_kernels_imported() -> None:
    with FileLock(str(lock_path())):  # as if another process were compiling them now
        child = subprocess.Popen([sys.executable, "-c", CHILD], stdout=subprocess.PIPE, text=True)
        time.sleep(4.0)  # a warm import takes 2-4 s: done by now, were it not waiting
        assert child.poll() is None
    out, _ = child.communicate(timeout=300)
    assert child.returncode == 0
    assert out.split() == list(KERNEL_MODULES)


def test_plain_import_of_librosa_imports_no_kernel_module() -> None:
    """Why the lock covers the kernel modules: locking `import librosa` alone would guard nothing."""
    code = f"import sys, librosa; print(sum(m in sys.modules for m in {KERNEL_MODULES!r}))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "0"
