"""bench/train_from_stores.py: training on a machine that has an experiment's features but not its audio.

The case it exists for: a lent GPU takes 64 MiB, so the demo corpus's feature stores travel and its
audio does not. `seqx train` there would featurize again (its stage keys sign every audio file), so
the script runs the same trainer on the stores as they are. Checked here for real: a tiny corpus
is synthesized and featurized, moved to another folder, its audio deleted, and trained from.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from tiny import FBANK, REPO, TEMPLATES, TINY_BASE, tiny_recipe

from seqx.data.stage import run_data_stage
from seqx.decode.bundle import load_bundle
from seqx.featurize.stage import run_featurize_stage
from seqx.tokenize.stage import run_tokenize_stage

OVERRIDES = [*TEMPLATES, *FBANK, "data.size=24", "train.epochs=2", "name=stores"]


def test_trains_from_stores_without_audio(tmp_path: Path) -> None:
    made = tiny_recipe(tmp_path / "made", OVERRIDES)
    for stage in (run_data_stage, run_featurize_stage, run_tokenize_stage):
        stage(made)
    carried = tmp_path / "carried"
    shutil.copytree(made.exp_dir, carried)  # another folder, as on the other machine
    shutil.rmtree(carried / "stores" / "data" / "audio")
    stamp = (carried / "stores" / "feats" / ".stamp.json").read_text()

    sets = [arg for item in [f"exp_dir={carried}", *TINY_BASE, *OVERRIDES] for arg in ("--set", item)]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    run = subprocess.run([sys.executable, str(REPO / "bench/train_from_stores.py"), str(REPO / "recipes/commands.yaml"),
                          "--device", "cpu", "--json", *sets], capture_output=True, text=True, env=env, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    report = json.loads(run.stdout)
    assert report["epochs"] == 2 and report["steps"] > 0 and not report["fresh"]

    recipe = tiny_recipe(carried, OVERRIDES)
    bundle = load_bundle(recipe.bundle_dir)
    assert bundle.decode.reject_margin == "auto"  # not chosen: that needs valid's audio
    assert not (carried / "stores" / "data" / "audio").exists()  # no stage ran again
    assert (carried / "stores" / "feats" / ".stamp.json").read_text() == stamp


def test_without_copies_leaves_the_corpus_they_were_added_to(tmp_path: Path) -> None:
    """One carried corpus with clipped_share gives the model without it: the copies leave every index."""
    import numpy as np

    from seqx.featurize.store import FeatureStore, FeatureStoreWriter

    sys.path.insert(0, str(REPO / "bench"))
    from train_from_stores import drop_copies

    utterances = {"a": 3, "a-clipped": 2, "a-tight": 3, "b": 4}
    for split in ("train", "valid"):
        writer = FeatureStoreWriter(tmp_path / split, n_feats=2)
        for k, (utt, frames) in enumerate(utterances.items()):
            writer.add(utt, np.full((frames, 2), k, dtype=np.float32), "" if utt.endswith("clipped") else "say")
        writer.close()
    assert drop_copies(tmp_path) == 4
    for split in ("train", "valid"):
        store = FeatureStore(tmp_path / split)
        assert store.ids == ["a", "b"] and store.texts == ["say", "say"]
        assert store[1].shape == (4, 2) and float(store[1][0, 0]) == 3.0  # b's own frames, where they were
