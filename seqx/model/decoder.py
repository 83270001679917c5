"""The decoder: scaled token embeddings + positions, masked self-attention, cross-attention, de-embedding."""

from __future__ import annotations

import math

from torch import Tensor, nn

from seqx.errors import SeqxError
from seqx.model.attention import causal_mask, key_mask
from seqx.model.blocks import ResidualAttentionBlock
from seqx.model.cache import DecodeCache
from seqx.model.dims import ModelDimensions
from seqx.model.positions import sinusoids


class Decoder(nn.Module):
    def __init__(self, dims: ModelDimensions) -> None:
        super().__init__()
        self.scale = math.sqrt(dims.d_model)  # embeddings are multiplied by sqrt(d_model) (paper 3.4)
        self.embed = nn.Embedding(dims.vocab_size, dims.d_model)
        self.register_buffer("positions", sinusoids(dims.max_positions, dims.d_model), persistent=False)
        self.drop = nn.Dropout(dims.dropout)
        self.blocks = nn.ModuleList(
            ResidualAttentionBlock(dims.d_model, dims.heads, dims.d_ff, dims.dropout, dims.norm_first, True)
            for _ in range(dims.dec_layers)
        )
        self.ln = nn.LayerNorm(dims.d_model) if dims.norm_first else nn.Identity()
        self.output = nn.Linear(dims.d_model, dims.vocab_size, bias=False)
        if dims.tie_embeddings:
            self.output.weight = self.embed.weight

    def fill_cross(self, cache: DecodeCache, memory: Tensor, repeat: int = 1) -> None:
        """Project memory (B, S, D) to every layer's cross-attention K/V once, shared by the
        `repeat` consecutive decoder rows (beams) of each utterance: no per-beam copies."""
        for block, slot in zip(self.blocks, cache.cross_attn, strict=True):
            attn = block.cross_attn
            assert attn is not None
            slot.k, slot.v = attn._split(attn.key(memory)), attn._split(attn.value(memory))  # (B, H, S, dh)
            slot.group = repeat

    def forward(
        self,
        tokens: Tensor,
        memory: Tensor,
        mem_lens: Tensor,
        cache: DecodeCache | None = None,
        token_lens: Tensor | None = None,
    ) -> Tensor:
        """tokens (B, U) -> logits (B, U, V). With a cache, `tokens` are only the new positions."""
        U = tokens.shape[1]
        offset = cache.offset if cache is not None else 0
        if offset + U > self.positions.shape[0]:
            raise SeqxError(f"{offset + U} tokens exceed model.max_positions {self.positions.shape[0]}")
        x = self.embed(tokens) * self.scale + self.positions[offset : offset + U]  # (B, U, D)
        x = self.drop(x.to(memory.dtype))
        if cache is None:
            mask = causal_mask(U, tokens.device)  # (1, 1, U, U)
            if token_lens is not None:
                mask = mask & key_mask(token_lens, U)  # (B, 1, U, U)
        elif U > 1:  # several new tokens at once: causal over the past and the new ones
            mask = causal_mask(offset + U, tokens.device)[:, :, offset:]  # (1, 1, U, offset + U)
        else:
            mask = None  # one new token sees every earlier one
        xa_mask = key_mask(mem_lens, memory.shape[1])  # (B, 1, 1, S)
        for i, block in enumerate(self.blocks):
            x = block(
                x,
                mask,
                memory,
                xa_mask,
                self_cache=cache.self_attn[i] if cache is not None else None,
                cross_cache=cache.cross_attn[i] if cache is not None else None,
            )
        if cache is not None:
            cache.offset += U
        return self.output(self.ln(x))  # (B, U, V)
