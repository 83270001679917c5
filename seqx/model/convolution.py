"""The Conformer's convolution module (Gulati et al. 2020), for the encoder blocks.

Self-attention compares every frame with every other; what tells "fourteen" from "forty" is
a few neighbouring 80 ms frames, which a depthwise convolution sees directly and attention
must learn to find from few examples. Layout as in the paper: pointwise conv to 2D + GLU,
depthwise conv over time, normalization, SiLU, pointwise conv. LayerNorm stands in for the
paper's BatchNorm: batches here are small and padded, and one utterance decoded alone must
give what it gives in a batch (the export parity tests hold the model to that).

Compiled (torch.compile), the depthwise convolution is computed as a sum of shifted, scaled
copies of the input in its (B, S, D) layout. On a GPU PyTorch sends a bf16 depthwise Conv1d to its
generic depthwise kernel, which took 30% of a compiled training step of the base size on an H200
(torch.profiler), while the shifted sum is elementwise work that torch.compile fuses (and keeps in
fp32 inside its kernels): 1.31x a step. On a CPU, inductor fails to compile the Conv1d with
dynamic shapes (`train.compile`), and the sum compiles. Same weights, same result. Eager code
(the trainer by default, decoding, the ONNX export) keeps Conv1d: eager, the sum is 14 separate
kernels, slower on this CPU and 9% slower a step on an H200 (324.7 against 297.7 ms, base size).
"""

from __future__ import annotations

import torch
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
        # None: the shifted sum when compiled, Conv1d eager; True / False: always / never the sum
        # (bench/train_throughput.py's `shifted` and `conv1d` options, to compare)
        self.shifted: bool | None = None

    def forward(self, x: Tensor, keep: Tensor | None) -> Tensor:
        h = F.glu(self.pointwise_in(x), dim=-1)  # (B, S, D)
        if keep is not None:
            h = h.masked_fill(~keep, 0.0)
        shifted = torch.compiler.is_compiling() if self.shifted is None else self.shifted
        if shifted:
            h = shifted_depthwise(h, self.depthwise)
        else:
            h = self.depthwise(h.transpose(1, 2)).transpose(1, 2)
        return self.pointwise_out(F.silu(self.norm(h)))


def shifted_depthwise(h: Tensor, conv: nn.Conv1d) -> Tensor:
    """conv(h.transpose(1, 2)).transpose(1, 2) for a centred depthwise conv, as sum_j w[:, j] * h[t + j - k//2]:
    no transposes, and elementwise work a compiler fuses (see the module docstring)."""
    kernel = conv.weight.shape[-1]
    steps = h.shape[1]
    padded = F.pad(h, (0, 0, kernel // 2, kernel // 2))  # zeros before and after in time, as Conv1d's padding
    weight = conv.weight[:, 0, :].to(h.dtype)  # (D, k)
    out = padded[:, 0:steps] * weight[:, 0]
    for j in range(1, kernel):
        out = out + padded[:, j : j + steps] * weight[:, j]
    if conv.bias is not None:
        out = out + conv.bias.to(h.dtype)
    return out
