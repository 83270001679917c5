"""bench/embedding_knn.py's two measures: the speech cut and the DTW distance (no model needed)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import soundfile as sf

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

from embedding_knn import SAMPLE_RATE, dtw_distance, speech_only


def test_dtw_forgives_timing_not_content() -> None:
    rng = np.random.default_rng(0)
    word = rng.normal(size=(12, 96))
    slower = np.repeat(word, 2, axis=0)  # the same frames, each held twice as long
    other = rng.normal(size=(12, 96))
    assert abs(dtw_distance(word, word)) < 1e-12  # rounding: 1 - cos(x, x) is -8e-17 on numpy 2.4
    assert dtw_distance(word, slower) < 1e-9  # a warp of the same sequence costs nothing
    assert dtw_distance(word, other) > 0.5  # unrelated frames: cosine distance near 1
    assert abs(dtw_distance(word, other) - dtw_distance(other, word)) < 1e-12


def test_speech_only_keeps_the_sound_and_a_margin(tmp_path: Path) -> None:
    rate = 8000  # a telephone file: read at 16 kHz
    t = np.arange(rate // 2) / rate
    tone = 0.5 * np.sin(2 * np.pi * 440 * t)
    sf.write(tmp_path / "tone.wav", np.concatenate([np.zeros(rate), tone, np.zeros(rate)]), rate)
    cut = speech_only(tmp_path / "tone.wav")
    assert abs(len(cut) / SAMPLE_RATE - (0.5 + 2 * 0.2)) < 0.03  # half a second of tone and 0.2 s each side
    sf.write(tmp_path / "silent.wav", np.zeros(SAMPLE_RATE), SAMPLE_RATE)
    assert len(speech_only(tmp_path / "silent.wav")) == SAMPLE_RATE  # nothing loud: the file as it is
