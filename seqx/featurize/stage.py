"""`seqx featurize`: features for every split into the store, CMVN from train, cached.

Workers (processes from seqx.workers' fork server, one torch thread each) read and featurize; the parent
writes the store in manifest order, so the output does not depend on
scheduling. A file that cannot be read is skipped and reported; the split goes on.
With one worker everything runs in this process: no pool to start, no frames
to pickle across a pipe.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import torch

from seqx.data.manifest import Utterance, read_manifest
from seqx.data.stage import manifests_exist, run_data_stage
from seqx.data.synth import SPLITS
from seqx.errors import AudioError
from seqx.faults import fault_point
from seqx.featurize.audio import load_audio
from seqx.featurize.cmvn import CmvnAccumulator
from seqx.featurize.features import FeatureExtractor
from seqx.featurize.store import FeatureStoreWriter, check_feats, to_float16
from seqx.lock import stage_lock
from seqx.recipe import FeatureSettings, Recipe
from seqx.report import Collect, Reporter
from seqx.stage import STAMP_NAME, atomic_write_text, fingerprint, is_fresh, mark_done, signature_in
from seqx.tokenize.text import NORMALIZATION, normalize_text
from seqx.workers import worker_pool

STAGE_VERSION = 2  # bump when the store's content changes for the same settings
SUMMARY = "summary.json"
CHUNK = 16  # utterances per worker round trip: enough to hide the pipe, small enough for a smooth bar

_extractor: FeatureExtractor | None = None
_sample_rate = 16000

# frames (T, F) float16, one array per view (features.embed_views; one for valid/test), audio seconds, problem
Result = tuple[list[np.ndarray] | None, float, str | None]


def view_dir(split: str, k: int) -> str:
    """The store of training view k > 0 (features.embed_views), beside the split's own (view 0)."""
    return f"{split}.view{k}"


def store_names(settings: FeatureSettings) -> list[str]:
    """Every store the featurize stage writes: the splits, then train's extra views."""
    return list(SPLITS) + [view_dir("train", k) for k in range(1, settings.views)]


@dataclass
class SplitStats:
    utterances: int = 0
    frames: int = 0
    audio_seconds: float = 0.0
    seconds: float = 0.0  # wall time for the split
    skipped: int = 0

    @property
    def xrt(self) -> float:
        """Times faster than real time: audio seconds featurized per wall second."""
        return self.audio_seconds / self.seconds if self.seconds else 0.0


@dataclass
class FeaturizeReport:
    out_dir: str
    fresh: bool  # True: nothing to do, the store was already up to date
    n_feats: int = 0
    splits: dict[str, SplitStats] = field(default_factory=dict)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (audio path, problem)


def _init_worker(settings: FeatureSettings, sample_rate: int) -> None:
    global _extractor, _sample_rate
    torch.set_num_threads(1)  # processes are the parallelism; threads inside them would fight
    _extractor, _sample_rate = FeatureExtractor(settings, sample_rate), sample_rate


def _featurize_one(item: tuple[str, int]) -> Result:
    """(audio path, views) -> the views' frames: extra views only for the train split."""
    assert _extractor is not None
    path, views = item
    try:
        wave = load_audio(path, _sample_rate)
    except AudioError as err:
        return None, 0.0, err.problem
    try:
        frames = [v.numpy() for v in _extractor.views(wave, views)]
    except RuntimeError as err:  # one odd file must not take the whole split down
        return None, 0.0, f"feature extraction failed ({str(err).splitlines()[0]})"
    if frames[0].shape[0] == 0:
        return None, 0.0, "too short for one feature frame"
    # float16 here, as the store keeps it: half the bytes through the pipe, no conversion in the parent
    return [to_float16(f) for f in frames], wave.numel() / _sample_rate, None


def featurize_stage_key(recipe: Recipe, utts: dict[str, list[Utterance]]) -> str:
    """Settings that shape the store, plus every manifest and audio file by size and mtime.

    Workers and SpecAugment do not change what is stored, so they are left out; the
    text normalization does (the index holds normalized transcripts), but not the rest of
    the tokenizer: a new vocabulary size must not featurize the corpus again. Nor does how the
    speech embedding is run (over the whole utterance, or window by window without the `onnx`
    package): both give the same numbers to the bit (tests/test_featurize_embedding.py; the
    3,712 files of the cpu-profile corpus made a byte-identical store), so a store made either
    way stays valid. A change that alters the numbers bumps STAGE_VERSION.
    """
    features = recipe.features.model_dump(exclude={"workers", "specaugment", "spec"})
    if recipe.features.views == 1:
        del features["embed_views"]  # added later, or ignored by this kind: a store made before keeps its key
    normalization = recipe.tokenizer.model_dump(include=set(NORMALIZATION))
    manifests = [signature_in(recipe.data_dir / f"{s}.jsonl", recipe.root) for s in SPLITS]
    audio = [signature_in(u.audio, recipe.root) for split in SPLITS for u in utts[split]]
    return fingerprint(STAGE_VERSION, features, recipe.data.sample_rate, normalization, manifests, audio)


def run_featurize_stage(recipe: Recipe, reporter: Reporter | None = None, force: bool = False) -> FeaturizeReport:
    """Featurize train/valid/test into feats/SPLIT/, CMVN into feats/cmvn.json; no work when up to date."""
    reporter = reporter or Collect()
    with stage_lock(recipe.root, reporter):  # one run at a time per experiment folder
        return _run_featurize_stage(recipe, reporter, force)


