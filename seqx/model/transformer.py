"""`Seq2SeqTransformer(dims)`: encoder, decoder and the auxiliary CTC head."""

from __future__ import annotations

from typing import NamedTuple

import torch.nn.functional as F
from torch import Tensor, nn

from seqx.model.cache import DecodeCache
from seqx.model.decoder import Decoder
from seqx.model.dims import ModelDimensions
from seqx.model.encoder import Encoder


class ModelOutput(NamedTuple):
    logits: Tensor  # (B, U, V) decoder logits, teacher-forced
    ctc_logprobs: Tensor | None  # (B, S, V) float32 log-softmax of the CTC head, None without one
    mem_lens: Tensor  # (B,) encoder output lengths (frames after the front-end)


class Seq2SeqTransformer(nn.Module):
    """The Transformer encoder-decoder of Vaswani et al. over feature frames.

    >>> import torch
    >>> dims = ModelDimensions(n_feats=8, vocab_size=10, d_model=16, heads=2, enc_layers=1, dec_layers=1, d_ff=32)
    >>> model = Seq2SeqTransformer(dims)
    >>> tokens = torch.ones(2, 5, dtype=torch.long)
    >>> out = model(torch.randn(2, 30, 8), torch.tensor([30, 20]), tokens, torch.tensor([5, 3]))
    >>> tuple(out.logits.shape), out.mem_lens.tolist()
    ((2, 5, 10), [6, 4])
    """

    def __init__(self, dims: ModelDimensions) -> None:
        super().__init__()
        self.dims = dims
        self.encoder = Encoder(dims)
        self.decoder = Decoder(dims)
        self.ctc_head = nn.Linear(dims.d_model, dims.vocab_size) if dims.ctc else None
        self.apply(_init_weights)
        # token embeddings (and so the tied output layer) ~ N(0, 1/d): unit variance after the sqrt(d) scale
        nn.init.normal_(self.decoder.embed.weight, std=dims.d_model**-0.5)
        if not dims.tie_embeddings:
            nn.init.normal_(self.decoder.output.weight, std=dims.d_model**-0.5)

    def encode(self, feats: Tensor, feat_lens: Tensor) -> tuple[Tensor, Tensor]:
        """feats (B, T, F), feat_lens (B,) -> memory (B, S, D), mem_lens (B,)."""
        return self.encoder(feats, feat_lens)

    def decode(
        self,
        tokens: Tensor,
        memory: Tensor,
        mem_lens: Tensor,
        cache: DecodeCache | None = None,
        token_lens: Tensor | None = None,
    ) -> Tensor:
        """tokens (B, U) -> logits (B, U, V); with a cache pass only the tokens it has not seen."""
        return self.decoder(tokens, memory, mem_lens, cache, token_lens)

    def new_cache(self, memory: Tensor | None = None, repeat: int = 1) -> DecodeCache:
        """An empty cache; given memory (B, S, D), its cross-attention K/V are filled once per utterance
        for decoding B * repeat rows (`repeat` beams each, adjacent)."""
        cache = DecodeCache(self.dims.dec_layers)
        if memory is not None:
            self.decoder.fill_cross(cache, memory, repeat)
        return cache

    def ctc_logprobs(self, memory: Tensor) -> Tensor:
        """memory (B, S, D) -> (B, S, V) float32 log-probabilities of the CTC head."""
        if self.ctc_head is None:
            raise ValueError("this model has no CTC head (dims.ctc is False)")
        return F.log_softmax(self.ctc_head(memory).float(), dim=-1)

    def forward(self, feats: Tensor, feat_lens: Tensor, tokens_in: Tensor, token_lens: Tensor) -> ModelOutput:
        """Teacher forcing: tokens_in = [bos] + y (B, U), padded; token_lens (B,) counts bos."""
        memory, mem_lens = self.encode(feats, feat_lens)
        logits = self.decode(tokens_in, memory, mem_lens, token_lens=token_lens)
        ctc = self.ctc_logprobs(memory) if self.ctc_head is not None else None
        return ModelOutput(logits, ctc, mem_lens)


def _init_weights(module: nn.Module) -> None:
    # xavier keeps activations at unit scale through the attention and feed-forward projections
    if isinstance(module, nn.Linear):
        nn.init.xavier_uniform_(module.weight)
        if module.bias is not None:
            nn.init.zeros_(module.bias)


def param_groups(model: nn.Module, weight_decay: float) -> list[dict[str, object]]:
    """AdamW groups: decay matrices (linear, conv, embedding), never biases or LayerNorm gains."""
    params = [p for p in model.parameters() if p.requires_grad]  # tied weights appear once
    decay = [p for p in params if p.dim() >= 2]
    no_decay = [p for p in params if p.dim() < 2]
    return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]


def count_parameters(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


__all__ = ["ModelOutput", "Seq2SeqTransformer", "param_groups", "count_parameters"]
