"""One residual block class for encoder and decoder (whisper style, `cross_attention` flag)."""

from __future__ import annotations

from torch import Tensor, nn

from seqx.model.attention import MultiHeadAttention
from seqx.model.cache import AttentionCache


class ResidualAttentionBlock(nn.Module):
    """Self-attention [+ cross-attention] + ReLU feed-forward, each in a residual with LayerNorm.

    norm_first=True (pre-LN):  x = x + Drop(Sublayer(LN(x)))   (the stack ends with a LayerNorm)
    norm_first=False (post-LN): x = LN(x + Drop(Sublayer(x)))  (Vaswani et al.)
    """

    def __init__(
        self, d_model: int, heads: int, d_ff: int, dropout: float, norm_first: bool, cross_attention: bool = False
    ) -> None:
        super().__init__()
        self.norm_first = norm_first
        self.attn = MultiHeadAttention(d_model, heads, dropout)
        self.attn_ln = nn.LayerNorm(d_model)
        self.cross_attn = MultiHeadAttention(d_model, heads, dropout) if cross_attention else None
        self.cross_attn_ln = nn.LayerNorm(d_model) if cross_attention else None
        self.mlp = nn.Sequential(nn.Linear(d_model, d_ff), nn.ReLU(), nn.Dropout(dropout), nn.Linear(d_ff, d_model))
        self.mlp_ln = nn.LayerNorm(d_model)
        self.drop = nn.Dropout(dropout)

    def _residual(self, x: Tensor, ln: nn.LayerNorm, sublayer) -> Tensor:  # type: ignore[no-untyped-def]
        if self.norm_first:
            return x + self.drop(sublayer(ln(x)))
        return ln(x + self.drop(sublayer(x)))

    def forward(
        self,
        x: Tensor,
        mask: Tensor | None = None,
        xa: Tensor | None = None,
        xa_mask: Tensor | None = None,
        self_cache: AttentionCache | None = None,
        cross_cache: AttentionCache | None = None,
    ) -> Tensor:
        """x (B, T, D); mask (B|1, 1, T, T_k); xa (B, S, D) and xa_mask (B, 1, 1, S) for cross-attention."""
        x = self._residual(x, self.attn_ln, lambda h: self.attn(h, mask=mask, cache=self_cache))
        if self.cross_attn is not None and self.cross_attn_ln is not None:
            x = self._residual(x, self.cross_attn_ln, lambda h: self.cross_attn(h, xa, mask=xa_mask, cache=cross_cache))
        return self._residual(x, self.mlp_ln, self.mlp)
