"""`seqx featurize`: features for every split into the store, CMVN from train, cached.

Workers (processes, one torch thread each) read and featurize; the parent writes
the store in manifest order, so the output does not depend on scheduling. A file
that cannot be read is skipped and reported; the split goes on.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from multiprocessing import get_context

import numpy as np
import torch

from seqx.data.manifest import read_manifest
from seqx.data.stage import manifests_exist, run_data_stage
from seqx.data.synth import SPLITS
from seqx.errors import AudioError
from seqx.featurize.audio import load_audio
from seqx.featurize.cmvn import CmvnAccumulator
from seqx.featurize.features import FeatureExtractor
from seqx.featurize.store import FeatureStoreWriter
from seqx.recipe import FeatureSettings, Recipe
from seqx.report import Collect, Reporter
from seqx.stage import fingerprint, is_fresh, mark_done

_extractor: FeatureExtractor | None = None
_sample_rate = 16000


@dataclass
class SplitStats:
    utterances: int = 0
    frames: int = 0
    audio_seconds: float = 0.0
    seconds: float = 0.0

    @property
    def xrt(self) -> float:
        return self.audio_seconds / self.seconds if self.seconds else 0.0


@dataclass
class FeaturizeReport:
    out_dir: str
    fresh: bool
    splits: dict[str, SplitStats] = field(default_factory=dict)
    skipped: list[tuple[str, str]] = field(default_factory=list)


def _init_worker(settings: FeatureSettings, sample_rate: int) -> None:
    global _extractor, _sample_rate
    torch.set_num_threads(1)  # processes are the parallelism; threads inside them would fight
    _extractor, _sample_rate = FeatureExtractor(settings, sample_rate), sample_rate


def _featurize_one(path: str) -> tuple[np.ndarray | None, float, str | None]:
    assert _extractor is not None
    try:
        wave = load_audio(path, _sample_rate)
    except AudioError as err:
        return None, 0.0, err.problem
    return _extractor(wave).numpy(), wave.numel() / _sample_rate, None


def featurize_stage_key(recipe: Recipe) -> str:
    manifests = [recipe.data_dir / f"{s}.jsonl" for s in SPLITS]
    return fingerprint(recipe.features.model_dump(exclude={"workers", "specaugment", "spec"}), recipe.data.sample_rate, manifests)


def run_featurize_stage(recipe: Recipe, reporter: Reporter | None = None, force: bool = False) -> FeaturizeReport:
    reporter = reporter or Collect()
    if not manifests_exist(recipe):
        run_data_stage(recipe, reporter)
    out_dir = recipe.feats_dir
    key = featurize_stage_key(recipe)
    if not force and is_fresh(out_dir, key):
        return FeaturizeReport(str(out_dir), True)
    report = FeaturizeReport(str(out_dir), False)
    workers = recipe.features.workers or os.cpu_count() or 1
    ctx = get_context("fork")
    with ctx.Pool(workers, initializer=_init_worker, initargs=(recipe.features, recipe.data.sample_rate)) as pool:
        for split in SPLITS:
            utts = read_manifest(recipe.data_dir / f"{split}.jsonl")
            writer = FeatureStoreWriter(out_dir / split, recipe.features.n_feats, recipe.features.shard_mb)
            cmvn = CmvnAccumulator(recipe.features.n_feats) if split == "train" else None
            stats = report.splits.setdefault(split, SplitStats())
            task = reporter.task(f"featurize {split}", total=len(utts), unit="utt")
            start = time.perf_counter()
            for utt, (frames, seconds, problem) in zip(utts, pool.imap(_featurize_one, [u.audio for u in utts], chunksize=16)):
                if problem or frames is None or frames.shape[0] == 0:
                    reason = problem or "too short for one feature frame"
                    report.skipped.append((utt.audio, reason))
                    reporter.warn(f"{utt.audio}: {reason}")
                else:
                    writer.add(utt.id, frames, utt.text)
                    if cmvn is not None:
                        cmvn.add(frames)
                    stats.utterances += 1
                    stats.frames += frames.shape[0]
                    stats.audio_seconds += seconds
                stats.seconds = time.perf_counter() - start
                task.advance(1, xrt=f"{stats.xrt:.0f}x")
            task.close()
            writer.close()
            if cmvn is not None:
                cmvn.result().save(out_dir / "cmvn.json")
    mark_done(out_dir, key, skipped=len(report.skipped))
    return report
