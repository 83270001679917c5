"""Checkpoints: written to a temporary file and renamed (a crash never leaves half a file), and averaged."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from seqx.stage import atomic_write


def save_checkpoint(path: Path, state: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_write(path) as tmp:
        torch.save(state, tmp)


def load_checkpoint(path: Path) -> dict[str, Any]:
    # our own files: they hold RNG states and settings, not only tensors
    return torch.load(path, map_location="cpu", weights_only=False)


def average_checkpoints(paths: list[Path]) -> dict[str, torch.Tensor]:
    """Element-wise mean of the models' float weights; integer buffers come from the last one."""
    if not paths:
        raise ValueError("no checkpoints to average")
    states = [load_checkpoint(p)["model"] for p in paths]
    averaged = {}
    for name, last in states[-1].items():
        if last.is_floating_point():
            averaged[name] = sum(s[name].double() for s in states).div(len(states)).to(last.dtype)
        else:
            averaged[name] = last.clone()
    return averaged