def _run_featurize_stage(recipe: Recipe, reporter: Reporter, force: bool) -> FeaturizeReport:
    if not manifests_exist(recipe):
        run_data_stage(recipe, reporter)
    out_dir = recipe.feats_dir
    utts = {split: read_manifest(recipe.data_dir / f"{split}.jsonl") for split in SPLITS}
    key = featurize_stage_key(recipe, utts)
    if not force and is_fresh(out_dir, key) and (out_dir / SUMMARY).is_file():
        problem = check_feats(out_dir, store_names(recipe.features))
        if problem is None:
            return _load_summary(out_dir)
        reporter.warn(f"{problem}; featurizing again")
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / STAMP_NAME).unlink(missing_ok=True)  # an interrupted rerun must never look finished
    report = FeaturizeReport(str(out_dir), False, recipe.features.n_feats)
    workers = recipe.features.workers or os.cpu_count() or 1
    with _Featurizer(recipe, workers) as featurize_all:
        for split in SPLITS:
            _featurize_split(recipe, split, utts[split], featurize_all, report, reporter)
    _save_summary(out_dir, report)
    mark_done(out_dir, key, skipped=len(report.skipped))
    return report


def _featurize_split(
    recipe: Recipe,
    split: str,
    utts: list[Utterance],
    featurize_all: Callable[[list[tuple[str, int]]], Iterator[Result]],
    report: FeaturizeReport,
    reporter: Reporter,
) -> None:
    views = recipe.features.views if split == "train" else 1
    writers = [FeatureStoreWriter(recipe.feats_dir / (view_dir(split, k) if k else split), recipe.features.n_feats,
                                  recipe.features.shard_mb) for k in range(views)]  # fmt: skip
    writer = writers[0]
    # about what the split will take, for the line a full disk gives (float16 frames at the frame rate)
    frames = sum(u.duration for u in utts) * 1000 / recipe.features.frame_ms
    writer.expected_bytes = int(frames * recipe.features.n_feats * 2)
    cmvn = CmvnAccumulator(recipe.features.n_feats) if split == "train" else None
    stats = report.splits.setdefault(split, SplitStats())
    task = reporter.task(f"featurize {split}", total=len(utts), unit="utt")
    start = time.perf_counter()
    for utt, (found, seconds, problem) in zip(utts, featurize_all([(u.audio, views) for u in utts])):
        if found is None:
            reason = problem or "unknown problem"
            report.skipped.append((utt.audio, reason))
            stats.skipped += 1
            reporter.warn(f"{utt.audio}: {reason}")
        else:
            frames, text = found[0], normalize_text(utt.text, recipe.tokenizer)
            stored = writer.add(utt.id, frames, text)
            for extra, view in zip(writers[1:], found[1:]):
                extra.add(utt.id, view, text)
            fault_point("featurize")
            if cmvn is not None:
                cmvn.add(stored)  # statistics of what training will read back (float16), not of float32
            stats.utterances += 1
            stats.frames += frames.shape[0]
            stats.audio_seconds += seconds
        stats.seconds = time.perf_counter() - start
        task.advance(1, xrt=f"{stats.xrt:.0f}x")
    task.close()
    for each in writers:
        each.close()
    if cmvn is not None:
        cmvn.result().save(recipe.feats_dir / "cmvn.json")


class _Featurizer:
    """Context manager giving `featurize_all(paths) -> iterator of Result`, in order."""

    def __init__(self, recipe: Recipe, workers: int) -> None:
        self.args = (recipe.features, recipe.data.sample_rate)
        self.workers = workers
        self.pool = None
        self.threads = torch.get_num_threads()

    def __enter__(self) -> Callable[[list[tuple[str, int]]], Iterator[Result]]:
        if self.workers <= 1:
            _init_worker(*self.args)  # one thread here too: tiny FFTs lose time to thread hand-offs
            return lambda items: (_featurize_one(item) for item in items)
        # not forked from here: this process may already run onnxruntime or OpenMP threads (seqx.workers)
        self.pool = worker_pool(self.workers, initializer=_init_worker, initargs=self.args)
        return lambda items: self.pool.imap(_featurize_one, items, chunksize=CHUNK)

    def __exit__(self, *exc: object) -> None:
        torch.set_num_threads(self.threads)  # leave the caller's setting as it was
        if self.pool is None:
            return
        if exc[0] is not None:
            self.pool.terminate()  # an error or Ctrl-C: do not wait for the queued files
        else:
            self.pool.close()
        self.pool.join()


def _save_summary(out_dir: Path, report: FeaturizeReport) -> None:
    raw = asdict(report)
    atomic_write_text(out_dir / SUMMARY, json.dumps(raw, indent=1))


def _load_summary(out_dir: Path) -> FeaturizeReport:
    raw = json.loads((out_dir / SUMMARY).read_text())
    splits = {s: SplitStats(**v) for s, v in raw["splits"].items()}
    skipped = [tuple(x) for x in raw["skipped"]]
    return FeaturizeReport(str(out_dir), True, raw["n_feats"], splits, skipped)  # type: ignore[arg-type]
