"""`seqx train`: run any missing earlier stage, then train (or resume), then write the bundle.

    recipe --for_device--> data, featurize, tokenize (cached) --> Trainer.fit() --> average best --> exp/NAME/model/

Two fingerprints: the run key (everything that shapes the weights: model and
train settings, SpecAugment, the exact features and tokenizer) decides whether
a checkpoint may be resumed; the bundle key (run key + decode settings) decides
whether there is anything to do at all.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

import torch

from seqx.data.manifest import read_manifest
from seqx.data.stage import run_data_stage
from seqx.decode.bundle import check_bundle, load_bundle, save_bundle, update_config
from seqx.decode.gap_span import longest_by_words
from seqx.decode.slot_rescore import HeadLayout
from seqx.device import resolve_device
from seqx.errors import SeqxError
from seqx.featurize.cmvn import Cmvn
from seqx.featurize.stage import run_featurize_stage, view_dir
from seqx.featurize.store import FeatureStore
from seqx.grammar.load import grammar_from_file, load_grammar
from seqx.grammar.model import Grammar
from seqx.lock import stage_lock
from seqx.model.transformer import ModelDimensions, count_parameters
from seqx.recipe import Recipe
from seqx.report import Collect, Reporter
from seqx.stage import STAMP_NAME, fingerprint, is_fresh, mark_done
from seqx.tokenize.stage import run_tokenize_stage
from seqx.tokenize.tokenizer import Tokenizer
from seqx.train.dataset import UtteranceDataset
from seqx.train.distributed import DistInfo, barrier, cleanup, init_distributed, wait_for_rank0
from seqx.train.loop import LOG, Trainer, TrainReport

__all__ = ["TrainReport", "pick_device", "run_key", "run_train_stage", "train_on_stores"]


def choose_reject_thresholds(recipe: Recipe, grammar: Grammar, reporter: Reporter, device: torch.device) -> None:
    """decode.reject_margin `auto`: chosen on the valid split (commands vs out-of-grammar speech
    and noise) with the bundle just written, and stored in it. Also run again on a trained bundle
    by bench/human.py --recalibrate, when the rule that chooses changed."""
    from seqx.decode.reject import calibrate

    bundle = load_bundle(recipe.bundle_dir, device=device)
    # the thresholds are chosen for the recipe's distance slack, and the bundle keeps that rule, the
    # recipe's gap rule and its noise floor (an older bundle chosen again moves to them; calibrate
    # itself measures the usual gap either way, and hears valid over the floor it will decode with)
    bundle.decode = bundle.decode.model_copy(update={
        "reject_distance_slack": recipe.decode.reject_distance_slack,
        "gap_forgives_insertions": recipe.decode.gap_forgives_insertions,
        "floor_snr_db": recipe.decode.floor_snr_db, **gap_span_settings(recipe)})  # fmt: skip
    found = calibrate(recipe, bundle, grammar, reporter)
    chosen = {"reject_margin": found.margin}
    if recipe.decode.reject_distance == "auto":
        chosen["reject_distance"] = found.distance
    update_config(recipe.bundle_dir, decode=bundle.decode.model_copy(update=chosen), reject=found.to_json())
    reporter.info(f"train: decode.reject_margin {found.margin:.3f}, reject_distance {found.distance:.3f} "
                  f"(valid: false rejects {100 * found.false_rejects:.1f}%, "
                  f"false accepts {100 * found.false_accepts:.1f}% of {found.negatives} negatives)")


def gap_span_settings(recipe: Recipe) -> dict[str, Any]:
    """The recipe's gap_span_factor, and gap_spans measured on its training split when the recipe
    does not give them (seqx/decode/gap_span.py): what the bundle decodes with."""
    spans = recipe.decode.gap_spans
    if spans is None:
        train = recipe.data_dir / "train.jsonl"
        spans = longest_by_words((u.text, u.duration) for u in read_manifest(train)) if train.is_file() else None
    return {"gap_span_factor": recipe.decode.gap_span_factor, "gap_spans": spans or None}


def pick_device(requested: str) -> torch.device:
    return resolve_device(requested, source="train.device")


def run_key(recipe: Recipe) -> str:
    """What decides the trained weights: settings and the exact inputs (device and logging excluded)."""
    # compile changes how fast, not what is learnt (to float rounding): a run may resume with it on or off
    train = recipe.train.model_dump(exclude={"device", "log_every", "workers", "save_every_steps", "compile"})
    if not train["slot_weight"]:
        del train["slot_weight"]  # added later: runs without heads keep their key (and their checkpoints)
    if train["lr_floor"] == 0.1:
        del train["lr_floor"]  # added later: runs at the old fixed floor keep their key
    # the earlier stages' stamps say exactly which features and tokenizer the weights were made from
    stamps = [(d / STAMP_NAME).read_text() if (d / STAMP_NAME).is_file() else "" for d in (recipe.feats_dir, recipe.tokenizer_dir)]
    return fingerprint(recipe.model, train, recipe.features.spec, recipe.features.specaugment, stamps)


def run_train_stage(
    recipe: Recipe, reporter: Reporter | None = None, device: str | None = None, restart: bool = False
) -> TrainReport:
    """Train the recipe's model into exp/NAME/model/, resuming from checkpoints/last.pt when there is one.

    Under torchrun (WORLD_SIZE > 1) every rank calls this; rank 0 prepares the data, writes
    checkpoints, logs and the bundle, and returns the report; the others return one too.
    """
    reporter = reporter or Collect()
    started = time.monotonic()
    target = pick_device(device or recipe.train.device)
    recipe = recipe.for_device(target.type)
    dist = init_distributed(target.type)
    if dist.enabled and target.type == "cuda":
        target = torch.device("cuda", dist.local_rank)
    elif target.type == "cuda" and target.index is None:
        target = torch.device("cuda", torch.cuda.current_device())
    said = reporter if dist.is_main else Collect()  # other ranks stay silent
    held = ExitStack()  # the experiment lock, and deterministic algorithms when the recipe asks
    try:
        if dist.is_main:  # rank 0 holds the experiment's lock for all ranks: only it writes
            held.enter_context(stage_lock(recipe.root, said))
        if dist.is_main:  # earlier stages once, by rank 0; the others wait for them
            run_data_stage(recipe, said)  # cheap when up to date; redoes the corpus when its settings changed
            run_featurize_stage(recipe, said)
            run_tokenize_stage(recipe, said)
        wait_for_rank0(dist)
        key = run_key(recipe)
        decode = recipe.decode.model_dump(mode="json")
        if not decode["slot_weight"]:
            del decode["slot_weight"]  # added later: bundles decoded without the heads' vote stay fresh
        bundle_key = fingerprint(key, decode)
        if not restart and is_fresh(recipe.bundle_dir, bundle_key) and _bundle_intact(recipe, said):
            return TrainReport(str(recipe.bundle_dir), True, str(target), dist.world_size)
        if recipe.train.deterministic:
            held.enter_context(_deterministic_algorithms())
        report = train_on_stores(recipe, target, dist, said, key, restart)
        report.wall_seconds = time.monotonic() - started
        if dist.is_main:
            mark_done(recipe.bundle_dir, bundle_key, steps=report.steps, best_valid_wer=report.best_valid_wer)
        barrier(dist)
        return report
    finally:
        cleanup(dist)
        held.close()


@contextmanager
def _deterministic_algorithms() -> Iterator[None]:
    """torch's deterministic algorithms for one run, then the caller's setting back. Set and put back
    only when the recipe asks: `torch.use_deterministic_algorithms` imports torch._inductor's config,
    2.1 s on a 2-core AMD EPYC, which every `seqx train` paid on its way out when this ran always."""
    before = torch.are_deterministic_algorithms_enabled(), torch.is_deterministic_algorithms_warn_only_enabled()
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")  # cuBLAS needs it for determinism
    torch.use_deterministic_algorithms(True, warn_only=True)
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(before[0], warn_only=before[1])


def slot_layout(recipe: Recipe, grammar: Grammar | None, reporter: Reporter) -> HeadLayout | None:
    """The intent/slot heads' classes when `train.slot_weight` asks for heads; None otherwise, and
    (with a warning) when there is no grammar to take them from."""
    if recipe.train.slot_weight <= 0:
        return None
    if grammar is None:
        reporter.warn("train.slot_weight: the intent/slot heads need a grammar (data.source synth); training without")
        return None
    return HeadLayout.from_grammar(grammar)


def slot_labels(layout: HeadLayout, grammar: Grammar, texts: list[str], tokenizer: Tokenizer) -> list[list[int]]:
    """Each training text's classes: the grammar's parse of it as the tokenizer normalizes it
    (what decoding parses too); no parse (out-of-grammar, empty) -> ignored by the heads' loss."""
    spoken = grammar.spoken(tokenizer.normalize)
    return [layout.labels(spoken.parse(tokenizer.normalize(text))) for text in texts]


