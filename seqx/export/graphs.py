"""The two graphs an exported model is made of, as small `nn.Module`s over the trained model's own
layers (so the export is the model, not a copy of its maths).

EncoderGraph  feats (B, T, F) float32, lens (B,) int64
              -> memory (B, S, D), mem_lens (B,), ctc_logprobs (B, S, V),
                 cross_k, cross_v (L, B, H, S, dh): every decoder layer's cross-attention keys and
                 values, projected once per utterance here so a decoder step never sees the memory
                 and, for a model with intent/slot heads, slot_logprobs (B, sum of head classes)
StepGraph     token (N, 1) int64, self_k, self_v (L, N, H, t, dh) the past, cross_k, cross_v
              (L, B, H, S, dh) and mem_lens (B,) once per utterance, N = B * G rows (G beams each,
              adjacent): the beams of an utterance attend as G queries of one row, as in torch,
              so the memory's K/V are never copied per beam
              -> logprobs (N, V) float32 log-softmax of the next token,
                 new_self_k, new_self_v (L, N, H, t + 1, dh)

The step's position is the past length t (read from self_k's shape inside the graph), so the
graph needs no separate offset input and the cache is the only state the search keeps.

Positions are computed inside the graphs (the same float32 arithmetic as `sinusoids`) rather
than read from the models' (max_positions, D) tables: two 4096-row tables would be 2.4 MB
each of a 12 MB export, and the graphs then take any length.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from seqx.model.attention import AttentionCache, key_mask
from seqx.model.transformer import Seq2SeqTransformer


def positions_at(position: Tensor, channels: int, max_timescale: float = 10000.0) -> Tensor:
    """(T,) float32 positions -> (T, channels) sinusoids, interleaved sin/cos like `sinusoids`."""
    inv = torch.exp(-math.log(max_timescale) * torch.arange(0, channels, 2, dtype=torch.float32) / channels)
    angle = position[:, None] * inv  # (T, d/2)
    return torch.stack([torch.sin(angle), torch.cos(angle)], dim=-1).flatten(1)  # (T, d): sin, cos, sin, ...


class EncoderGraph(nn.Module):
    def __init__(self, model: Seq2SeqTransformer) -> None:
        super().__init__()
        self.model = model

    def forward(self, feats: Tensor, lens: Tensor) -> tuple[Tensor, ...]:
        encoder = self.model.encoder
        x, mem_lens = encoder.frontend(feats, lens)  # (B, S, D): Encoder.forward with positions computed here
        S = x.shape[1]
        x = x + positions_at(torch.arange(S, dtype=torch.float32), x.shape[2])
        mask = key_mask(mem_lens, S)  # (B, 1, 1, S)
        for block in encoder.blocks:
            x = block(x, mask)
        memory = encoder.ln_post(x)
        if self.model.ctc_head is not None:
            ctc = self.model.ctc_logprobs(memory)  # (B, S, V)
        else:  # no CTC head: a (B, S, V) of zeros keeps the graph's outputs the same for every model
            ctc = memory.new_zeros(memory.shape[0], memory.shape[1], self.model.dims.vocab_size)
        ks, vs = [], []
        for block in self.model.decoder.blocks:
            attn = block.cross_attn
            assert attn is not None
            ks.append(attn._split(attn.key(memory)))  # (B, H, S, dh)
            vs.append(attn._split(attn.value(memory)))
        outputs = (memory, mem_lens, ctc, torch.stack(ks), torch.stack(vs))
        # one more output only where there are heads: exports of other models stay as they were
        if self.model.slot_heads is not None:
            outputs += (self.model.slot_logprobs(memory, mem_lens),)
        return outputs


class StepGraph(nn.Module):
    def __init__(self, model: Seq2SeqTransformer) -> None:
        super().__init__()
        self.decoder = model.decoder

    def forward(
        self, token: Tensor, self_k: Tensor, self_v: Tensor, cross_k: Tensor, cross_v: Tensor, mem_lens: Tensor
    ) -> tuple[Tensor, Tensor, Tensor]:
        dec = self.decoder
        past = self_k.shape[3]  # tokens already seen: the new one's position (traced as a shape op)
        position = positions_at(torch.arange(past, past + 1, dtype=torch.float32), dec.embed.embedding_dim)  # (1, D)
        x = dec.embed(token) * dec.scale + position  # (N, 1, D)
        xa_mask = key_mask(mem_lens, cross_k.shape[3])  # (B, 1, 1, S)
        new_k, new_v = [], []
        for i, block in enumerate(dec.blocks):
            own, cross = AttentionCache(), AttentionCache()
            own.k, own.v = self_k[i], self_v[i]  # (N, H, t, dh)
            cross.k, cross.v = cross_k[i], cross_v[i]  # (B, H, S, dh), already projected
            cross.group = token.shape[0] // cross_k.shape[1]  # G, traced as shape arithmetic
            x = block(x, None, cross_k[i], xa_mask, self_cache=own, cross_cache=cross)
            new_k.append(own.k)  # (N, H, t + 1, dh)
            new_v.append(own.v)
        logits = dec.output(dec.ln(x))[:, -1]  # (N, V)
        return F.log_softmax(logits.float(), dim=-1), torch.stack(new_k), torch.stack(new_v)
