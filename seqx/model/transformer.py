"""The whole network in one file: `ModelDimensions`, positions, the residual block, encoder,
decoder, the explicit decoding cache and `Seq2SeqTransformer` (whisper's `model.py` shape).

The attention module and masks (attention.py), the front-ends (frontend.py) and the
training loss (loss.py) sit beside it. Nothing here knows about recipes, features or
tokenizers: `ModelDimensions` is all a model needs, and every checkpoint and bundle
stores it.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields
from typing import Any, NamedTuple, Protocol

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from seqx.errors import SeqxError
from seqx.model.attention import AttentionCache, MultiHeadAttention, causal_mask, key_mask
from seqx.model.convolution import ConvolutionModule
from seqx.model.frontend import FrontEnd
from seqx.model.slot_head import SlotHeads

# ---------------------------------------------------------------------------- dimensions


class TokenizerIds(Protocol):
    """What the model needs from a tokenizer (duck-typed: seqx.tokenize.tokenizer.Tokenizer fits)."""

    vocab_size: int
    pad_id: int
    bos_id: int
    eos_id: int
    blank_id: int


class NetworkSettings(Protocol):
    """What `ModelDimensions.from_settings` reads (duck-typed: seqx.recipe.ModelSettings fits)."""

    norm: str
    ctc_weight: float


@dataclass(frozen=True)
class ModelDimensions:
    n_feats: int  # width of one feature frame (what the front-end receives)
    vocab_size: int  # output tokens, specials included
    d_model: int = 256
    heads: int = 4
    enc_layers: int = 6
    dec_layers: int = 3
    d_ff: int = 1024
    dropout: float = 0.1
    norm_first: bool = True  # pre-LN (True) trains more easily; post-LN (False) is the paper's
    frontend: str = "conv2d"  # "none" | "linear" | "conv2d"
    conv_channels: int = 0  # conv2d channels; 0 = d_model (fewer make the front-end much cheaper on a CPU)
    conv_kernel: int = 0  # a Conformer convolution module of this width in every encoder block; 0 = none
    ctc: bool = True  # auxiliary CTC head on the encoder
    tie_embeddings: bool = True  # output projection shares the token embedding matrix
    max_positions: int = 4096  # longest sequence (frames after the front-end, or tokens)
    pad_id: int = 0
    bos_id: int = 1
    eos_id: int = 2
    blank_id: int = 0  # CTC blank; may coincide with pad (never a target)
    # classes of each intent/slot head (seqx/model/slot_head.py), "none" included; () = no heads
    slot_classes: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "slot_classes", tuple(int(n) for n in self.slot_classes))  # JSON gives a list
        if self.frontend not in ("none", "linear", "conv2d"):
            raise SeqxError(f"model.frontend: unknown front-end {self.frontend!r} (none, linear, conv2d)")
        if self.conv_kernel and self.conv_kernel % 2 == 0:
            raise SeqxError(f"model.conv_kernel: must be odd (the convolution is centred), got {self.conv_kernel}")
        if self.d_model % self.heads:
            raise SeqxError(f"model.d_model: must be divisible by model.heads ({self.d_model} vs {self.heads})")
        if self.frontend == "none" and self.n_feats != self.d_model:
            raise SeqxError(
                f"model.d_model: front-end 'none' feeds frames straight in, so it must equal "
                f"the feature width {self.n_feats} (got {self.d_model})"
            )
        for name in ("pad_id", "bos_id", "eos_id", "blank_id"):
            if not 0 <= getattr(self, name) < self.vocab_size:
                value = getattr(self, name)
                raise SeqxError(f"tokenizer: {name} {value} is outside the vocabulary ({self.vocab_size})")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> ModelDimensions:
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(raw) - known)
        if unknown:
            raise SeqxError(f"model dimensions: unknown key(s) {', '.join(unknown)}")
        return cls(**raw)

    @classmethod
    def from_settings(
        cls, model: NetworkSettings, n_feats: int, tokenizer: TokenizerIds, slot_classes: tuple[int, ...] = ()
    ) -> ModelDimensions:
        """The one place recipe settings (`seqx.recipe.ModelSettings`) become dimensions: every
        field with the same name is taken as it is; the pre/post-LN choice and the CTC head follow
        from `norm` and `ctc_weight`; ids come from the tokenizer; the intent/slot heads' classes
        from the grammar (seqx.decode.slot_rescore.HeadLayout.sizes), when training uses them."""
        named = {f.name: getattr(model, f.name) for f in fields(cls) if hasattr(model, f.name)}
        ids = {name: getattr(tokenizer, name) for name in ("vocab_size", "pad_id", "bos_id", "eos_id", "blank_id")}
        derived = {"norm_first": model.norm == "pre", "ctc": model.ctc_weight > 0, "slot_classes": tuple(slot_classes)}
        return cls(n_feats=n_feats, **{**named, **ids, **derived})


# -------------------------------------------------------- positions (Vaswani et al. 3.5)


def sinusoids(length: int, channels: int, max_timescale: float = 10000.0) -> torch.Tensor:
    """(length, channels): PE[p, 2i] = sin(p / 10000^(2i/d)), PE[p, 2i+1] = cos(p / 10000^(2i/d))."""
    assert channels % 2 == 0, "sinusoidal positions need an even width"
    position = torch.arange(length, dtype=torch.float32)[:, None]  # (L, 1)
    inv_timescale = torch.exp(-math.log(max_timescale) * torch.arange(0, channels, 2, dtype=torch.float32) / channels)
    table = torch.zeros(length, channels)
    table[:, 0::2] = torch.sin(position * inv_timescale)  # (L, d/2)
    table[:, 1::2] = torch.cos(position * inv_timescale)
    return table


# ---------------------- the residual block (encoder and decoder, `cross_attention` flag)


class ResidualAttentionBlock(nn.Module):
    """Self-attention [+ cross-attention | + convolution] + ReLU feed-forward, each in a residual
    with LayerNorm.

    norm_first=True (pre-LN):  x = x + Drop(Sublayer(LN(x)))   (the stack ends with a LayerNorm)
    norm_first=False (post-LN): x = LN(x + Drop(Sublayer(x)))  (Vaswani et al.)
    """

    def __init__(
        self,
        d_model: int,
        heads: int,
        d_ff: int,
        dropout: float,
        norm_first: bool,
        cross_attention: bool = False,
        conv_kernel: int = 0,
    ) -> None:
        super().__init__()
        self.norm_first = norm_first
        self.attn = MultiHeadAttention(d_model, heads, dropout)
        self.attn_ln = nn.LayerNorm(d_model)
        self.cross_attn = MultiHeadAttention(d_model, heads, dropout) if cross_attention else None
        self.cross_attn_ln = nn.LayerNorm(d_model) if cross_attention else None
        self.conv = ConvolutionModule(d_model, conv_kernel) if conv_kernel else None
        self.conv_ln = nn.LayerNorm(d_model) if conv_kernel else None
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
        if self.conv is not None and self.conv_ln is not None:
            keep = None if mask is None else mask[:, 0, 0, :, None]  # (B, S, 1) from the encoder's key mask
            x = self._residual(x, self.conv_ln, lambda h: self.conv(h, keep))
        return self._residual(x, self.mlp_ln, self.mlp)


# ----------------------- encoder: front-end, sinusoidal positions, self-attention blocks


class Encoder(nn.Module):
    def __init__(self, dims: ModelDimensions) -> None:
        super().__init__()
        self.frontend = FrontEnd(dims.frontend, dims.n_feats, dims.d_model, dims.conv_channels)
        self.register_buffer("positions", sinusoids(dims.max_positions, dims.d_model), persistent=False)
        self.drop = nn.Dropout(dims.dropout)
        self.blocks = nn.ModuleList(
            ResidualAttentionBlock(
                dims.d_model, dims.heads, dims.d_ff, dims.dropout, dims.norm_first, conv_kernel=dims.conv_kernel
            )
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


#  decoder: scaled token embeddings + positions, masked self-attention, cross-attention, de-embedding


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


# ----------- the explicit decoding cache: passed through `decode`, never hidden in hooks


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


# ----------------------------------------------------------------------------- the model


class ModelOutput(NamedTuple):
    logits: Tensor  # (B, U, V) decoder logits, teacher-forced
    ctc_logprobs: Tensor | None  # (B, S, V) float32 log-softmax of the CTC head, None without one
    mem_lens: Tensor  # (B,) encoder output lengths (frames after the front-end)
    slot_logprobs: Tensor | None = None  # (B, sum of head classes) intent/slot heads, None without them


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
        self.slot_heads = SlotHeads(dims.d_model, dims.slot_classes) if dims.slot_classes else None
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

    def slot_logprobs(self, memory: Tensor, mem_lens: Tensor) -> Tensor:
        """memory (B, S, D) -> (B, sum of head classes) float32 log-probs of the intent/slot heads."""
        if self.slot_heads is None:
            raise ValueError("this model has no intent/slot heads (dims.slot_classes is empty)")
        return self.slot_heads(memory, mem_lens)

    def forward(self, feats: Tensor, feat_lens: Tensor, tokens_in: Tensor, token_lens: Tensor) -> ModelOutput:
        """Teacher forcing: tokens_in = [bos] + y (B, U), padded; token_lens (B,) counts bos."""
        memory, mem_lens = self.encode(feats, feat_lens)
        logits = self.decode(tokens_in, memory, mem_lens, token_lens=token_lens)
        ctc = self.ctc_logprobs(memory) if self.ctc_head is not None else None
        slots = self.slot_heads(memory, mem_lens) if self.slot_heads is not None else None
        return ModelOutput(logits, ctc, mem_lens, slots)


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
