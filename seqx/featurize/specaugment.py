"""SpecAugment (Park et al. 2019): frequency and time masks, drawn per utterance, on the batch's device.

Time masks are drawn inside each utterance's real length and are at most
`time_mask_ratio` of it, so a short command is never blanked out entirely.
Masked values are set to 0, the mean after CMVN.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from seqx.recipe import SpecAugmentSettings


class SpecAugment(nn.Module):
    def __init__(self, settings: SpecAugmentSettings) -> None:
        super().__init__()
        self.settings = settings

    def forward(self, feats: Tensor, lengths: Tensor) -> Tensor:
        """feats (B, T, F), lengths (B,) -> masked copy (unchanged in eval mode)."""
        if not self.training:
            return feats
        B, T, F = feats.shape
        s = self.settings
        keep = torch.ones(B, T, F, dtype=torch.bool, device=feats.device)
        freq = torch.arange(F, device=feats.device)[None, :]  # (1, F)
        for _ in range(s.freq_masks):
            width = (torch.rand(B, 1, device=feats.device) * (min(s.freq_mask_width, F) + 1)).long()  # (B, 1)
            start = (torch.rand(B, 1, device=feats.device) * (F - width + 1)).long()
            keep &= ~((freq >= start) & (freq < start + width))[:, None, :]
        time = torch.arange(T, device=feats.device)[None, :]  # (1, T)
        ratio_width = (lengths.float() * s.time_mask_ratio).long()  # (B,)
        max_width = torch.minimum(torch.full_like(lengths, s.time_mask_width), ratio_width)
        for _ in range(s.time_masks):
            width = (torch.rand(B, device=feats.device) * (max_width + 1)).long()  # (B,)
            start = (torch.rand(B, device=feats.device) * (lengths - width + 1).clamp(min=1)).long()  # (B,)
            keep &= ~((time >= start[:, None]) & (time < (start + width)[:, None]))[:, :, None]
        return feats.masked_fill(~keep, 0.0)
