"""Stage caching: a stage's output folder holds a stamp of what made it.

Each stage (data, featurize, tokenize, train) fingerprints its inputs and the
settings that shape its output. If the stamp in its folder matches, the stage
has nothing to do; if not, it recomputes. The stamp is written last, so an
interrupted stage is never mistaken for a finished one.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pydantic import BaseModel

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
def atomic_write(path: str | Path) -> Iterator[Path]:
    """Yield a temporary path beside `path` to write; on success it is synced and renamed over `path`.

    A reader (or a run after a crash) sees the old file or the whole new one, never half
    a file: the rename is atomic, and the fsync before it makes sure the bytes are on disk
    before the name points at them. On an error the temporary file is removed and `path`
    is left as it was. Every writer of seqx's outputs goes through here:

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
    finally:
        tmp.unlink(missing_ok=True)


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
