"""Where the sound is in a recording: the first to the last 10 ms frame within 20 dB of the loudest.

Why a module of its own: the corpus uses it to cut the start off a command (seqx/data/synth.py
clipped copies), and decoding uses it beside Silero VAD to decide how much of a file around the
speech the model hears (seqx/decode/result.py `speech_part`), the torch-free runtime included;
`lengthen` (seqx/data/augment.py) finds the pauses between stretches of speech with its frames.
"""

from __future__ import annotations

import numpy as np


def loud_frames(speech: np.ndarray, sample_rate: int, within_db: float) -> tuple[np.ndarray, int]:
    """(indices of the 10 ms frames whose RMS is within `within_db` of the loudest frame's, frame length)."""
    hop = max(1, sample_rate // 100)
    frames = speech[: speech.size // hop * hop].reshape(-1, hop)
    if frames.size == 0:
        return np.zeros(0, dtype=np.int64), hop
    rms = np.sqrt((frames.astype(np.float64) ** 2).mean(axis=1))
    return np.flatnonzero(rms > rms.max() * 10 ** (-within_db / 20)), hop


def speech_span(speech: np.ndarray, sample_rate: int) -> tuple[int, int]:
    """(first, last + 1) sample of the 10 ms frames louder than a tenth of the loudest frame's RMS."""
    loud, hop = loud_frames(speech, sample_rate, 20.0)
    if loud.size == 0:
        return 0, speech.size
    return int(loud[0]) * hop, (int(loud[-1]) + 1) * hop
