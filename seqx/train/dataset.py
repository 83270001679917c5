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
    """`slot_labels`: per utterance the intent/slot heads' classes (seqx.decode.slot_rescore
    HeadLayout.labels; -100 where the text has no parse), or None when the model has no heads.
    `views`: more stores of the same utterances seen differently (features.embed_views); each
    item is drawn from `store` or one of them at random (torch's generator: seeded, and per
    DataLoader worker), so an epoch is as long as before and sees a new mix."""

    def __init__(
        self, store: FeatureStore, tokenizer: Tokenizer, cmvn: Cmvn, slot_labels: list[list[int]] | None = None,
        views: list[FeatureStore] = (),
    ) -> None:  # fmt: skip
        self.store, self.cmvn = store, cmvn
        self.stores = [store, *views]
        for view in views:
            if view.ids != store.ids:
                raise ValueError(f"{view.folder}: not the utterances of {store.folder}")
        self.tokens = [tokenizer.encode(text) for text in store.texts]  # once, not every epoch
        self.slot_labels = slot_labels
        if slot_labels is not None and len(slot_labels) != len(store):
            raise ValueError(f"{len(slot_labels)} slot labels for {len(store)} utterances")

    def __len__(self) -> int:
        return len(self.store)

    def __getitem__(self, i: int) -> tuple[Tensor, Tensor, Tensor]:
        # no draw without views: a run without them consumes the random stream exactly as before
        store = self.stores[int(torch.randint(len(self.stores), ()))] if len(self.stores) > 1 else self.store
        feats = self.cmvn(torch.from_numpy(store[i].astype("float32")))  # (T, F)
        labels = self.slot_labels[i] if self.slot_labels is not None else []
        return feats, torch.tensor(self.tokens[i], dtype=torch.long), torch.tensor(labels, dtype=torch.long)


@dataclass
class Batch:
    feats: Tensor  # (B, T, F) float32, CMVN-normalized, zero-padded
    feat_lens: Tensor  # (B,)
    tokens_in: Tensor  # (B, U) [bos] + y, pad-padded
    targets: Tensor  # (B, U) y + [eos], pad-padded
    target_lens: Tensor  # (B,) len(y) + 1
    slot_labels: Tensor  # (B, H) intent/slot heads' classes, -100 = no parse; (B, 0) without heads

    def _tensors(self) -> tuple[Tensor, ...]:
        return (self.feats, self.feat_lens, self.tokens_in, self.targets, self.target_lens, self.slot_labels)

    def pin_memory(self) -> Batch:
        """Called by DataLoader(pin_memory=True): page-locked, so `.to(cuda, non_blocking=True)` overlaps."""
        return Batch(*(t.pin_memory() for t in self._tensors()))

    def to(self, device: torch.device) -> Batch:
        return Batch(*(t.to(device, non_blocking=True) for t in self._tensors()))

    @property
    def size(self) -> int:
        return self.feats.shape[0]


class Collate:
    """A picklable collate function (DataLoader workers need one)."""

    def __init__(self, pad_id: int, bos_id: int, eos_id: int) -> None:
        self.pad_id, self.bos_id, self.eos_id = pad_id, bos_id, eos_id

    def __call__(self, items: list[tuple[Tensor, Tensor, Tensor]]) -> Batch:
        feats = [item[0] for item in items]
        ys = [item[1] for item in items]
        bos = torch.tensor([self.bos_id])
        eos = torch.tensor([self.eos_id])
        return Batch(
            feats=pad_sequence(feats, batch_first=True),
            feat_lens=torch.tensor([f.shape[0] for f in feats]),
            tokens_in=pad_sequence([torch.cat([bos, y]) for y in ys], batch_first=True, padding_value=self.pad_id),
            targets=pad_sequence([torch.cat([y, eos]) for y in ys], batch_first=True, padding_value=self.pad_id),
            target_lens=torch.tensor([y.numel() + 1 for y in ys]),
            slot_labels=torch.stack([item[2] for item in items]),
        )
