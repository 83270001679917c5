"""Checkpoints: written atomically (a crash never leaves half a file), kept, pruned, averaged, resumed.

Everything a resumed run needs to go on as if it had never stopped is in a checkpoint:
weights, AdamW moments, the loop's counters, the sampler's position and every rank's
RNG states. `CheckpointKeeper` is the one object the training loop asks.

A checkpoint holds tensors and plain data only (dicts, lists, numbers, strings: the numpy
RNG state is stored as a tensor), so it is read with `torch.load(weights_only=True)`: a
file someone hands you cannot run code when it is loaded, it is refused. A header
(format, version) and a SHA-256 of the content make a truncated or corrupt file one line
naming it; the run then resumes from the newest checkpoint that is good.
"""

from __future__ import annotations

import hashlib
import io
import os
import pickle
import random
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.distributed as dist

from seqx import __version__
from seqx.errors import SeqxError
from seqx.faults import fault_point
from seqx.recipe import TrainSettings
from seqx.stage import atomic_write
from seqx.train.distributed import DistInfo

LAST = "last.pt"
FORMAT = "seqx-checkpoint"
VERSION = 2  # 1: pickled numpy RNG state, no header (seqx 0.1, read with weights_only=False); 2: plain data + checksum


class CorruptCheckpoint(SeqxError):
    """A checkpoint that cannot be used: truncated, corrupt, refused as unsafe, or from a newer seqx."""


