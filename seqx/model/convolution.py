"""The Conformer's convolution module (Gulati et al. 2020), for the encoder blocks.

Self-attention compares every frame with every other; what tells "fourteen" from "forty" is
a few neighbouring 80 ms frames, which a depthwise convolution sees directly and attention
must learn to find from few examples. Layout as in the paper: pointwise conv to 2D + GLU,
depthwise conv over time, normalization, SiLU, pointwise conv. LayerNorm stands in for the
paper's BatchNorm: batches here are small and padded, and one utterance decoded alone must
give what it gives in a batch (the export parity tests hold the model to that).
"""

from __future__ import annotations

import torch.nn.functional as F
from torch import Tensor, nn


class ConvolutionModule(nn.Module):
    """forward(x (B, S, D), keep (B, S, 1) True on real frames, or None: all real) -> (B, S, D);
    padded frames are zeroed before the depthwise convolution, so padding never reaches a real frame."""

    def __init__(self, d_model: int, kernel: int) -> None:
        super().__init__()
        if kernel < 1 or kernel % 2 == 0:
            raise ValueError(f"model.conv_kernel must be odd (the convolution is centred), got {kernel}")
        self.pointwise_in = nn.Linear(d_model, 2 * d_model)
        self.depthwise = nn.Conv1d(d_model, d_model, kernel, padding=kernel // 2, groups=d_model)
        self.norm = nn.LayerNorm(d_model)
        self.pointwise_out = nn.Linear(d_model, d_model)

    def forward(self, x: Tensor, keep: Tensor | None) -> Tensor:
        h = F.glu(self.pointwise_in(x), dim=-1)  # (B, S, D)
        if keep is not None:
            h = h.masked_fill(~keep, 0.0)
        h = self.depthwise(h.transpose(1, 2)).transpose(1, 2)
        return self.pointwise_out(F.silu(self.norm(h)))
