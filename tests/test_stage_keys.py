"""Each stage's cache key holds exactly what its output depends on.

A setting that changes a stage's output must change its key (or a stale output is reused);
one that does not must leave it alone (or a cheap change, like the vocabulary size,
redoes an expensive stage, like featurizing the corpus). The train key also holds the
feature and tokenizer stamps, so it follows those stages when they are redone; here none has run.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from seqx.data.stage import _key as data_stage_key
from seqx.data.synth import SPLITS
from seqx.featurize.stage import featurize_stage_key
from seqx.recipe import Recipe
from seqx.tokenize.stage import tokenize_stage_key
from seqx.train.stage import run_key


def _recipe(tmp_path: Path, **changes: Any) -> Recipe:
    raw: dict[str, Any] = {"exp_dir": str(tmp_path)}
    for dotted, value in changes.items():
        *path, last = dotted.split("__")
        node = raw
        for part in path:
            node = node.setdefault(part, {})
        node[last] = value
    return Recipe.model_validate(raw)


def _featurize_key(recipe: Recipe) -> str:
    return featurize_stage_key(recipe, {split: [] for split in SPLITS})


KEYS = {"data": data_stage_key, "featurize": _featurize_key, "tokenize": tokenize_stage_key, "train": run_key}

# (setting, new value, the stages whose key it changes); every other stage's key must stay put
CASES = [
    ("data__size", 500, {"data"}),
    ("data__seed", 7, {"data"}),
    ("data__workers", 3, set()),
    ("data__sample_rate", 8000, {"data", "featurize"}),
    ("data__synth__engines", ["espeak-ng", "hibari"], {"data"}),
    ("data__synth__hibari_voices", ["emma"], set()),  # hibari not in the recipe: corpora from before stay fresh
    ("data__synth__recordings_repeat", 4, set()),  # the default, and no recordings: corpora from before stay fresh
    ("data__synth__recordings_repeat", 8, set()),  # without recordings it means nothing
    ("features__kind", "mfcc", {"featurize"}),
    ("features__n_mels", 40, {"featurize"}),
    ("features__workers", 3, set()),
    ("features__specaugment", False, {"train"}),
    ("tokenizer__vocab_size", 64, {"tokenize"}),
    ("tokenizer__kind", "unigram", {"tokenize"}),
    ("tokenizer__lowercase", False, {"featurize", "tokenize"}),
    ("tokenizer__merge_repeats", True, {"tokenize"}),
    ("tokenizer__merge_repeats", False, set()),  # the default: tokenizers from before the setting stay fresh
    ("model__d_model", 128, {"train"}),
    ("train__lr", 0.0005, {"train"}),
    ("train__lr_floor", 0.0, {"train"}),
    ("train__lr_floor", 0.1, set()),  # the default: runs from before the setting keep their key
    ("train__device", "cpu", set()),
    ("train__log_every", 7, set()),
    ("decode__beam", 4, set()),
]


@pytest.mark.parametrize(("setting", "value", "changes"), CASES, ids=[c[0] for c in CASES])
def test_which_stage_keys_a_setting_changes(tmp_path: Path, setting: str, value: Any, changes: set[str]) -> None:
    base, changed = _recipe(tmp_path), _recipe(tmp_path, **{setting: value})
    moved = {stage for stage, key in KEYS.items() if key(base) != key(changed)}
    assert moved == changes


def test_a_moved_experiment_folder_keeps_its_keys(tmp_path: Path) -> None:
    """`mv` or `cp -a` of an experiment folder: the features and the tokenizer (and so the model)
    are still up to date there; a file rewritten in either copy changes the key."""
    import json
    import os
    import shutil

    from seqx.data.manifest import read_manifest

    first = _recipe(tmp_path / "a")
    (first.data_dir / "audio").mkdir(parents=True)
    for split in SPLITS:
        (first.data_dir / "audio" / f"{split}.wav").write_bytes(b"RIFF" + bytes(40))
        row = {"id": split, "audio": f"audio/{split}.wav", "text": "stop", "duration": 1.0, "speaker": "s"}
        (first.data_dir / f"{split}.jsonl").write_text(json.dumps(row) + "\n")

    def keys(recipe: Recipe) -> tuple[str, str]:
        utts = {split: read_manifest(recipe.data_dir / f"{split}.jsonl") for split in SPLITS}
        return featurize_stage_key(recipe, utts), tokenize_stage_key(recipe, ["stop"])

    shutil.copytree(tmp_path / "a", tmp_path / "b", copy_function=shutil.copy2)  # cp -a: times kept
    second = _recipe(tmp_path / "b")
    assert keys(second) == keys(first)
    os.utime(second.data_dir / "audio" / "valid.wav", ns=(1, 1))  # rewritten: features are stale
    assert keys(second)[0] != keys(first)[0] and keys(second)[1] == keys(first)[1]
    os.utime(second.data_dir / "train.jsonl", ns=(1, 1))
    assert keys(second)[1] != keys(first)[1]


def test_a_grammar_written_alike_keys_alike(tmp_path: Path) -> None:
    """Weights written 6 or 6.0, an intent's weight left out or written 1: one corpus, one key (the
    grammar reader checks intents since 2026-12-02, and a demo corpus made before stays fresh)."""
    written = [
        {"a": {"templates": ["x on", {"y on": 2}]}, "b": [{"z off": 6}]},
        {"a": {"templates": ["x on", {"y on": 2.0}], "weight": 1}, "b": [{"z off": 6.0}]},
    ]
    keys = {data_stage_key(_recipe(tmp_path, data__synth__grammar={"intents": intents})) for intents in written}
    assert len(keys) == 1
    with_slots = {"a": {"templates": ["x on"], "slots": {"domain": "light"}}, "b": [{"z off": 6}]}
    assert data_stage_key(_recipe(tmp_path, data__synth__grammar={"intents": with_slots})) not in keys
