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


def atomic_write_text(path: Path, text: str) -> None:
    """Write to a temporary file and rename, so a reader never sees half a file."""
    tmp = path.with_name(path.name + f".tmp{os.getpid()}")
    tmp.write_text(text)
    os.replace(tmp, path)


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
