"""The level Silero VAD hears: a quiet recording raised before it is asked, a file at once, a stream as it comes.

Silero VAD is not deaf to level: a command whose peaks were 40 dB below full scale (a microphone's
gain turned down, a speaker across the room) was "no speech" for it in 5 of 24 flite commands, 0 once
raised, while the model, which hears log-Mel, took all 24 either way; noise raised stays noise (the
demo's 28 noise negatives and alsa's Noise.wav: none heard either way; docs/benchmarks.md "Quiet and
clipped recordings"). Only the VAD hears the raised audio; the model hears what was recorded.

A file's loudest 100 ms is known before Silero hears it (`at_vad_level`). A stream's is not, so
`StreamLevel` raises each window by the loudest 100 ms of the last `memory_s` seconds, that window's
included: a command's first loud window is raised no further than to the level, as a file's loudest is,
and the gain then holds while the command and the pauses after it last. Nor is the room (the quietest
tenth of the windows) raised above `FLOOR_CAP_DBFS`: a microphone that hears an ordinary room is loud
enough, and only a quiet one is raised.
"""

from __future__ import annotations

import math
from collections import deque

import numpy as np

from seqx.listen.vad import WINDOW

VAD_LEVEL_DBFS = -30.0  # a quiet file's loudest 100 ms is brought up to this before Silero hears it
VAD_MOST_GAIN_DB = 40.0
# ...and a stream's to this: Silero, carried along a stream, heard the pink noise 34 dB below 40 flite
# commands as speech once they were raised to -30 (5-6 extra segments; 0-1 raised to -20, 0 as loud as
# made), and raised to -20 it found 100 of 100 people's words at every microphone gain down to -50 dB,
# its ends within 43 ms (docs/benchmarks.md "A quiet microphone")
STREAM_LEVEL_DBFS = -20.0
# ...but a room as loud as an ordinary one's is not raised past this: raised, the room tone of 8 kHz
# input (at -65 dBFS) kept Silero from rising at the first command's onset for 0.19 s; a quiet
# microphone's room (-80 dBFS and below) is raised
FLOOR_CAP_DBFS = -50.0


def loudness_dbfs(wave: np.ndarray, sample_rate: int) -> float:
    """Level of the loudest 100 ms window, in dB relative to full scale."""
    wave = np.asarray(wave, dtype=np.float32)
    window = max(1, sample_rate // 10)
    frames = wave[: wave.size // window * window].reshape(-1, window) if wave.size >= window else wave[None]
    rms = float(np.sqrt(np.square(frames).mean(axis=1, dtype=np.float32)).max())
    return 20 * math.log10(max(rms, 1e-12))


def at_vad_level(audio: np.ndarray, sample_rate: int) -> np.ndarray:
    """The file raised (never lowered) so its loudest 100 ms is at `VAD_LEVEL_DBFS`, by at most
    `VAD_MOST_GAIN_DB`."""
    return _raised(audio, VAD_LEVEL_DBFS - loudness_dbfs(audio, sample_rate))


class StreamLevel:
    """Consecutive windows of one stream in, each raised as `at_vad_level` would raise the stream so far
    (its last `memory_s` seconds), to `level_dbfs`: a quiet microphone's commands reach Silero at a
    level it hears, and its endpoints stay where the speech is."""

    FLOOR_EVERY = 16  # 0.5 s: a room's level moves slowly, and the percentile costs as much as the rest

    def __init__(self, sample_rate: int = 16000, memory_s: float = 10.0, level_dbfs: float = STREAM_LEVEL_DBFS) -> None:
        self.rate, self.memory_s, self.level_dbfs = sample_rate, memory_s, level_dbfs
        self.reset()

    def reset(self) -> None:
        self.recent: deque[float] = deque(maxlen=3)  # mean squares of the last 3 windows: 96 ms, the level's span
        self.levels: deque[tuple[int, float]] = deque()  # (window number, 96 ms mean square to it), falling
        self.count = 0
        self.floor_levels: deque[float] = deque(maxlen=max(1, int(self.memory_s * self.rate / WINDOW)))
        self.floor = 0.0  # dBFS: the quietest tenth of the windows, looked at every FLOOR_EVERY windows

    def raise_window(self, window: np.ndarray) -> np.ndarray:
        square = float(np.dot(window, window)) / max(window.size, 1)
        self.recent.append(square)
        self.floor_levels.append(10 * math.log10(max(square, 1e-24)))
        self.count += 1
        power = sum(self.recent) / len(self.recent)
        while self.levels and self.levels[-1][1] <= power:  # a louder window outlasts the quieter before it
            self.levels.pop()
        self.levels.append((self.count, power))
        while self.levels[0][0] <= self.count - len(self.floor_levels):  # older than memory_s
            self.levels.popleft()
        if self.count % self.FLOOR_EVERY == 1 or self.count <= self.FLOOR_EVERY:
            self.floor = float(np.percentile(self.floor_levels, 10))
        loudest = 10 * math.log10(max(self.levels[0][1], 1e-24))
        return _raised(window, min(self.level_dbfs - loudest, FLOOR_CAP_DBFS - self.floor))


def _raised(audio: np.ndarray, gain_db: float) -> np.ndarray:
    gain_db = min(VAD_MOST_GAIN_DB, gain_db)
    return audio * np.float32(10 ** (gain_db / 20)) if gain_db > 0 else audio
