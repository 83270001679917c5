"""Global cepstral mean and variance normalization, computed on the training split.

Stored in feats/cmvn.json and copied into the model bundle, so training and
decoding always normalize identically.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import torch
from torch import Tensor

from seqx.errors import SeqxError
from seqx.stage import atomic_write_text

STD_FLOOR = 1e-5  # a constant feature dimension must not divide by zero


class CmvnAccumulator:
    """Running sums in float64 (float32 sums over millions of frames lose digits)."""

    def __init__(self, n_feats: int) -> None:
        self.count = 0
        self.total = np.zeros(n_feats)
        self.squares = np.zeros(n_feats)

    def add(self, frames: np.ndarray) -> None:
        frames = frames.astype(np.float64)
        self.count += frames.shape[0]
        self.total += frames.sum(0)
        self.squares += (frames**2).sum(0)

    def result(self) -> Cmvn:
        mean = self.total / max(self.count, 1)
        std = np.sqrt(np.maximum(self.squares / max(self.count, 1) - mean**2, 0.0))
        std = np.maximum(std, STD_FLOOR)
        return Cmvn(torch.tensor(mean, dtype=torch.float32), torch.tensor(std, dtype=torch.float32))


class Cmvn:
    def __init__(self, mean: Tensor, std: Tensor) -> None:
        self.mean, self.std = mean.float(), std.float()

    def __call__(self, x: Tensor) -> Tensor:
        """(..., F) -> normalized (..., F) on x's device."""
        return (x.float() - self.mean.to(x.device)) / self.std.to(x.device)

    def to_dict(self) -> dict[str, list[float]]:
        return {"mean": self.mean.tolist(), "std": self.std.tolist()}

    @classmethod
    def from_dict(cls, raw: dict[str, list[float]]) -> Cmvn:
        return cls(torch.tensor(raw["mean"]), torch.tensor(raw["std"]))

    def save(self, path: str | Path) -> None:
        atomic_write_text(path, json.dumps(self.to_dict()))

    @classmethod
    def load(cls, path: str | Path) -> Cmvn:
        """Read and check cmvn.json: a damaged one is one line naming it, never NaN features later."""
        path = Path(path)
        try:
            raw = json.loads(path.read_text())
            cmvn = cls.from_dict(raw)
            problem = None
            if cmvn.mean.ndim != 1 or cmvn.mean.shape != cmvn.std.shape or cmvn.mean.numel() == 0:
                problem = "mean and std differ in shape"
            elif not (torch.isfinite(cmvn.mean).all() and torch.isfinite(cmvn.std).all() and (cmvn.std > 0).all()):
                problem = "non-finite mean or non-positive std"
        except FileNotFoundError:
            raise SeqxError(f"{path}: missing; run `seqx featurize`") from None
        except (ValueError, KeyError, TypeError, RuntimeError) as err:
            problem = f"unreadable ({str(err).splitlines()[0] if str(err) else type(err).__name__})"
        if problem:
            raise SeqxError(f"{path}: corrupt CMVN statistics: {problem}")
        return cmvn
