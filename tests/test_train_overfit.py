"""End to end on real speech: the real data, featurize and tokenize stages, then a tiny model that
memorizes six espeak-ng commands exactly, decoded from the wav files through the bundle alone."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from test_train_corpus import PHRASES, one_thread, speak, tiny_recipe  # noqa: F401

from seqx.decode.bundle import load_bundle
from seqx.decode.transcribe import transcribe_files
from seqx.report import Collect
from seqx.train.stage import run_train_stage

pytestmark = pytest.mark.usefixtures("one_thread")


def test_tiny_model_overfits_six_real_utterances_to_exact_greedy_transcripts(tmp_path: Path) -> None:
    rows = speak(tmp_path / "wav", PHRASES)
    recipe = tiny_recipe(
        tmp_path, rows, epochs=80, max_frames=300, lr=5e-3, warmup_steps=10, schedule="cosine",
        label_smoothing=0.0, keep_last=1, average_best=1, early_stop_patience=30,
    )
    started = time.monotonic()
    report = run_train_stage(recipe, Collect())
    assert time.monotonic() - started < 120
    assert report.best_valid_wer == 0.0, report
    assert report.bundle_valid_wer == 0.0
    # one thread, as the suite sets it (OMP_NUM_THREADS): nothing to give way with (seqx/torch_threads.py)
    assert report.cpu_threads == 1 and report.fewest_threads == 1 and report.fewer_threads_seconds == 0

    bundle = load_bundle(recipe.bundle_dir)  # the recipe is not needed from here on
    results = transcribe_files(bundle, [r["audio"] for r in rows], bundle.decode)
    assert [r.text for r in results] == PHRASES
    assert (recipe.root / "train_log.jsonl").is_file() and any(recipe.tb_dir.glob("events.*"))
