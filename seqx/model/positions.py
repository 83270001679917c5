"""Sinusoidal positions (Vaswani et al. 3.5)."""

from __future__ import annotations

import math

import torch


def sinusoids(length: int, channels: int, max_timescale: float = 10000.0) -> torch.Tensor:
    """(length, channels): PE[p, 2i] = sin(p / 10000^(2i/d)), PE[p, 2i+1] = cos(p / 10000^(2i/d))."""
    assert channels % 2 == 0, "sinusoidal positions need an even width"
    position = torch.arange(length, dtype=torch.float32)[:, None]  # (L, 1)
    inv_timescale = torch.exp(-math.log(max_timescale) * torch.arange(0, channels, 2, dtype=torch.float32) / channels)
    table = torch.zeros(length, channels)
    table[:, 0::2] = torch.sin(position * inv_timescale)  # (L, d/2)
    table[:, 1::2] = torch.cos(position * inv_timescale)
    return table
