"""The encoder: front-end, sinusoidal positions, self-attention blocks."""

from __future__ import annotations

from torch import Tensor, nn

from seqx.errors import SeqxError
from seqx.model.attention import key_mask
from seqx.model.blocks import ResidualAttentionBlock
from seqx.model.dims import ModelDimensions
from seqx.model.frontend import FrontEnd
from seqx.model.positions import sinusoids


class Encoder(nn.Module):
    def __init__(self, dims: ModelDimensions) -> None:
        super().__init__()
        self.frontend = FrontEnd(dims.frontend, dims.n_feats, dims.d_model, dims.conv_channels)
        self.register_buffer("positions", sinusoids(dims.max_positions, dims.d_model), persistent=False)
        self.drop = nn.Dropout(dims.dropout)
        self.blocks = nn.ModuleList(
            ResidualAttentionBlock(dims.d_model, dims.heads, dims.d_ff, dims.dropout, dims.norm_first)
            for _ in range(dims.enc_layers)
        )
        self.ln_post = nn.LayerNorm(dims.d_model) if dims.norm_first else nn.Identity()

    def forward(self, feats: Tensor, lens: Tensor) -> tuple[Tensor, Tensor]:
        """feats (B, T, F), lens (B,) -> memory (B, S, D), mem_lens (B,)."""
        x, lens = self.frontend(feats, lens)  # (B, S, D)
        S = x.shape[1]
        if S > self.positions.shape[0]:
            limit = self.positions.shape[0]
            raise SeqxError(f"input of {S} frames (after the front-end) exceeds model.max_positions {limit}")
        x = self.drop(x + self.positions[:S].to(x.dtype))
        mask = key_mask(lens, S)  # (B, 1, 1, S)
        for block in self.blocks:
            x = block(x, mask)
        return self.ln_post(x), lens
