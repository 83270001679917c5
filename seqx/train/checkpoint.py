"""Checkpoints: written atomically (a crash never leaves half a file), kept, pruned, averaged, resumed.

Everything a resumed run needs to go on as if it had never stopped is in a checkpoint:
weights, AdamW moments, the loop's counters, the sampler's position and every rank's
RNG states. `CheckpointKeeper` is the one object the training loop asks.
"""

from __future__ import annotations

import os
import random
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.distributed as dist

from seqx.errors import SeqxError
from seqx.recipe import TrainSettings
from seqx.stage import atomic_write
from seqx.train.distributed import DistInfo

LAST = "last.pt"


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


def rng_state(device: torch.device) -> dict[str, Any]:
    return {
        "python": random.getstate(),
        "numpy": np.random.get_state(),
        "torch": torch.get_rng_state(),
        "cuda": torch.cuda.get_rng_state(device) if device.type == "cuda" else None,
    }


def set_rng_state(state: dict[str, Any], device: torch.device) -> None:
    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    torch.set_rng_state(state["torch"])
    if device.type == "cuda" and state.get("cuda") is not None:
        torch.cuda.set_rng_state(state["cuda"], device)


class CheckpointKeeper:
    """A run's checkpoints: save (with every rank's RNG state), resume, prune, pick the best.

    `epochs` (the loop's per-epoch records: epoch, step, loss, wer, path) decide which
    checkpoints are the best (lowest valid WER, then loss, then the later epoch) and which
    are kept: the last `keep_last` and the `average_best` best.
    """

    def __init__(self, folder: Path, run_key: str, settings: TrainSettings, dist_info: DistInfo, device: torch.device):
        self.folder, self.run_key, self.settings, self.dist, self.device = folder, run_key, settings, dist_info, device

    def load(self, path: Path) -> dict[str, Any]:
        """A checkpoint of this run (same settings and data), with this rank's RNG state restored."""
        ckpt = load_checkpoint(path)
        if ckpt.get("run_key") != self.run_key:
            raise SeqxError(
                f"{path}: made with other settings or data than this recipe; "
                "run `seqx train RECIPE --restart` to start over"
            )
        states = ckpt["rng"]
        set_rng_state(states[self.dist.rank % len(states)], self.device)
        return ckpt

    def save(self, path: Path, content: Callable[[], dict[str, Any]], also_last: bool = False) -> None:
        """Collective (every rank's RNG state is gathered); rank 0 writes, atomically."""
        states: list[Any] = [rng_state(self.device)]
        if self.dist.enabled:
            states = [None] * self.dist.world_size
            dist.all_gather_object(states, rng_state(self.device))
        if not self.dist.is_main:
            return
        save_checkpoint(path, {"run_key": self.run_key, **content(), "rng": states})
        if also_last:
            link_or_copy(path, self.folder / LAST)

    def best_paths(self, epochs: list[dict[str, Any]]) -> list[Path]:
        ranked = sorted(epochs, key=lambda e: (e["wer"], e["loss"], -e["epoch"]))
        return [self.folder / e["path"] for e in ranked[: self.settings.average_best]]

    def prune(self, epochs: list[dict[str, Any]]) -> None:
        """Keep the last `keep_last` epoch checkpoints and the `average_best` best ones."""
        keep = {e["path"] for e in epochs[-self.settings.keep_last :]} | {p.name for p in self.best_paths(epochs)}
        for path in self.folder.glob("epoch-*.pt"):
            if path.name not in keep:
                path.unlink(missing_ok=True)


def link_or_copy(src: Path, dst: Path) -> None:
    with atomic_write(dst) as tmp:
        try:
            os.link(src, tmp)
        except OSError:
            shutil.copyfile(src, tmp)
