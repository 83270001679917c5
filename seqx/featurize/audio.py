"""The one entry point for audio on the torch path: `load_audio(path, sample_rate)` -> a tensor.

The reading itself is seqx/featurize/samples.py (torch-free, shared with seqx.runtime);
`torchaudio.load` is not used: it needs torchcodec.
"""

from __future__ import annotations

from pathlib import Path

import torch

from seqx.featurize.samples import SOUNDFILE_ONLY, read_samples

__all__ = ["SOUNDFILE_ONLY", "load_audio", "read_samples"]


def load_audio(path: str | Path, sample_rate: int) -> torch.Tensor:
    """Mono float32 samples in [-1, 1] at `sample_rate`, shape (T,). Silence is fine; broken files are not."""
    return torch.from_numpy(read_samples(path, sample_rate))
