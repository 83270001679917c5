"""LengthBucketSampler: frame budget, each utterance once per epoch, disjoint ranks, deterministic, resumable."""

from __future__ import annotations

import numpy as np
import pytest

from seqx.train.batching import LengthBucketSampler

LENGTHS = np.random.default_rng(0).integers(20, 400, size=500)
BUDGET = 2000


def _flat(batches: list[list[int]]) -> list[int]:
    return [i for b in batches for i in b]


def test_batches_stay_within_the_padded_frame_budget() -> None:
    sampler = LengthBucketSampler(LENGTHS, BUDGET, seed=3)
    batches = list(sampler)
    assert len(batches) > 10
    for batch in batches:
        assert max(LENGTHS[batch]) * len(batch) <= BUDGET
    # bucketing by length: padding waste is small compared with random batches
    padded = sum(max(LENGTHS[b]) * len(b) for b in batches)
    assert LENGTHS.sum() / padded > 0.9


def test_every_utterance_exactly_once_per_epoch() -> None:
    sampler = LengthBucketSampler(LENGTHS, BUDGET, seed=3)
    for epoch in range(3):
        sampler.set_epoch(epoch)
        assert sorted(_flat(list(sampler))) == list(range(len(LENGTHS)))


def test_deterministic_per_seed_and_epoch() -> None:
    a, b = LengthBucketSampler(LENGTHS, BUDGET, seed=1), LengthBucketSampler(LENGTHS, BUDGET, seed=1)
    a.set_epoch(4)
    b.set_epoch(4)
    assert list(a) == list(b)
    c = LengthBucketSampler(LENGTHS, BUDGET, seed=1)
    c.set_epoch(5)
    assert list(c) != list(LengthBucketSampler(LENGTHS, BUDGET, seed=1).batches(4))
    assert LengthBucketSampler(LENGTHS, BUDGET, seed=2).batches(4) != a.batches(4)


@pytest.mark.parametrize("world_size", [2, 3])
def test_ranks_get_disjoint_batches_of_equal_count(world_size: int) -> None:
    shards = []
    for rank in range(world_size):
        sampler = LengthBucketSampler(LENGTHS, BUDGET, seed=7, rank=rank, world_size=world_size)
        sampler.set_epoch(2)
        shards.append(list(sampler))
    assert len({len(s) for s in shards}) == 1, "unequal batch counts would hang DDP"
    seen = [set(_flat(s)) for s in shards]
    for i in range(world_size):
        for j in range(i + 1, world_size):
            assert not seen[i] & seen[j]
    # only the remainder batches (fewer than world_size of them) are left out
    all_batches = LengthBucketSampler(LENGTHS, BUDGET, seed=7).batches(2)
    assert len(all_batches) - sum(len(s) for s in shards) < world_size


def test_resumes_mid_epoch_where_it_stopped() -> None:
    sampler = LengthBucketSampler(LENGTHS, BUDGET, seed=5)
    sampler.set_epoch(1)
    full = list(sampler)
    sampler = LengthBucketSampler(LENGTHS, BUDGET, seed=5)
    sampler.set_epoch(1)
    it = iter(sampler)
    head = [next(it) for _ in range(4)]
    state = sampler.state_dict()
    resumed = LengthBucketSampler(LENGTHS, BUDGET, seed=5)
    resumed.load_state_dict(state)
    assert head + list(resumed) == full
