"""Batches of similar length, capped by padded frames, sharded by rank, resumable mid-epoch.

Padding is wasted compute, so utterances are sorted by length inside large
shuffled pools and cut into batches whose padded size (longest x count) stays
under `max_frames`; the batch order is then shuffled. Everything is a function
of (seed, epoch), so every rank computes the same batch list and takes its own
slice, and a resumed run can skip exactly the batches already seen.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

POOL_BATCHES = 50  # sort within pools of about this many batches: local length order, global randomness


class LengthBucketSampler:
    """Yields lists of utterance indices (a `batch_sampler` for DataLoader), this rank's share.

    >>> s = LengthBucketSampler(np.array([5, 9, 3, 7, 4]), max_frames=10, shuffle=False)
    >>> list(s)
    [[2, 4], [0], [3], [1]]
    """

    def __init__(
        self,
        lengths: np.ndarray,
        max_frames: int,
        shuffle: bool = True,
        seed: int = 0,
        rank: int = 0,
        world_size: int = 1,
    ) -> None:
        self.lengths = np.asarray(lengths, dtype=np.int64)
        self.max_frames = max_frames
        self.shuffle, self.seed = shuffle, seed
        self.rank, self.world_size = rank, world_size
        self.epoch = 0
        self.position = 0  # batches of this epoch already handed out (on this rank)

    def batches(self, epoch: int) -> list[list[int]]:
        """All ranks' batches for `epoch` (same on every rank), before sharding."""
        n = len(self.lengths)
        rng = np.random.default_rng([self.seed, epoch])
        order = rng.permutation(n) if self.shuffle else np.arange(n)
        mean = max(int(self.lengths.mean()) if n else 1, 1)
        pool = max(1, POOL_BATCHES * max(1, self.max_frames // mean))
        batches: list[list[int]] = []
        for start in range(0, n, pool):
            chunk = order[start : start + pool]
            chunk = chunk[np.argsort(self.lengths[chunk], kind="stable")]
            batch: list[int] = []
            longest = 0
            for index in chunk.tolist():
                longest_if_added = max(longest, int(self.lengths[index]))
                if batch and longest_if_added * (len(batch) + 1) > self.max_frames:
                    batches.append(batch)
                    batch, longest_if_added = [], int(self.lengths[index])
                batch.append(index)
                longest = longest_if_added
            if batch:
                batches.append(batch)
        if self.shuffle:
            batches = [batches[i] for i in rng.permutation(len(batches))]
        return batches

    def _mine(self, epoch: int) -> list[list[int]]:
        batches = self.batches(epoch)
        # Every rank must get the same number of batches, or DDP's all-reduce waits forever:
        # the last len % world_size batches of the epoch are left out (a different few each epoch).
        usable = len(batches) - len(batches) % self.world_size
        return batches[:usable][self.rank :: self.world_size]

    def set_epoch(self, epoch: int) -> None:
        if epoch != self.epoch:
            self.epoch, self.position = epoch, 0

    def __iter__(self) -> Iterator[list[int]]:
        mine = self._mine(self.epoch)
        while self.position < len(mine):
            batch = mine[self.position]
            self.position += 1
            yield batch

    def __len__(self) -> int:
        return len(self._mine(self.epoch))

    def state_dict(self) -> dict[str, int]:
        """Where this rank stands. A DataLoader reads batches ahead, so the training loop
        overwrites `position` with the batches it actually consumed before saving."""
        return {"epoch": self.epoch, "position": self.position, "seed": self.seed, "world_size": self.world_size}

    def load_state_dict(self, state: dict[str, int]) -> None:
        self.epoch, self.position = int(state["epoch"]), int(state["position"])
        old_world = int(state.get("world_size", self.world_size))
        if old_world != self.world_size:  # resumed on another number of devices: keep the share of the epoch done
            self.position = self.position * old_world // self.world_size
