"""Stage caching: a stage's output folder holds a stamp of what made it.

Each stage (data, featurize, tokenize, train) fingerprints its inputs and the
settings that shape its output. If the stamp in its folder matches, the stage
has nothing to do; if not, it recomputes. The stamp is written last, so an
interrupted stage is never mistaken for a finished one.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import resource
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from seqx.errors import DiskFullError

STAMP_NAME = ".stamp.json"


def fingerprint(*parts: Any) -> str:
    """A stable hash of settings objects, paths (by size and mtime) and plain values."""
    digest = hashlib.sha256()
    for part in parts:
        digest.update(json.dumps(_plain(part), sort_keys=True, default=str).encode())
    return digest.hexdigest()[:16]


def file_signature(path: Path) -> dict[str, Any]:
    """Cheap identity of a file: changes when it is rewritten, without reading it."""
    stat = path.stat()
    return {"path": str(path), "size": stat.st_size, "mtime_ns": stat.st_mtime_ns}


def signature_in(path: str | Path, root: Path) -> object:
    """`file_signature` of a file of an experiment folder, named relative to that folder when it
    is inside it: a folder moved or copied with its times (`mv`, `cp -a`, `rsync -a`) keeps every
    stamp, instead of featurizing and training again. A missing file is its name alone."""
    text = os.path.abspath(path)
    name = text.removeprefix(os.path.abspath(root) + os.sep)
    try:
        return {**file_signature(Path(text)), "path": name}
    except OSError:
        return name


def is_fresh(folder: Path, key: str) -> bool:
    stamp = folder / STAMP_NAME
    try:
        return json.loads(stamp.read_text()).get("fingerprint") == key
    except (OSError, ValueError):
        return False


def mark_done(folder: Path, key: str, **info: Any) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    atomic_write_text(folder / STAMP_NAME, json.dumps({"fingerprint": key, **info}, indent=1, default=str))


@contextmanager
def atomic_write(path: str | Path, need: int | None = None) -> Iterator[Path]:
    """Yield a temporary path beside `path` to write; on success it is synced and renamed over `path`.

    A reader (or a run after a crash) sees the old file or the whole new one, never half
    a file: the rename is atomic, and the fsync before it makes sure the bytes are on disk
    before the name points at them. On an error the temporary file is removed and `path`
    is left as it was; a full disk becomes one DiskFullError line (`need`: the bytes the
    file takes, when the caller knows). Every writer of seqx's outputs goes through here:

        with atomic_write(folder / "model.safetensors") as tmp:
            save_model(model, str(tmp))
    """
    path = Path(path)
    tmp = path.with_name(f"{path.name}.tmp{os.getpid()}")
    tmp.unlink(missing_ok=True)
    try:
        yield tmp
        fd = os.open(tmp, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except Exception as err:
        if is_disk_full(err):
            written = tmp.stat().st_size if tmp.exists() else 0
            raise disk_full(path, need, written) from None
        raise
    finally:
        tmp.unlink(missing_ok=True)


_DISK_FULL_ERRNOS = {errno.ENOSPC, errno.EFBIG, errno.EDQUOT}
# what C++ (torch) and Rust (safetensors) writers say when the OS refuses the bytes
_DISK_FULL_TEXT = ("No space left on device", "File too large", "Disk quota exceeded", "os error 28", "os error 27")


def is_disk_full(err: BaseException) -> bool:
    """ENOSPC, EDQUOT, or EFBIG (a file-size limit is a full disk for the file being written)."""
    if isinstance(err, DiskFullError):
        return False
    if isinstance(err, OSError) and err.errno in _DISK_FULL_ERRNOS:
        return True
    return any(text in str(err) for text in _DISK_FULL_TEXT)


def disk_full(path: str | Path, need: int | None = None, written: int = 0) -> DiskFullError:
    """The one line for a write that ran out of space: what, how much it needed, what is free where."""
    path = Path(path)
    folder = path.parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    free = shutil.disk_usage(folder).free
    needs = f"needs {human_bytes(need)}" if need else f"needs more than the {human_bytes(written)} written"
    where = f"{human_bytes(free)} free in {folder}"
    limit = resource.getrlimit(resource.RLIMIT_FSIZE)[0]
    if limit != resource.RLIM_INFINITY:
        where += f", files limited to {human_bytes(limit)} (ulimit -f)"
    return DiskFullError(f"{path}: disk full while writing it ({needs}; {where}); the previous outputs are intact: "
                         "free some space and run again")


def human_bytes(n: float | None) -> str:
    n = float(n or 0)
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TB"


def atomic_write_text(path: str | Path, text: str) -> None:
    """`atomic_write` for a whole text file at once."""
    with atomic_write(path) as tmp:
        tmp.write_text(text)


def _plain(part: Any) -> Any:
    if isinstance(part, BaseModel):
        return part.model_dump(mode="json")
    if isinstance(part, Path):
        return file_signature(part) if part.is_file() else str(part)
    if isinstance(part, dict):
        return {str(k): _plain(v) for k, v in part.items()}
    if isinstance(part, (list, tuple)):
        return [_plain(p) for p in part]
    return part
