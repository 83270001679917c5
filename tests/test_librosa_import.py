"""seqx.librosa_import: librosa's numba kernels are compiled (or loaded) by one process at a time."""

from __future__ import annotations

import subprocess
import sys
import time

from filelock import FileLock

from seqx.librosa_import import KERNEL_MODULES, import_librosa, lock_path

# prints when the import was done, and which kernel modules it left loaded
CHILD = (
    "import sys, time; from seqx.librosa_import import KERNEL_MODULES, import_librosa; import_librosa(); "
    "print(time.time(), *(m for m in KERNEL_MODULES if m in sys.modules))"
)


def test_a_second_process_waits_for_the_lock_then_has_the_kernels_imported() -> None:
    import_librosa()  # compiled and cached now, so that the child's import is a 2-4 s read
    with FileLock(str(lock_path())):  # as if another process were compiling them now
        child = subprocess.Popen([sys.executable, "-c", CHILD], stdout=subprocess.PIPE, text=True)
        time.sleep(8.0)  # time enough for the child to import them all, were it not waiting
        released = time.time()
    out, _ = child.communicate(timeout=300)
    assert child.returncode == 0
    done, *loaded = out.split()
    assert float(done) >= released
    assert loaded == list(KERNEL_MODULES)


def test_plain_import_of_librosa_imports_no_kernel_module() -> None:
    """Why the lock covers the kernel modules: locking `import librosa` alone would guard nothing."""
    code = f"import sys, librosa; print(sum(m in sys.modules for m in {KERNEL_MODULES!r}))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "0"
