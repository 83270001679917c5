"""Masks from integer lengths and the one multi-head attention module (self and cross).

Boolean masks follow `scaled_dot_product_attention`: True = may attend. They are
shaped (B, 1, T_q, T_k) (broadcast over heads), which the math, memory-efficient and
cuDNN kernels all accept on CPU and CUDA. Every query row keeps at least one key
(lengths are clamped to >= 1 and the causal mask always allows position 0), so no
row is fully masked and no NaN appears, not even in padded query rows.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.nn.attention import SDPBackend, sdpa_kernel


def make_pad_mask(lens: Tensor, max_len: int | None = None) -> Tensor:
    """(B, T) True at padded positions (icefall's convention), from integer lengths (B,)."""
    max_len = int(lens.max()) if max_len is None else max_len
    return torch.arange(max_len, device=lens.device)[None, :] >= lens[:, None]


def key_mask(lens: Tensor, max_len: int) -> Tensor:
    """(B, 1, 1, S) True where the key is real; padded keys are hidden from every query."""
    return (~make_pad_mask(lens.clamp(min=1), max_len))[:, None, None, :]


def causal_mask(size: int, device: torch.device | None = None) -> Tensor:
    """(1, 1, U, U) lower-triangular: position u sees positions <= u (the future never changes the past)."""
    return torch.ones(size, size, dtype=torch.bool, device=device).tril()[None, None]


class AttentionCache:
    """Keys and values of one attention module, (B, H, T, dh) each.

    `group` > 1 (cross-attention in beam search): each K/V row serves `group` consecutive
    query rows, the beams of one utterance, so the encoder output is neither copied per
    beam nor read once per beam.
    """

    def __init__(self) -> None:
        self.k: Tensor | None = None
        self.v: Tensor | None = None
        self.group = 1

    def append(self, k: Tensor, v: Tensor) -> tuple[Tensor, Tensor]:
        """Self-attention: add this step's keys/values (B, H, t, dh); return the whole history."""
        if self.k is not None and self.v is not None:
            k, v = torch.cat([self.k, k], dim=2), torch.cat([self.v, v], dim=2)  # (B, H, T + t, dh)
        self.k, self.v = k, v
        return k, v


SHORT_QUERY = 16  # up to this many queries per row, the CPU takes the written-out path


def short_query_attention(q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None) -> Tensor:
    """softmax(Q K^T / sqrt(d_k)) V for a few queries per row: q (B, H, T, dh), k/v (B, H, S, dh).

    The same maths as `scaled_dot_product_attention`, written out because PyTorch 2.11's
    fused CPU kernel is slow for short queries: for a beam-search step (256 rows, 4 heads,
    one query, 55 keys) it takes 2.0 ms in fp32 and 4.3 ms in bf16, against 0.7 ms for these
    three ops. For encoder-length queries (140) the fused kernel wins in fp32, hence the
    SHORT_QUERY limit. The softmax runs in fp32 whatever q is.
    """
    w = (q @ k.transpose(-1, -2)) * q.shape[-1] ** -0.5  # (B, H, T, S)
    if mask is not None:
        w = w.masked_fill(~mask, float("-inf"))
    return w.float().softmax(dim=-1).to(v.dtype) @ v  # (B, H, T, dh)


def _beams_as_queries(x: Tensor, group: int) -> Tensor:
    """(B * G, H, T, dh) -> (B, H, G * T, dh): the G beams of an utterance become G queries of one row."""
    N, H, T, dh = x.shape
    return x.view(N // group, group, H, T, dh).transpose(1, 2).reshape(N // group, H, group * T, dh)


def _queries_as_beams(y: Tensor, group: int) -> Tensor:
    """The inverse of `_beams_as_queries`: (B, H, G * T, dh) -> (B * G, H, T, dh)."""
    B, H, GT, dh = y.shape
    return y.view(B, H, group, GT // group, dh).transpose(1, 2).reshape(B * group, H, GT // group, dh)


class MultiHeadAttention(nn.Module):
    """softmax(Q K^T / sqrt(d_k)) V per head, heads concatenated and projected.

    forward(x (B, T, D), xa (B, S, D) | None, mask (B|1, 1, T, S) bool | None, cache) -> (B, T, D).
    Self-attention when `xa` is None. With a cache, self-attention appends this call's
    keys/values to the cache (x holds only the new positions) and cross-attention
    projects `xa` once and reuses it on every later call.
    """

    # True: training projects Q, K and V (self-attention) or K and V (cross-attention) with one
    # matrix product over the concatenated weights, which may feed a GPU better than three of a
    # third of the width. Off until a GPU measures it (bench/train_throughput.py's `qkv1` variant):
    # the maths is the same, but a CPU run differs in rounding, and tests/test_slot_heads.py's
    # tiny model read fewer files in 2 of 3 seeds. Decoding always keeps three products (cached
    # steps would copy the weights each step); the parameters stay three Linear modules either way.
    fuse_projections = False

    def __init__(self, d_model: int, heads: int, dropout: float = 0.0) -> None:
        super().__init__()
        assert d_model % heads == 0
        self.heads = heads
        self.dropout = dropout
        self.query = nn.Linear(d_model, d_model)
        self.key = nn.Linear(d_model, d_model)
        self.value = nn.Linear(d_model, d_model)
        self.out = nn.Linear(d_model, d_model)

    def _split(self, x: Tensor) -> Tensor:
        B, T, D = x.shape
        return x.view(B, T, self.heads, D // self.heads).transpose(1, 2)  # (B, H, T, dh)

    def forward(
        self, x: Tensor, xa: Tensor | None = None, mask: Tensor | None = None, cache: AttentionCache | None = None
    ) -> Tensor:
        if self.training and cache is None and self.fuse_projections:
            if xa is None:
                q, k, v = self._fused(x, (self.query, self.key, self.value))
            else:
                q, (k, v) = self._split(self.query(x)), self._fused(xa, (self.key, self.value))
            return self.out(self._merge(self._attend(q, k, v, mask)))
        q = self._split(self.query(x))  # (B, H, T, dh)
        if xa is None:  # self-attention: keys/values grow with the sequence
            k, v = self._split(self.key(x)), self._split(self.value(x))  # (B, H, T, dh)
            if cache is not None:
                k, v = cache.append(k, v)  # (B, H, T_past + T, dh)
        elif cache is not None and cache.k is not None:  # cross-attention, projected once per utterance
            k, v = cache.k, cache.v
            if cache.group > 1:  # beams share their utterance's K/V: attend as one row of G * T queries
                if mask is not None and mask.shape[0] == q.shape[0]:
                    mask = mask[:: cache.group]  # (B, 1, 1, S): a key mask is the same for every beam
                y = self._attend(_beams_as_queries(q, cache.group), k, v, mask)
                return self.out(self._merge(_queries_as_beams(y, cache.group)))
        else:
            k, v = self._split(self.key(xa)), self._split(self.value(xa))  # (B, H, S, dh)
            if cache is not None:
                cache.k, cache.v = k, v
        return self.out(self._merge(self._attend(q, k, v, mask)))  # (B, T, D)

    def _fused(self, x: Tensor, projections: tuple[nn.Linear, ...]) -> list[Tensor]:
        """Several projections of x as one matrix product, each split into heads: [(B, H, T, dh)]."""
        weight = torch.cat([p.weight for p in projections])
        bias = torch.cat([p.bias for p in projections])
        return [self._split(y) for y in F.linear(x, weight, bias).chunk(len(projections), dim=-1)]

    def _attend(self, q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None) -> Tensor:
        """(B, H, T, dh) attention output; decoding steps on the CPU skip the fused kernel (see above)."""
        # the shape test last: under torch.compile (train.compile) a shape test in training would guard the
        # graph on the target length and compile it again when that length changes
        if not self.training and q.device.type == "cpu" and q.shape[2] <= SHORT_QUERY:
            return short_query_attention(q, k, v, mask)
        p = self.dropout if self.training else 0.0
        if q.device.type == "cpu" and q.dtype == torch.bfloat16 and q.requires_grad:
            # torch 2.11's CPU flash kernel (what SDPA picks without dropout) has a bf16 backward 5x slower
            # than the unfused maths (docs/benchmarks.md, "Training throughput"); its forward is fine
            with sdpa_kernel(SDPBackend.MATH):
                return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=p)
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=p)

    @staticmethod
    def _merge(y: Tensor) -> Tensor:
        """(B, H, T, dh) -> (B, T, H * dh): heads concatenated, ready for the output projection."""
        B, H, T, dh = y.shape
        return y.transpose(1, 2).reshape(B, T, H * dh)
