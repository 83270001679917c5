"""Rejecting out-of-grammar speech with a tiny trained model: a model that heard out-of-grammar
word strings (data.synth.oog_share) transcribes one freely, the grammar's answer is far from
that, and the free/constrained distance rejects it while a command passes; the thresholds are
chosen on the valid split alone and stored in the bundle."""

from __future__ import annotations

import json
import shutil

import pytest

from seqx.data.manifest import read_manifest
from seqx.decode.bundle import Bundle
from seqx.decode.distance import word_distance
from seqx.decode.reject import calibrate, choose_pair
from seqx.decode.transcribe import transcribe_files
from seqx.recipe import Recipe
from tiny import train_tiny
from test_grammar_decode import TINY

OOG = [*TINY, "data.synth.oog_share=0.5", "train.epochs=60"]


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> tuple[Recipe, Bundle]:
    return train_tiny(tmp_path_factory.mktemp("reject"), OOG)


def test_train_says_out_of_grammar_strings_and_eval_splits_do_not(trained: tuple[Recipe, Bundle]) -> None:
    recipe, bundle = trained
    train = read_manifest(recipe.data_dir / "train.jsonl")
    oog = [u for u in train if u.id.endswith("-oog")]
    assert oog and all(u.text and not bundle.grammar.accepts(u.text) for u in oog)
    for split in ("valid", "test"):
        utts = read_manifest(recipe.data_dir / f"{split}.jsonl")
        assert all(not u.text or bundle.grammar.accepts(u.text) for u in utts)


def test_free_disagreement_rejects_out_of_grammar_and_keeps_a_command(trained: tuple[Recipe, Bundle]) -> None:
    recipe, bundle = trained
    train = read_manifest(recipe.data_dir / "train.jsonl")
    oog = [u for u in train if u.id.endswith("-oog")]
    commands = [u for u in train if u.text and not u.id.endswith("-oog")][:10]
    # the share alone (no slack): a three-word string one word off is far enough
    rule = bundle.decode.model_copy(update={"reject_margin": 0.0, "reject_distance": 0.3, "reject_distance_slack": 0})
    off = rule.model_copy(update={"reject_distance": 1.0})
    found = transcribe_files(bundle, [u.audio for u in oog], off)
    # the model learned to say what it heard: its free transcript is the out-of-grammar string
    heard = [(u, r) for u, r in zip(oog, found, strict=True) if r.free_text == u.text]
    assert len(heard) >= len(oog) // 2
    assert all(r.text == "" or bundle.grammar.accepts(r.text) for _, r in heard)  # the grammar still answers
    far = [u for u, r in heard if r.understood and word_distance(u.text, r.text) > 0.3]
    assert far, "no out-of-grammar utterance got a grammar answer far from what was said"
    judged = transcribe_files(bundle, [u.audio for u in far], rule)
    assert all(not r.understood and r.reason == "rejected" and r.text == "" for r in judged)
    kept = transcribe_files(bundle, [u.audio for u in commands], rule)
    assert sum(r.understood and r.text == u.text for u, r in zip(commands, kept, strict=True)) >= 9
    assert all(r.free_distance == 0.0 for r in kept if r.understood)


def test_thresholds_chosen_on_valid_only_and_stored(trained: tuple[Recipe, Bundle]) -> None:
    recipe, bundle = trained
    config = json.loads((recipe.bundle_dir / "config.json").read_text())
    assert isinstance(bundle.decode.reject_distance, float) and 0 <= bundle.decode.reject_distance <= 1
    assert config["decode"]["reject_distance"] == config["reject"]["distance"] == bundle.decode.reject_distance
    # without the test split (manifest and negatives) calibration runs the same: it never reads them
    test_manifest = recipe.data_dir / "test.jsonl"
    hidden = test_manifest.with_suffix(".hidden")
    shutil.move(test_manifest, hidden)
    try:
        again = calibrate(recipe, bundle, bundle.grammar)
    finally:
        shutil.move(hidden, test_manifest)
    assert not (recipe.eval_dir / "negatives").exists()  # the test split's negatives were never made
    assert (again.margin, again.distance) == (config["reject"]["margin"], config["reject"]["distance"])
    # a bundle that forgives sounds between words has its thresholds chosen under the usual gap:
    # valid's synthetic voices add none, so the rule would only move the margin for the negatives
    import copy

    chosen = []
    for forgive in (True, False):
        twin = copy.copy(bundle)
        twin.decode = bundle.decode.model_copy(update={"gap_forgives_insertions": forgive})
        chosen.append(calibrate(recipe, twin, bundle.grammar))
    assert chosen[0] == chosen[1]


def test_an_older_bundle_keeps_its_distance_rule_until_chosen_again(trained: tuple[Recipe, Bundle]) -> None:
    """A bundle whose thresholds were chosen before decode.reject_distance_slack decodes with the
    share alone (slack 0); choosing its thresholds again (bench/human.py --recalibrate) chooses them
    for the recipe's slack and stores it."""
    import torch

    from seqx.decode.bundle import load_bundle
    from seqx.report import Collect
    from seqx.train.stage import choose_reject_thresholds

    recipe, bundle = trained
    path = recipe.bundle_dir / "config.json"
    config = json.loads(path.read_text())
    assert config["decode"]["reject_distance_slack"] == recipe.decode.reject_distance_slack == 1
    del config["decode"]["reject_distance_slack"]
    path.write_text(json.dumps(config))
    assert load_bundle(recipe.bundle_dir).decode.reject_distance_slack == 0
    choose_reject_thresholds(recipe, bundle.grammar, Collect(), torch.device("cpu"))
    again = json.loads(path.read_text())
    assert again["decode"]["reject_distance_slack"] == 1
    assert load_bundle(recipe.bundle_dir).decode.reject_distance_slack == 1
    assert again["reject"] == {**config["reject"]}  # the same model, the same rule: the same choice
    # a bundle from before decode.floor_snr_db has none; chosen again under a recipe with one, it keeps it
    assert "floor_snr_db" in again["decode"] and again["decode"]["floor_snr_db"] is None
    floored = recipe.model_copy(update={"decode": recipe.decode.model_copy(update={"floor_snr_db": 40.0})})
    choose_reject_thresholds(floored, bundle.grammar, Collect(), torch.device("cpu"))
    assert load_bundle(recipe.bundle_dir).decode.floor_snr_db == 40.0
    path.write_text(json.dumps(again))  # as it was, for the other tests of the module


def test_choose_pair_uses_both_checks() -> None:
    # commands: small gap, agree; negatives: one with a big gap, one that agrees on gap but not words
    commands = [(0.01, 0.0), (0.02, 0.0), (0.03, 0.2), None]
    negatives = [(0.6, 0.0), (0.02, 0.8), None, (0.05, 0.6)]
    gap, distance, fr, fa = choose_pair(commands, negatives)
    assert 0.03 < gap < 0.6 and 0.2 < distance < 0.8 and fr == 0.25 and fa == 0.0
    only_gap = choose_pair(commands, negatives, distance=1.0)
    assert only_gap[1] == 1.0 and only_gap[2] + only_gap[3] > fr + fa
