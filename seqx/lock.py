"""One lock per experiment folder, so two runs of one recipe never write the same files.

Two `seqx train` (or `make demo`) of the same recipe at once would both write
`exp/NAME/checkpoints` and the bundle. The lock is an OS file lock (`filelock`,
flock on Linux): the kernel drops it when its holder dies, even by `kill -9`,
so a lock can never be left behind by a crash. Beside it a small JSON file names
the holder (PID, command, start time), which is what the refused run prints; a
holder file whose PID is gone is a run that was killed, and the next run takes
over with a warning.
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from filelock import FileLock, Timeout

from seqx.errors import SeqxError

LOCK_NAME = ".seqx.lock"
HOLDER_NAME = ".seqx.lock.json"

ORPHAN_WAIT_S = 30.0  # how long the children of a killed holder may keep the lock before we give up
_held: dict[Path, int] = {}  # folder -> nesting depth of the locks this process holds


class LockedError(SeqxError):
    """Another live seqx process holds the experiment folder."""


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, owned by someone else
        return True
    return True


def _read_holder(folder: Path) -> dict[str, object]:
    try:
        return json.loads((folder / HOLDER_NAME).read_text())
    except (OSError, ValueError):
        return {}


def _describe(holder: dict[str, object]) -> str:
    if not holder:
        return "another process"
    started = holder.get("started")
    when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(float(started))) if started else "?"
    return f"PID {holder.get('pid')} ({holder.get('command', 'seqx')}), started {when}"


@contextmanager
def experiment_lock(folder: Path, warn: list[str] | None = None) -> Iterator[None]:
    """Hold `folder`'s lock for the duration; raise LockedError at once when a live run holds it.

    `warn` collects the one-line notice of a stale holder taken over (the library never prints).
    Re-entrant within a process: a stage that runs earlier stages takes the lock once.
    """
    folder = folder.resolve()
    if folder in _held:  # flock is per open file: a second FileLock here would refuse ourselves
        _held[folder] += 1
        try:
            yield
        finally:
            _held[folder] -= 1
        return
    folder.mkdir(parents=True, exist_ok=True)
    lock = FileLock(str(folder / LOCK_NAME), timeout=0)
    try:
        lock.acquire()
    except Timeout:
        holder = _read_holder(folder)
        pid = holder.get("pid")
        if not (isinstance(pid, int) and not _pid_alive(pid)):
            raise LockedError(f"{folder}: in use by {_describe(holder)}; wait for it or stop it") from None
        # the holder was killed, but processes it forked (DataLoader or featurize workers) may share the
        # locked file until they notice and exit, within seconds (filelock 4 closes it in forked children;
        # the 3.x that pyproject allows does not)
        try:
            lock.acquire(timeout=ORPHAN_WAIT_S)
        except Timeout:
            raise LockedError(
                f"{folder}: held by processes left by PID {pid} ({_describe(holder)}), which was killed; "
                "stop them or wait"
            ) from None
    try:
        previous = _read_holder(folder)
        pid = previous.get("pid")
        if isinstance(pid, int) and pid != os.getpid():
            state = "was killed" if not _pid_alive(pid) else "exited without unlocking"
            swept = sweep_temporaries(folder)
            left = f"; removed {swept} half-written temporary file(s) it left" if swept else ""
            if warn is not None:
                warn.append(f"{folder}: took over the lock of PID {pid}, which {state}{left}")
        holder = {"pid": os.getpid(), "command": " ".join(Path(a).name for a in sys.argv[:2]), "started": time.time()}
        (folder / HOLDER_NAME).write_text(json.dumps(holder))
        _held[folder] = 1
        yield
    finally:
        _held.pop(folder, None)
        try:
            (folder / HOLDER_NAME).unlink(missing_ok=True)
        finally:
            lock.release()


_TEMPORARY = re.compile(r"\.tmp\d+$")  # what seqx.stage.atomic_write names its temporary files


def sweep_temporaries(folder: Path) -> int:
    """Remove the temporary files of writes a killed run never finished; returns how many.

    Called with the lock held, so no live seqx process is writing any of them.
    """
    count = 0
    for path in folder.rglob("*.tmp*"):
        if _TEMPORARY.search(path.name) and path.is_file():
            path.unlink(missing_ok=True)
            count += 1
    return count


@contextmanager
def stage_lock(folder: Path, reporter: object | None = None) -> Iterator[None]:
    """`experiment_lock` for a stage: a stale holder taken over is said as a warning on `reporter`."""
    warnings: list[str] = []
    with experiment_lock(folder, warn=warnings):
        for message in warnings:
            if reporter is not None:
                reporter.warn(message)  # type: ignore[attr-defined]
        yield
