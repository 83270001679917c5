"""The featurize stage on real espeak-ng speech: store, CMVN, skipped files, cache, workers, data stage first."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
import torch

from seqx.featurize.cmvn import Cmvn
from seqx.featurize.stage import run_featurize_stage
from seqx.featurize.store import FeatureStore
from seqx.recipe import Recipe, recipe_from_dict
from seqx.report import Collect
from seqx.stage import STAMP_NAME

PHRASES = [
    "find my files",
    "check the battery",
    "show the program log",
    "Set a timer for 15 minutes!",
    "open the browser",
    "turn up the volume",
    "scroll down",
    "lock the screen",
]


@pytest.fixture(scope="module")
def wavs(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """Eight real utterances (espeak-ng: 22.05 kHz, so every file is resampled to 16 kHz)."""
    folder = tmp_path_factory.mktemp("wavs")
    paths = []
    for i, text in enumerate(PHRASES):
        path = folder / f"u{i}.wav"
        voice = ["en-us", "en-gb", "en-us+f3", "en-gb-scotland"][i % 4]
        wav = subprocess.run(["espeak-ng", "-v", voice, "--stdout", text], capture_output=True, check=True).stdout
        path.write_bytes(wav)
        paths.append(path)
    return paths


def _recipe(root: Path, **features: object) -> Recipe:
    return recipe_from_dict(
        {
            "name": "t",
            "exp_dir": str(root),
            "data": {"source": "manifest", "manifest": {"train": str(root / "src" / "train.jsonl")}},
            "features": {"workers": 1, **features},
        }
    )


def _write_manifests(recipe: Recipe, wavs: list[Path], extra_train: list[Path] = ()) -> None:
    """data/{train,valid,test}.jsonl by hand, as the data stage would write them."""
    recipe.data_dir.mkdir(parents=True, exist_ok=True)
    split_of = {"train": list(range(6)), "valid": [6], "test": [7]}
    for split, indices in split_of.items():
        rows = [_row(f"u{i}", wavs[i], PHRASES[i]) for i in indices]
        if split == "train":
            rows += [_row(p.stem, p, "bad") for p in extra_train]
        (recipe.data_dir / f"{split}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


def _row(utt_id: str, audio: Path, text: str) -> dict[str, object]:
    return {"id": utt_id, "audio": str(audio), "text": text, "duration": 1.0, "speaker": "s"}


def _bad_files(folder: Path, good: Path) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    truncated, empty, nan, text = (folder / n for n in ("truncated.wav", "empty.wav", "nan.wav", "notes.wav"))
    truncated.write_bytes(good.read_bytes()[:30])
    empty.write_bytes(b"")
    import soundfile as sf

    wave = np.full(1600, np.nan, np.float32)
    sf.write(nan, wave, 16000, subtype="FLOAT")
    text.write_text("not audio at all\n" * 10)
    return [truncated, empty, nan, text]


def test_stage_writes_store_and_cmvn_and_skips_bad_files(tmp_path: Path, wavs: list[Path]) -> None:
    recipe = _recipe(tmp_path)
    bad = _bad_files(tmp_path / "bad", wavs[0])
    _write_manifests(recipe, wavs, bad)
    reporter = Collect()
    report = run_featurize_stage(recipe, reporter)

    assert not report.fresh and report.n_feats == 80
    assert {s: st.utterances for s, st in report.splits.items()} == {"train": 6, "valid": 1, "test": 1}
    assert report.splits["train"].skipped == 4
    assert sorted(p for p, _ in report.skipped) == sorted(str(p) for p in bad)
    assert len(reporter.warnings) == 4 and all(w.split(": ")[0] in {str(p) for p in bad} for w in reporter.warnings)
    assert report.splits["train"].xrt > 1 and report.splits["train"].frames > 100

    train = FeatureStore(recipe.feats_dir / "train")
    assert train.ids == [f"u{i}" for i in range(6)]
    assert train.texts[3] == "set a timer for fifteen minutes"  # normalize_text, as the tokenizer sees it
    assert int(train.lengths.sum()) == report.splits["train"].frames

    # CMVN makes the training set (as stored, float16) zero-mean, unit-variance per dimension
    cmvn = Cmvn.load(recipe.feats_dir / "cmvn.json")
    frames = torch.from_numpy(np.concatenate([train[i] for i in range(len(train))]).astype(np.float32))
    normed = cmvn(frames)
    torch.testing.assert_close(normed.mean(0), torch.zeros(80), atol=1e-3, rtol=0)
    torch.testing.assert_close(normed.std(0, unbiased=False), torch.ones(80), atol=1e-3, rtol=0)


def test_cache_no_op_and_recompute_on_changed_settings_or_audio(tmp_path: Path, wavs: list[Path]) -> None:
    local = tmp_path / "audio"
    local.mkdir()
    wavs = [Path(shutil.copy(w, local)) for w in wavs]  # this test rewrites one
    recipe = _recipe(tmp_path)
    _write_manifests(recipe, wavs)
    first = run_featurize_stage(recipe)
    shard = recipe.feats_dir / "train" / "shard-00000.f16"
    before = (shard.stat().st_mtime_ns, (recipe.feats_dir / STAMP_NAME).stat().st_mtime_ns)

    again = run_featurize_stage(_recipe(tmp_path, workers=2))  # workers do not change the output
    assert again.fresh and again.splits["train"].frames == first.splits["train"].frames
    assert (shard.stat().st_mtime_ns, (recipe.feats_dir / STAMP_NAME).stat().st_mtime_ns) == before

    changed = run_featurize_stage(_recipe(tmp_path, kind="mfcc", n_mfcc=13))
    assert not changed.fresh and FeatureStore(recipe.feats_dir / "valid").n_feats == 13

    assert run_featurize_stage(_recipe(tmp_path, kind="mfcc", n_mfcc=13)).fresh
    wavs[0].write_bytes(wavs[1].read_bytes())  # same path, different audio
    assert not run_featurize_stage(_recipe(tmp_path, kind="mfcc", n_mfcc=13)).fresh


def test_two_workers_store_the_same_frames_as_one(tmp_path: Path, wavs: list[Path]) -> None:
    stores = []
    for workers in (1, 2):
        recipe = _recipe(tmp_path / f"w{workers}", workers=workers)
        _write_manifests(recipe, wavs)
        run_featurize_stage(recipe)
        stores.append(FeatureStore(recipe.feats_dir / "train"))
    one, two = stores
    assert one.ids == two.ids
    for i in range(len(one)):
        np.testing.assert_array_equal(one[i], two[i])


def test_missing_manifests_run_the_data_stage_first(tmp_path: Path, wavs: list[Path]) -> None:
    recipe = _recipe(tmp_path)
    src = tmp_path / "src"
    src.mkdir()
    rows = [{"id": f"u{i}", "audio": str(w), "text": PHRASES[i], "speaker": f"s{i % 3}"} for i, w in enumerate(wavs)]
    (src / "train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    report = run_featurize_stage(recipe)
    assert (recipe.data_dir / "train.jsonl").is_file()
    assert sum(s.utterances for s in report.splits.values()) == len(wavs)
