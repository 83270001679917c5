"""Utterances from the feature store as (normalized features, token ids), and their padded batches."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor
from torch.nn.utils.rnn import pad_sequence

from seqx.featurize.cmvn import Cmvn
from seqx.featurize.store import FeatureStore
from seqx.tokenize.tokenizer import Tokenizer


class UtteranceDataset(torch.utils.data.Dataset):
    def __init__(self, store: FeatureStore, tokenizer: Tokenizer, cmvn: Cmvn) -> None:
        self.store, self.cmvn = store, cmvn
        self.tokens = [tokenizer.encode(text) for text in store.texts]  # once, not every epoch

    def __len__(self) -> int:
        return len(self.store)

    def __getitem__(self, i: int) -> tuple[Tensor, Tensor]:
        feats = self.cmvn(torch.from_numpy(self.store[i].astype("float32")))  # (T, F)
        return feats, torch.tensor(self.tokens[i], dtype=torch.long)


@dataclass
class Batch:
    feats: Tensor  # (B, T, F) float32, CMVN-normalized, zero-padded
    feat_lens: Tensor  # (B,)
    tokens_in: Tensor  # (B, U) [bos] + y, pad-padded
    targets: Tensor  # (B, U) y + [eos], pad-padded
    target_lens: Tensor  # (B,) len(y) + 1

    def pin_memory(self) -> Batch:
        """Called by DataLoader(pin_memory=True): page-locked, so `.to(cuda, non_blocking=True)` overlaps."""
        return Batch(*(t.pin_memory() for t in (self.feats, self.feat_lens, self.tokens_in, self.targets, self.target_lens)))

    def to(self, device: torch.device) -> Batch:
        return Batch(*(t.to(device, non_blocking=True) for t in (self.feats, self.feat_lens, self.tokens_in, self.targets, self.target_lens)))

    @property
    def size(self) -> int:
        return self.feats.shape[0]


class Collate:
    """A picklable collate function (DataLoader workers need one)."""

    def __init__(self, pad_id: int, bos_id: int, eos_id: int) -> None:
        self.pad_id, self.bos_id, self.eos_id = pad_id, bos_id, eos_id

    def __call__(self, items: list[tuple[Tensor, Tensor]]) -> Batch:
        feats = [f for f, _ in items]
        ys = [y for _, y in items]
        bos = torch.tensor([self.bos_id])
        eos = torch.tensor([self.eos_id])
        return Batch(
            feats=pad_sequence(feats, batch_first=True),
            feat_lens=torch.tensor([f.shape[0] for f in feats]),
            tokens_in=pad_sequence([torch.cat([bos, y]) for y in ys], batch_first=True, padding_value=self.pad_id),
            targets=pad_sequence([torch.cat([y, eos]) for y in ys], batch_first=True, padding_value=self.pad_id),
            target_lens=torch.tensor([y.numel() + 1 for y in ys]),
        )
