"""The feature store gives back exactly the float16 frames written, across shards, lazily; SpecAugment and CMVN."""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np
import pytest
import torch

from seqx.featurize.cmvn import Cmvn, CmvnAccumulator
from seqx.featurize.specaugment import SpecAugment
from seqx.featurize.store import FeatureStore, FeatureStoreWriter
from seqx.recipe import SpecAugmentSettings


def test_store_returns_exactly_what_was_written_across_shards(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    n_feats = 80
    # shard_mb=1 holds 2**20 / (2 bytes * 80) = 6553 frames, so 10 utterances of 1000-3000 frames need several shards
    lengths = rng.integers(1000, 3000, 10)
    frames = [rng.normal(0, 5, (n, n_feats)).astype(np.float32) for n in lengths.tolist()]
    utts = [(f"u{i}", f, f"text {i}") for i, f in enumerate(frames)]
    writer = FeatureStoreWriter(tmp_path, n_feats, shard_mb=1)
    for utt_id, frames, text in utts:
        writer.add(utt_id, frames, text)
    writer.close()

    store = FeatureStore(tmp_path)
    assert len(list(tmp_path.glob("shard-*.f16"))) >= 3
    assert len(store) == 10 and store.n_feats == n_feats
    assert store.ids == [u[0] for u in utts] and store.texts == [u[2] for u in utts]
    assert store.lengths.dtype == np.int64 and list(store.lengths) == [len(u[1]) for u in utts]
    for i in reversed(range(10)):  # random access, any order
        got = store[i]
        assert got.dtype == np.float16 and isinstance(got.base, np.memmap)  # a view, not a loaded copy
        np.testing.assert_array_equal(got, utts[i][1].astype(np.float16))
    assert store.index_of("u7") == 7
    # a pickled store (a DataLoader worker's copy) maps its own files and reads the same
    clone = pickle.loads(pickle.dumps(store))
    np.testing.assert_array_equal(clone[3], store[3])


def test_rewriting_a_store_drops_old_shards(tmp_path: Path) -> None:
    big = FeatureStoreWriter(tmp_path, 4, shard_mb=1)
    for i in range(3):
        big.add(f"a{i}", np.ones((200_000, 4), np.float32), "")
    big.close()
    small = FeatureStoreWriter(tmp_path, 4, shard_mb=1)
    small.add("b", np.zeros((3, 4), np.float32), "b")
    small.close()
    assert [p.name for p in tmp_path.glob("shard-*")] == ["shard-00000.f16"]
    assert FeatureStore(tmp_path).ids == ["b"]


def test_cmvn_round_trip_and_normalizes() -> None:
    rng = np.random.default_rng(1)
    acc = CmvnAccumulator(3)
    chunks = [rng.normal([1, -2, 30], [2, 0.5, 10], (n, 3)) for n in (50, 300, 7)]
    for chunk in chunks:
        acc.add(chunk)
    cmvn = acc.result()
    data = torch.tensor(np.concatenate(chunks), dtype=torch.float32)
    normed = cmvn(data)
    torch.testing.assert_close(normed.mean(0), torch.zeros(3), atol=1e-5, rtol=0)
    torch.testing.assert_close(normed.std(0, unbiased=False), torch.ones(3), atol=1e-4, rtol=0)
    again = Cmvn.from_dict(cmvn.to_dict())
    torch.testing.assert_close(again(data), normed)


def _batch() -> tuple[torch.Tensor, torch.Tensor]:
    torch.manual_seed(0)
    lengths = torch.tensor([100, 40, 7])
    feats = torch.randn(3, 100, 20) + 5.0  # +5: no real value is 0, so a 0 can only be a mask
    for b, n in enumerate(lengths):
        feats[b, n:] = 0.0
    return feats, lengths


def test_specaugment_masks_only_in_train_mode() -> None:
    feats, lengths = _batch()
    aug = SpecAugment(SpecAugmentSettings(freq_masks=2, freq_mask_width=8, time_masks=2, time_mask_width=20))
    aug.eval()
    assert torch.equal(aug(feats, lengths), feats)
    aug.train()
    masked = [aug(feats, lengths) for _ in range(20)]
    assert any(not torch.equal(m, feats) for m in masked)
    assert all(m.shape == feats.shape and m.device == feats.device for m in masked)


@pytest.mark.parametrize("ratio", [0.2, 0.5])
def test_specaugment_time_masks_stay_inside_each_utterance(ratio: float) -> None:
    feats, lengths = _batch()
    settings = SpecAugmentSettings(freq_masks=0, time_masks=1, time_mask_width=30, time_mask_ratio=ratio)
    aug = SpecAugment(settings).train()
    for _ in range(50):
        out = aug(feats, lengths)
        for b, n in enumerate(lengths.tolist()):
            masked = (out[b, :n] == 0).all(dim=1)  # whole frames zeroed inside the real length
            assert int(masked.sum()) <= min(30, int(n * ratio))  # never more than the ratio of the utterance
            assert torch.equal(out[b, n:], feats[b, n:])  # padding untouched by time masks
            if masked.any():  # one mask = one contiguous run
                where = masked.nonzero().flatten()
                assert int(where[-1] - where[0]) + 1 == int(masked.sum())


def test_specaugment_frequency_masks_are_bands_of_bounded_width() -> None:
    feats, lengths = _batch()
    aug = SpecAugment(SpecAugmentSettings(freq_masks=1, freq_mask_width=8, time_masks=0)).train()
    for _ in range(50):
        out = aug(feats, lengths)
        for b in range(3):
            bins = (out[b, : lengths[b]] == 0).all(dim=0)
            assert int(bins.sum()) <= 8
