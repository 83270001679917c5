"""Where the sound is in a recording: the first to the last 10 ms frame within 20 dB of the loudest.

Why a module of its own: the corpus uses it to cut the start off a command (seqx/data/synth.py
clipped copies), and decoding uses it beside Silero VAD to decide how much of a file around the
speech the model hears (seqx/decode/result.py `speech_part`), the torch-free runtime included.
"""

from __future__ import annotations

import numpy as np


def speech_span(speech: np.ndarray, sample_rate: int) -> tuple[int, int]:
    """(first, last + 1) sample of the 10 ms frames louder than a tenth of the loudest frame's RMS."""
    hop = max(1, sample_rate // 100)
    frames = speech[: speech.size // hop * hop].reshape(-1, hop)
    if frames.size == 0:
        return 0, speech.size
    rms = np.sqrt((frames.astype(np.float64) ** 2).mean(axis=1))
    loud = np.flatnonzero(rms > 0.1 * rms.max())
    if loud.size == 0:
        return 0, speech.size
    return int(loud[0]) * hop, (int(loud[-1]) + 1) * hop
