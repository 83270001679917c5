"""`seqx train`: run any missing earlier stage, then train (or resume), then write the bundle."""

from __future__ import annotations

import torch

from seqx.data.stage import run_data_stage
from seqx.errors import SeqxError
from seqx.featurize.stage import run_featurize_stage
from seqx.recipe import Recipe
from seqx.report import Collect, Reporter
from seqx.stage import STAMP_NAME, fingerprint, is_fresh, mark_done
from seqx.tokenize.stage import run_tokenize_stage
from seqx.train.distributed import cleanup, init_distributed
from seqx.train.loop import Trainer, TrainReport


def pick_device(requested: str) -> torch.device:
    if requested == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if requested.startswith("cuda") and not torch.cuda.is_available():
        raise SeqxError(f"train.device: {requested} asked for, but no CUDA device is available")
    return torch.device(requested)


def train_key(recipe: Recipe) -> str:
    """What decides the trained weights: settings and the exact inputs (device and logging excluded)."""
    train = recipe.train.model_dump(exclude={"device", "log_every", "workers", "save_every_steps"})
    # the earlier stages' stamps say exactly which features and tokenizer the weights were made from
    stamps = [(d / STAMP_NAME).read_text() if (d / STAMP_NAME).is_file() else "" for d in (recipe.feats_dir, recipe.tokenizer_dir)]
    return fingerprint(recipe.model, train, recipe.features.spec, recipe.features.specaugment, stamps)


def run_train_stage(
    recipe: Recipe, reporter: Reporter | None = None, device: str | None = None, restart: bool = False
) -> TrainReport:
    reporter = reporter or Collect()
    target = pick_device(device or recipe.train.device)
    recipe = recipe.for_device(target.type)
    dist = init_distributed(target.type)
    if dist.enabled and target.type == "cuda":
        target = torch.device("cuda", dist.local_rank)
    quiet = reporter if dist.is_main else Collect()
    try:
        if dist.is_main:  # earlier stages once, by rank 0; the others wait for them
            run_data_stage(recipe, quiet)  # cheap when up to date; redoes the corpus when its settings changed
            run_featurize_stage(recipe, quiet)
            run_tokenize_stage(recipe, quiet)
        if dist.enabled:
            torch.distributed.barrier()
        key = train_key(recipe)
        if not restart and is_fresh(recipe.bundle_dir, key):
            return TrainReport(bundle_dir=str(recipe.bundle_dir), fresh=True, device=str(target))
        report = Trainer(recipe, target, quiet, dist, key).run(restart)
        if dist.is_main:
            mark_done(recipe.bundle_dir, key)
        return report
    finally:
        cleanup(dist)
