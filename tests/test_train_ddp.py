"""DDP on two CPU processes (gloo), launched by torchrun exactly as a user would: `torchrun -m seqx train`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import yaml
from test_train_corpus import PHRASES, speak, tiny_recipe

from seqx.decode.bundle import load_bundle
from seqx.featurize.store import FeatureStore
from seqx.train.batching import LengthBucketSampler
from seqx.train.checkpoint import load_checkpoint


def test_two_gloo_ranks_train_on_disjoint_shards_and_only_rank_0_writes(tmp_path: Path) -> None:
    recipe = tiny_recipe(tmp_path, speak(tmp_path / "wav", PHRASES), epochs=2, max_frames=300)
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump(recipe.model_dump(mode="json")))
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    run = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2",
         "-m", "seqx", "train", str(path), "--device", "cpu", "--json"],
        capture_output=True, text=True, timeout=300, env=env, cwd=Path(__file__).parents[1],
    )
    assert run.returncode == 0, run.stderr[-3000:]
    report = json.loads(run.stdout[run.stdout.index("{"):])  # one report: rank 1 prints nothing
    assert report["world_size"] == 2 and not report["fresh"]

    # each rank took its own half of every epoch's batches (same count on both, so no hang)
    lengths = FeatureStore(recipe.feats_dir / "train").lengths
    per_rank = [LengthBucketSampler(lengths, 300, True, 0, rank, 2) for rank in (0, 1)]
    expected_steps = 0
    for epoch in range(2):
        batches = []
        for sampler in per_rank:
            sampler.set_epoch(epoch)
            batches.append(list(sampler))
        assert batches[0] and len(batches[0]) == len(batches[1])
        assert not {i for b in batches[0] for i in b} & {i for b in batches[1] for i in b}
        expected_steps += len(batches[0])
    assert report["steps"] == expected_steps
    assert load_checkpoint(recipe.checkpoint_dir / "last.pt")["state"]["step"] == expected_steps

    # only rank 0 wrote: one TensorBoard file, each log step once, no stray temporary files
    assert len(list(recipe.tb_dir.glob("events.*"))) == 1
    steps = [json.loads(x)["step"] for x in (recipe.root / "train_log.jsonl").read_text().splitlines() if '"loss"' in x]
    assert steps == sorted(set(steps))
    assert sorted(p.name for p in recipe.checkpoint_dir.iterdir()) == ["epoch-001.pt", "epoch-002.pt", "last.pt"]

    bundle = load_bundle(recipe.bundle_dir)
    assert bundle.dims.d_model == 48 and not bundle.model.training
