"""The feature store: a split's frames in float16 memory-mapped shards, plus an index.

Layout of feats/SPLIT/:
    shard-00000.f16 ...   raw float16 frames, (frames, n_feats) row-major, appended utterance after utterance
    index.json            {"n_feats", "shards": [frames per shard], "ids", "texts", "shard", "offset", "length"}

One file per shard instead of one file per utterance: a training epoch reads a
few large files, and any utterance is one slice of a memory map (no loading the
split). A shard is closed once it passes `shard_mb`.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from seqx.errors import SeqxError
from seqx.featurize.cmvn import Cmvn
from seqx.stage import atomic_write_text, disk_full, is_disk_full

INDEX = "index.json"
PER_UTTERANCE = ("ids", "texts", "shard", "offset", "length")  # the index's lists, one entry per utterance
F16_MAX = float(np.finfo(np.float16).max)  # 65504


def _shard_name(i: int) -> str:
    return f"shard-{i:05d}.f16"


def to_float16(frames: np.ndarray) -> np.ndarray:
    """Frames as the store keeps them: C-contiguous float16, clipped so a wild value is large, never inf."""
    if frames.dtype == np.float16 and frames.flags.c_contiguous:
        return frames
    return np.ascontiguousarray(np.clip(frames, -F16_MAX, F16_MAX), dtype=np.float16)


class FeatureStoreWriter:
    def __init__(self, folder: str | Path, n_feats: int, shard_mb: int = 1024) -> None:
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        for old in self.folder.glob("shard-*.f16"):
            old.unlink()
        self.n_feats = n_feats
        self.shard_frames = max(1, shard_mb * 2**20 // (2 * n_feats))
        self.ids: list[str] = []
        self.texts: list[str] = []
        self.shard: list[int] = []
        self.offset: list[int] = []
        self.length: list[int] = []
        self.shards: list[int] = []
        self._handle = None
        self.expected_bytes: int | None = None  # the split's size, when known, for a full disk's message

    def add(self, utt_id: str, frames: np.ndarray, text: str) -> np.ndarray:
        """Append one utterance; returns the float16 frames exactly as stored."""
        if frames.ndim != 2 or frames.shape[1] != self.n_feats:
            raise SeqxError(f"{utt_id}: frames of shape {frames.shape}, expected (T, {self.n_feats})")
        if self._handle is None or self.shards[-1] >= self.shard_frames:
            self._open_next()
        self.ids.append(utt_id)
        self.texts.append(text)
        self.shard.append(len(self.shards) - 1)
        self.offset.append(self.shards[-1])
        self.length.append(frames.shape[0])
        stored = to_float16(frames)
        try:
            self._handle.write(stored.tobytes())
        except OSError as err:
            raise self._full(err) from None
        self.shards[-1] += frames.shape[0]
        return stored

    def _full(self, err: OSError) -> Exception:
        """A full disk as one line; the shards stay unindexed and unstamped, so nothing reads them."""
        if not is_disk_full(err):
            return err
        shard = self.folder / _shard_name(len(self.shards) - 1)
        return disk_full(shard, self.expected_bytes, sum(self.shards) * 2 * self.n_feats)

    def _open_next(self) -> None:
        if self._handle is not None:
            self._close_handle()
        self._handle = (self.folder / _shard_name(len(self.shards))).open("wb")
        self.shards.append(0)

    def _close_handle(self) -> None:
        try:
            self._handle.close()  # a buffered write that did not fit fails here
        except OSError as err:
            raise self._full(err) from None

    def close(self) -> None:
        if self._handle is not None:
            self._close_handle()
        index = {
            "n_feats": self.n_feats,
            "shards": self.shards,
            "ids": self.ids,
            "texts": self.texts,
            "shard": self.shard,
            "offset": self.offset,
            "length": self.length,
        }
        atomic_write_text(self.folder / INDEX, json.dumps(index))


class FeatureStore:
    """Read-only, lazy: store[i] is a (T, F) float16 view into a memory map."""

    def __init__(self, folder: str | Path) -> None:
        self.folder = Path(folder)
        path = self.folder / INDEX
        if not path.is_file():
            raise SeqxError(f"{path}: no feature store here; run `seqx featurize` first")
        try:
            index = json.loads(path.read_text())
            lengths = [len(index[k]) for k in PER_UTTERANCE]
            if len(set(lengths)) != 1 or not isinstance(index["n_feats"], int):
                raise ValueError("its lists disagree in length")
        except (ValueError, KeyError, TypeError) as err:
            raise SeqxError(f"{path}: corrupt feature index ({err}); run `seqx featurize --force`") from None
        self.n_feats: int = index["n_feats"]
        self.ids: list[str] = index["ids"]
        self.texts: list[str] = index["texts"]
        self._shard = np.asarray(index["shard"], dtype=np.int64)
        self._offset = np.asarray(index["offset"], dtype=np.int64)
        self.lengths = np.asarray(index["length"], dtype=np.int64)
        self._shard_frames: list[int] = index["shards"]
        self._maps: dict[int, np.memmap] = {}
        self._positions = {utt_id: i for i, utt_id in enumerate(self.ids)}

    def __len__(self) -> int:
        return len(self.ids)

    def verify(self) -> None:
        """Check every shard's size against the index (a truncated or missing shard raises, naming it).

        Cheap (one stat per shard), so a cached store is checked each time a stage relies on it.
        """
        for shard, frames in enumerate(self._shard_frames):
            path = self.folder / _shard_name(shard)
            want = frames * self.n_feats * 2
            size = path.stat().st_size if path.is_file() else None
            if size != want:
                got = "missing" if size is None else f"{size} bytes"
                raise SeqxError(f"{path}: feature shard is {got}, its index says {want} bytes (truncated or corrupt)")
        ends = self._offset + self.lengths
        if len(self.ids) and (ends > np.asarray(self._shard_frames)[self._shard]).any():
            raise SeqxError(f"{self.folder / INDEX}: points past the end of its shards (corrupt)")

    def _map(self, shard: int) -> np.ndarray:
        if shard not in self._maps:  # opened on first use, so forked DataLoader workers map their own
            shape = (self._shard_frames[shard], self.n_feats)
            self._maps[shard] = np.memmap(self.folder / _shard_name(shard), np.float16, "r", shape=shape)
        return self._maps[shard]

    def __getitem__(self, i: int) -> np.ndarray:
        start = self._offset[i]
        return self._map(int(self._shard[i]))[start : start + self.lengths[i]]

    def index_of(self, utt_id: str) -> int:
        return self._positions[utt_id]

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state["_maps"] = {}
        return state


def check_feats(feats_dir: Path, splits: tuple[str, ...] | list[str]) -> str | None:
    """The one-line problem of a split's store or cmvn.json that was damaged since it was written, else None."""
    try:
        for split in splits:
            FeatureStore(feats_dir / split).verify()
        Cmvn.load(feats_dir / "cmvn.json")
    except SeqxError as err:
        return str(err)
    return None
