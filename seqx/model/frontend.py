"""Front-ends: how feature frames (B, T, n_feats) become encoder inputs (B, T', d_model).

- none:   frames go in as they are (n_feats must equal d_model)
- linear: one projection n_feats -> d_model
- conv2d: two 3x3 stride-2 convolutions + ReLU (no padding), then a projection:
          T' = ((T - 1) // 2 - 1) // 2, about T / 4, so attention costs about 16x less.
Padded frames are zeroed on the way in, so whatever they held cannot reach a real output
(a valid conv2d output frame j reads frames 4j .. 4j+6 <= T - 1, all real).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from seqx.model.attention import make_pad_mask

KERNEL, STRIDE = 3, 2
CONV_MIN_FRAMES = 7  # the shortest input two unpadded 3x3/2 convolutions turn into one frame


def conv_out_len(lens: Tensor) -> Tensor:
    """Frames after one 3x3 stride-2 conv without padding: floor((L - 3) / 2) + 1."""
    return torch.div(lens - KERNEL, STRIDE, rounding_mode="floor") + 1


class FrontEnd(nn.Module):
    """forward(feats (B, T, F), lens (B,)) -> (x (B, T', D), lens' (B,))."""

    def __init__(self, kind: str, n_feats: int, d_model: int, channels: int = 0) -> None:
        super().__init__()
        self.kind = kind
        if kind == "linear":
            self.proj = nn.Linear(n_feats, d_model)
        elif kind == "conv2d":
            channels = channels or d_model
            self.conv = nn.Sequential(
                nn.Conv2d(1, channels, KERNEL, STRIDE), nn.ReLU(), nn.Conv2d(channels, channels, KERNEL, STRIDE), nn.ReLU()
            )
            freq = conv_out_len(conv_out_len(torch.tensor(n_feats))).item()
            if freq < 1:
                raise ValueError(f"front-end conv2d needs at least {CONV_MIN_FRAMES} features per frame, got {n_feats}")
            self.proj = nn.Linear(channels * int(freq), d_model)
        elif kind != "none":
            raise ValueError(f"unknown front-end {kind!r}")

    def output_lengths(self, lens: Tensor) -> Tensor:
        if self.kind != "conv2d":
            return lens
        # clips shorter than 7 frames are padded up to 7 in forward, so they still give one frame
        return conv_out_len(conv_out_len(lens.clamp(min=CONV_MIN_FRAMES)))

    def forward(self, feats: Tensor, lens: Tensor) -> tuple[Tensor, Tensor]:
        feats = feats.masked_fill(make_pad_mask(lens, feats.shape[1])[..., None], 0.0)  # (B, T, F)
        if self.kind == "none":
            return feats, lens
        if self.kind == "linear":
            return self.proj(feats), lens
        if feats.shape[1] < CONV_MIN_FRAMES:
            feats = F.pad(feats, (0, 0, 0, CONV_MIN_FRAMES - feats.shape[1]))
        x = self.conv(feats.unsqueeze(1))  # (B, C, T', F')
        B, C, T, Fq = x.shape
        x = self.proj(x.permute(0, 2, 1, 3).reshape(B, T, C * Fq))  # (B, T', D)
        return x, self.output_lengths(lens)
