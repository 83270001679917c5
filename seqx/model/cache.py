"""The explicit decoding cache: passed through `Seq2SeqTransformer.decode`, never hidden in hooks."""

from __future__ import annotations

from torch import Tensor, cat


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
            k, v = cat([self.k, k], dim=2), cat([self.v, v], dim=2)  # (B, H, T + t, dh)
        self.k, self.v = k, v
        return k, v


class DecodeCache:
    """Per decoder layer: self-attention K/V that grow by one step, cross-attention K/V computed once.

    `offset` is how many tokens the decoder has already seen (the position of the next one).
    Create one per search with `DecodeCache(dims.dec_layers)`; `Seq2SeqTransformer.decode`
    fills it and moves `offset` on.
    """

    def __init__(self, n_layers: int) -> None:
        self.self_attn = [AttentionCache() for _ in range(n_layers)]
        self.cross_attn = [AttentionCache() for _ in range(n_layers)]
        self.offset = 0

    def reorder(self, index: Tensor) -> None:
        """Follow the beams: row i of the self-attention cache becomes old row index[i].

        Cross-attention K/V are the same for all beams of one utterance (stored once per
        utterance), and beam search only moves hypotheses within their utterance.
        """
        for c in self.self_attn:
            if c.k is not None and c.v is not None:
                c.k, c.v = c.k.index_select(0, index), c.v.index_select(0, index)
