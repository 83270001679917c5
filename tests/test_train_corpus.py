"""A tiny real corpus for the training tests: espeak-ng utterances behind a manifest recipe.

Imported by the other tests/test_train_*.py files (`from test_train_corpus import ...`).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
import torch

from seqx.recipe import Recipe, recipe_from_dict

PHRASES = ["find my files", "check the battery", "show the program log", "open the browser", "scroll down", "lock the screen"]
VOICES = ["en-us", "en-gb", "en-us+f3", "en-gb-scotland"]


@pytest.fixture
def one_thread():  # noqa: ANN201
    """Tiny models on a shared, loaded box: one thread is ~20x faster than several spinning ones."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def speak(folder: Path, phrases: list[str] = PHRASES, voices: list[str] = VOICES[:1]) -> list[dict[str, Any]]:
    """One 16-bit wav per (phrase, voice), made by espeak-ng; manifest rows for them."""
    folder.mkdir(parents=True, exist_ok=True)
    rows = []
    for v, voice in enumerate(voices):
        for i, text in enumerate(phrases):
            path = folder / f"v{v}u{i}.wav"
            if not path.is_file():
                wav = subprocess.run(["espeak-ng", "-v", voice, "-s", "170", "--stdout", text], capture_output=True, check=True)
                path.write_bytes(wav.stdout)
            rows.append({"id": path.stem, "audio": str(path), "text": text, "duration": 1.0, "speaker": voice})
    return rows


def tiny_recipe(root: Path, rows: list[dict[str, Any]], valid: list[dict[str, Any]] | None = None, **train: Any) -> Recipe:
    """A manifest recipe over `rows` (valid and test = `valid`, default the same rows), tiny model, CPU."""
    src = root / "src"
    src.mkdir(parents=True, exist_ok=True)
    for split, split_rows in (("train", rows), ("valid", valid or rows)):
        (src / f"{split}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in split_rows))
    settings: dict[str, Any] = {
        "device": "cpu", "epochs": 3, "max_frames": 800, "lr": 3e-3, "warmup_steps": 5, "seed": 0,
        "deterministic": True, "workers": 0, "save_every_steps": 1000, "keep_last": 2, "average_best": 2,
        "valid_max_utts": 8, "log_every": 1,
    }
    settings.update(train)
    return recipe_from_dict({
        "name": "tiny",
        "exp_dir": str(root / "exp"),
        "data": {"source": "manifest", "manifest": {
            "train": str(src / "train.jsonl"), "valid": str(src / "valid.jsonl"), "test": str(src / "valid.jsonl")}},
        "features": {"kind": "fbank", "n_mels": 40, "workers": 1, "specaugment": False},
        "tokenizer": {"kind": "char", "vocab_size": 40},
        "model": {"d_model": 48, "heads": 2, "enc_layers": 2, "dec_layers": 1, "d_ff": 96, "dropout": 0.0,
                  "frontend": "conv2d", "ctc_weight": 0.3},
        "train": settings,
        "decode": {"beam": 1, "max_len": 40, "max_len_ratio": 1.5},  # char tokens: more than one per frame
    })


def test_corpus_is_real_speech(tmp_path: Path) -> None:
    from seqx.featurize.audio import load_audio

    rows = speak(tmp_path, PHRASES[:2])
    wave = load_audio(rows[0]["audio"], 16000)
    assert 0.3 < wave.numel() / 16000 < 3.0 and wave.abs().max() > 0.05
