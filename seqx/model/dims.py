"""`ModelDimensions`: everything needed to rebuild a model, stored in every checkpoint and bundle."""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any, Protocol

from seqx.errors import SeqxError
from seqx.recipe import ModelSettings


class TokenizerIds(Protocol):
    """What the model needs from a tokenizer (duck-typed: seqx.tokenize.tokenizer.Tokenizer fits)."""

    vocab_size: int
    pad_id: int
    bos_id: int
    eos_id: int
    blank_id: int


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
    ctc: bool = True  # auxiliary CTC head on the encoder
    tie_embeddings: bool = True  # output projection shares the token embedding matrix
    max_positions: int = 4096  # longest sequence (frames after the front-end, or tokens)
    pad_id: int = 0
    bos_id: int = 1
    eos_id: int = 2
    blank_id: int = 0  # CTC blank; may coincide with pad (never a target)

    def __post_init__(self) -> None:
        if self.frontend not in ("none", "linear", "conv2d"):
            raise SeqxError(f"model.frontend: unknown front-end {self.frontend!r} (none, linear, conv2d)")
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
    def from_settings(cls, model: ModelSettings, n_feats: int, tokenizer: TokenizerIds) -> ModelDimensions:
        return cls(
            n_feats=n_feats,
            vocab_size=tokenizer.vocab_size,
            d_model=model.d_model,
            heads=model.heads,
            enc_layers=model.enc_layers,
            dec_layers=model.dec_layers,
            d_ff=model.d_ff,
            dropout=model.dropout,
            norm_first=model.norm == "pre",
            frontend=model.frontend,
            conv_channels=model.conv_channels,
            ctc=model.ctc_weight > 0,
            tie_embeddings=model.tie_embeddings,
            max_positions=model.max_positions,
            pad_id=tokenizer.pad_id,
            bos_id=tokenizer.bos_id,
            eos_id=tokenizer.eos_id,
            blank_id=tokenizer.blank_id,
        )
