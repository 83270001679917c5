"""atomic_write: a reader sees the old file or the whole new one; a failed write leaves no trace."""

from __future__ import annotations

from pathlib import Path

import pytest

from seqx.stage import atomic_write, atomic_write_text


def test_replaces_the_file_and_leaves_no_temporary(tmp_path: Path) -> None:
    path = tmp_path / "out.json"
    path.write_text("old")
    atomic_write_text(path, "new")
    assert path.read_text() == "new"
    assert [p.name for p in tmp_path.iterdir()] == ["out.json"]


def test_an_error_keeps_the_old_file(tmp_path: Path) -> None:
    path = tmp_path / "out.bin"
    path.write_bytes(b"old")
    with pytest.raises(RuntimeError), atomic_write(path) as tmp:
        tmp.write_bytes(b"half")
        raise RuntimeError("crash mid-write")
    assert path.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["out.bin"]