def _bundle_intact(recipe: Recipe, reporter: Reporter) -> bool:
    """A bundle whose files were damaged since it was written is made again (from the checkpoints)."""
    try:
        check_bundle(recipe.bundle_dir)
    except SeqxError as err:
        reporter.warn(f"{err}; writing the bundle again")
        return False
    return True


def train_on_stores(
    recipe: Recipe, device: torch.device, dist: DistInfo, reporter: Reporter, key: str, restart: bool,
    choose_thresholds: bool = True,
) -> TrainReport:
    """Train from the feature stores and tokenizer already on disk, and write the bundle.

    run_train_stage calls it once the earlier stages are fresh. bench/train_from_stores.py calls it
    directly on a machine that has the stores but not the audio (a lent GPU takes 64 MiB: the demo
    corpus's features travel, its audio does not), where those stages would start again, since their
    keys sign every audio file. Without `choose_thresholds` the rejection thresholds stay as the
    recipe says: choosing them decodes valid's audio and synthesizes its negatives.
    """
    if restart and dist.is_main:
        for old in (recipe.checkpoint_dir, recipe.tb_dir, recipe.bundle_dir):
            shutil.rmtree(old, ignore_errors=True)
        (recipe.root / LOG).unlink(missing_ok=True)
    barrier(dist)
    tokenizer = Tokenizer.load(recipe.tokenizer_dir)
    cmvn = Cmvn.load(recipe.feats_dir / "cmvn.json")
    train_store, valid_store = FeatureStore(recipe.feats_dir / "train"), FeatureStore(recipe.feats_dir / "valid")
    if len(train_store) == 0:
        raise SeqxError(f"{recipe.feats_dir / 'train'}: no training utterances")
    views = [FeatureStore(recipe.feats_dir / view_dir("train", k)) for k in range(1, recipe.features.views)]
    grammar = load_grammar(recipe) if recipe.data.source == "synth" else None
    layout = slot_layout(recipe, grammar, reporter)
    dims = ModelDimensions.from_settings(
        recipe.model, train_store.n_feats, tokenizer, layout.sizes if layout is not None else ()
    )
    labels = slot_labels(layout, grammar, train_store.texts, tokenizer) if layout is not None and grammar else None
    trainer = Trainer(
        recipe, dims, UtteranceDataset(train_store, tokenizer, cmvn, labels, views),
        UtteranceDataset(valid_store, tokenizer, cmvn), tokenizer, device, dist, reporter, key,
    )
    report = TrainReport(str(recipe.bundle_dir), False, str(device), dist.world_size, count_parameters(trainer.model))
    try:
        last = trainer.checkpoints.resumable(reporter.warn)  # last.pt, or the newest good one when it is damaged
        if last is not None:
            trainer.resume(last)
            report.resumed_from_step = trainer.state.step
            reporter.info(f"train: resuming from {last} (epoch {trainer.state.epoch + 1}, step {trainer.state.step})")
        state = trainer.fit()
        report.epochs, report.steps, report.skipped_batches = state.epoch, state.step, state.nan_skipped
        report.stopped_early = state.stopped_early
        if trainer.device.type == "cpu":
            governor = trainer.threads
            report.cpu_threads, report.fewest_threads = governor.most, governor.lowest
            report.fewer_threads_seconds = round(governor.fewer_seconds, 1)
        if state.epochs:
            best = min(state.epochs, key=lambda e: (e["wer"], e["loss"], -e["epoch"]))
            report.best_valid_wer, report.best_epoch = best["wer"], best["epoch"]
        if dist.is_main:
            model, kept, left_out, report.bundle_valid_wer = trainer.bundle_model()
            report.averaged, report.left_out = [p.name for p in kept], [p.name for p in left_out]
            decode = recipe.decode.model_copy(update=gap_span_settings(recipe))
            save_bundle(recipe.bundle_dir, model, recipe.features, recipe.data.sample_rate, cmvn, tokenizer, decode,
                        extra={"train": {"steps": state.step, "epochs": state.epoch, "averaged": report.averaged,
                                         "valid_wer": report.bundle_valid_wer},
                               "grammar": grammar.to_dict() if grammar is not None else None,
                               "slot_heads": layout.to_json() if layout is not None else None})
            choice = recipe.decode.grammar  # what decoding will be constrained to: the margin is chosen for it
            constrain = grammar if choice == "recipe" else None if choice == "none" else grammar_from_file(choice)
            auto = recipe.decode.reject_margin == "auto" and recipe.data.source == "synth"
            if choose_thresholds and constrain is not None and auto:
                choose_reject_thresholds(recipe, constrain, reporter, device)
            reporter.info(f"train: bundle written to {recipe.bundle_dir} (averaged {', '.join(report.averaged)})")
    finally:
        trainer.close()
    return report