def save_checkpoint(path: Path, state: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    body = {"format": FORMAT, "version": VERSION, "seqx_version": __version__, **state}
    body["checksum"] = content_digest(body)
    # serialized in memory first: the size is known (a full disk can say what it needed), and
    # the bytes reach the disk through Python, whose OSError carries the errno (torch's writer's does not)
    buffer = io.BytesIO()
    torch.save(body, buffer)
    data = buffer.getbuffer()
    with atomic_write(path, need=len(data)) as tmp:
        with open(tmp, "wb") as handle:
            half = len(data) // 2
            handle.write(data[:half])
            handle.flush()
            fault_point("checkpoint_write")  # the kill tests stop here: half a file on disk
            handle.write(data[half:])


def load_checkpoint(path: Path) -> dict[str, Any]:
    """Read a checkpoint safely (weights_only), check its header and checksum; CorruptCheckpoint says what is wrong."""
    try:
        ckpt = torch.load(path, map_location="cpu", weights_only=True)
    except FileNotFoundError:
        raise
    except pickle.UnpicklingError as err:
        found = re.search(r"GLOBAL (\S+)", str(err))
        what = f" ({found.group(1)})" if found else ""
        raise CorruptCheckpoint(
            f"{path}: refused: it holds Python objects{what}, not only tensors and plain data, and loading it "
            "could run code; a checkpoint of seqx 0.1 cannot be resumed: `seqx train RECIPE --restart`"
        ) from None
    except Exception as err:  # noqa: BLE001 (zip, EOF, storage errors: all mean the bytes are damaged)
        first = str(err).splitlines()[0] if str(err) else type(err).__name__
        raise CorruptCheckpoint(f"{path}: truncated or corrupt ({first[:120]})") from None
    if not isinstance(ckpt, dict) or ckpt.get("format") != FORMAT:
        raise CorruptCheckpoint(f"{path}: not a seqx checkpoint (no {FORMAT!r} header)")
    if not isinstance(ckpt.get("version"), int) or ckpt["version"] > VERSION:
        wrote = ckpt.get("seqx_version", "?")
        raise CorruptCheckpoint(
            f"{path}: checkpoint version {ckpt.get('version')} written by seqx {wrote}; "
            f"this seqx ({__version__}) reads up to version {VERSION}: use seqx {wrote} or newer"
        )
    if ckpt.get("checksum") != content_digest(ckpt):
        raise CorruptCheckpoint(f"{path}: checksum mismatch: the file is corrupt (changed since it was written)")
    return ckpt


def content_digest(state: dict[str, Any]) -> str:
    """SHA-256 over a checkpoint's content (tensor bytes, shapes, dtypes and plain values), its checksum left out."""
    digest = hashlib.sha256()
    _feed(digest, {k: v for k, v in state.items() if k != "checksum"})
    return digest.hexdigest()


def _feed(digest: Any, value: Any) -> None:
    if isinstance(value, torch.Tensor):
        flat = value.detach().cpu().contiguous().reshape(-1)
        digest.update(f"T{value.dtype}{tuple(value.shape)}".encode())
        digest.update(flat.view(torch.uint8).numpy().tobytes() if flat.numel() else b"")
    elif isinstance(value, dict):
        digest.update(b"{")
        for key, item in value.items():
            digest.update(repr(key).encode())
            _feed(digest, item)
        digest.update(b"}")
    elif isinstance(value, (list, tuple)):
        digest.update(b"[")
        for item in value:
            _feed(digest, item)
        digest.update(b"]")
    else:
        digest.update(repr(value).encode())


def read_models(paths: list[Path], skip: Callable[[str], None] | None = None) -> list[tuple[Path, dict[str, torch.Tensor]]]:
    """The model weights of each checkpoint, in order, with its path.

    With `skip`, a checkpoint that cannot be read is left out (and said through `skip`) instead of failing.
    """
    if not paths:
        raise ValueError("no checkpoints to average")
    models = []
    for path in paths:
        try:
            models.append((path, load_checkpoint(path)["model"]))
        except CorruptCheckpoint as err:
            if skip is None:
                raise
            skip(f"{err}; left out of the average")
        fault_point("average")
    if not models:
        raise SeqxError(f"{paths[0].parent}: none of the checkpoints to average can be read")
    return models


def mean_weights(states: list[dict[str, torch.Tensor]]) -> dict[str, torch.Tensor]:
    """Element-wise mean of the models' float weights; integer buffers come from the last one."""
    averaged = {}
    for name, last in states[-1].items():
        if last.is_floating_point():
            averaged[name] = sum(s[name].double() for s in states).div(len(states)).to(last.dtype)
        else:
            averaged[name] = last.clone()
    return averaged


def average_checkpoints(paths: list[Path], skip: Callable[[str], None] | None = None) -> dict[str, torch.Tensor]:
    """Element-wise mean of the checkpoints' float weights; integer buffers come from the last one.

    With `skip`, a checkpoint that cannot be read is left out (and said through `skip`) instead of failing.
    """
    return mean_weights([state for _, state in read_models(paths, skip)])


# How much worse than the best checkpoint alone (relative, and absolute for a WER near 0) the mean of the
# best checkpoints may validate and still be the bundle: differences this small are the valid split's noise
MEAN_SLACK, MEAN_SLACK_ABS = 0.25, 0.005


def bundle_weights(
    ranked: list[tuple[Path, dict[str, torch.Tensor]]],
    error: Callable[[dict[str, torch.Tensor]], float],
    first_error: float | None = None,
) -> tuple[list[Path], dict[str, torch.Tensor], float]:
    """The bundle's weights from the best checkpoints (best first): their mean, unless it validates
    clearly worse than the best alone, then the greedy soup. `first_error`: the best one's error when
    known (the epoch's own validation), so it is not computed again. Returns the paths it holds, the
    weights and their `error`.

    Why: averaging the best few checkpoints smooths a long run's last epochs, which are close, but a
    short run's are not, and the mean of a good and a bad model is worse than either: four epochs on
    a new grammar, best greedy valid WER 10.5%, averaged with the first epoch's 96% into a bundle at
    29.8%. Why not always the checkpoints valid likes best: between close checkpoints valid's choice
    is noise. The smart home's 24 epochs: the best epoch alone (valid 11.4%) against the mean of the
    best three (12.4%) had the higher free WER on the unheard test voices (10.4 against 9.9%) and
    fewer commands right before the checks (87.2 against 89.2%); on four people's sets the two
    ways were level (docs/benchmarks.md "The bundle: the mean of the best checkpoints, unless it is
    clearly worse").
    """
    first = error(ranked[0][1]) if first_error is None else first_error
    if len(ranked) == 1:
        return [ranked[0][0]], ranked[0][1], first
    mean = mean_weights([state for _, state in ranked])
    score = error(mean)
    if score <= first * (1 + MEAN_SLACK) + MEAN_SLACK_ABS:
        return [path for path, _ in ranked], mean, score
    return greedy_soup(ranked, error, first)


def greedy_soup(
    ranked: list[tuple[Path, dict[str, torch.Tensor]]],
    error: Callable[[dict[str, torch.Tensor]], float],
    first_error: float | None = None,
) -> tuple[list[Path], dict[str, torch.Tensor], float]:
    """The mean of the best checkpoint and each next-best one whose joining does not raise `error`
    (a tie joins: a mean of more epochs is the steadier model); "greedy soup", Wortsman et al. 2022.
    `first_error`: the best one's error when known. Returns the soup's paths, its weights and its error."""
    paths, states, weights = [ranked[0][0]], [ranked[0][1]], ranked[0][1]
    best = error(weights) if first_error is None else first_error
    for path, state in ranked[1:]:
        candidate = mean_weights([*states, state])
        score = error(candidate)
        if score <= best:
            paths, states, weights, best = [*paths, path], [*states, state], candidate, score
    return paths, weights, best


def rng_state(device: torch.device) -> dict[str, Any]:
    """Every generator's state as tensors and plain data (numpy's key array as an int64 tensor)."""
    name, keys, pos, has_gauss, cached = np.random.get_state(legacy=True)
    return {
        "python": random.getstate(),  # (version, tuple of 625 ints, gauss or None): plain already
        "numpy": {"name": name, "keys": torch.from_numpy(keys.astype(np.int64)), "pos": int(pos),
                  "has_gauss": int(has_gauss), "cached_gaussian": float(cached)},
        "torch": torch.get_rng_state(),
        "cuda": torch.cuda.get_rng_state(device) if device.type == "cuda" else None,
    }


def set_rng_state(state: dict[str, Any], device: torch.device) -> None:
    version, internal, gauss = state["python"]
    random.setstate((version, tuple(internal), gauss))
    n = state["numpy"]
    keys = n["keys"].numpy().astype(np.uint32)
    np.random.set_state((n["name"], keys, n["pos"], n["has_gauss"], n["cached_gaussian"]))
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

    def resumable(self, warn: Callable[[str], None]) -> Path | None:
        """The checkpoint to resume from: last.pt, or when it cannot be read the newest good epoch
        checkpoint (said through `warn`); None when there is no last.pt (a fresh start).

        Raises when last.pt is of another run (its settings or data changed) or nothing is good.
        """
        last = self.folder / LAST
        if not last.is_file():
            return None
        problem = ""
        for path in [last, *sorted(self.folder.glob("epoch-*.pt"), reverse=True)]:
            try:
                ckpt = load_checkpoint(path)
            except CorruptCheckpoint as err:
                problem = problem or str(err)
                continue
            if ckpt.get("run_key") != self.run_key:
                if path == last:
                    self.load(path)  # raises the "other settings or data" line
                continue
            if path != last:
                warn(f"{problem}; resuming from {path.name}, the newest good checkpoint")
            return path
        raise SeqxError(f"{problem}; no good earlier checkpoint in {self.folder}: `seqx train RECIPE --restart`")

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
