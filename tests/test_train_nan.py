"""Non-finite input: a NaN batch is skipped and counted; too many in a row stop the run with the last checkpoint intact."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from test_train_corpus import PHRASES, one_thread, speak, tiny_recipe  # noqa: F401

from seqx.errors import SeqxError
from seqx.featurize.stage import run_featurize_stage
from seqx.report import Collect
from seqx.train.checkpoint import load_checkpoint
from seqx.train.stage import run_train_stage


def poison(store_dir: Path, index: int) -> None:
    """Overwrite one utterance's frames in the float16 store with NaN and inf: bad input on disk."""
    meta = json.loads((store_dir / "index.json").read_text())
    shard = store_dir / f"shard-{meta['shard'][index]:05d}.f16"
    frames = np.memmap(shard, np.float16, "r+", shape=(meta["shards"][meta["shard"][index]], meta["n_feats"]))
    start, length = meta["offset"][index], meta["length"][index]
    frames[start : start + length] = np.nan
    frames[start, 0] = np.inf
    frames.flush()


pytestmark = pytest.mark.usefixtures("one_thread")


def test_a_nan_batch_is_skipped_and_counted(tmp_path: Path) -> None:
    recipe = tiny_recipe(tmp_path, speak(tmp_path / "wav", PHRASES), epochs=2, max_frames=400)
    run_featurize_stage(recipe)
    poison(recipe.feats_dir / "train", 2)
    report = run_train_stage(recipe, Collect())
    assert report.skipped_batches == 2  # the poisoned utterance's batch, once per epoch
    assert report.steps > 0 and report.epochs == 2
    last = load_checkpoint(recipe.checkpoint_dir / "last.pt")
    assert all(torch.isfinite(t).all() for t in last["model"].values() if t.is_floating_point())
    assert last["state"]["nan_skipped"] == 2
    logged = [json.loads(x) for x in (recipe.root / "train_log.jsonl").read_text().splitlines()]
    assert all(np.isfinite(r["loss"]) for r in logged if "loss" in r)


class PoisonAtEpoch(Collect):
    """Poisons every training utterance when epoch `epoch` starts (the store is memory-mapped: the run sees it)."""

    def __init__(self, store_dir: Path, epoch: int) -> None:
        super().__init__()
        self.store_dir, self.epoch = store_dir, epoch

    def task(self, description: str, total: float | None, unit: str = "utt") -> Any:
        if description == f"train epoch {self.epoch}":
            n = len(json.loads((self.store_dir / "index.json").read_text())["ids"])
            for i in range(n):
                poison(self.store_dir, i)
        return super().task(description, total, unit)


def test_too_many_nans_in_a_row_stop_with_a_clear_error_and_the_checkpoint_intact(tmp_path: Path) -> None:
    recipe = tiny_recipe(tmp_path, speak(tmp_path / "wav", PHRASES), epochs=3, max_frames=400, max_nan_in_row=2)
    run_featurize_stage(recipe)
    with pytest.raises(SeqxError, match="non-finite.*max_nan_in_row=2.*last good checkpoint"):
        run_train_stage(recipe, PoisonAtEpoch(recipe.feats_dir / "train", epoch=2))
    last = load_checkpoint(recipe.checkpoint_dir / "last.pt")
    assert last["state"]["epoch"] == 1 and last["state"]["batch_in_epoch"] == 0  # saved at the end of epoch 1
    assert all(torch.isfinite(t).all() for t in last["model"].values() if t.is_floating_point())
    assert not (recipe.bundle_dir / "config.json").exists()
