"""Voice-activity detection: a speech probability for every 32 ms window of 16 kHz audio.

Silero VAD is the model that the `openwakeword==0.5.1` wheel ships (`silero_vad.onnx`,
an LSTM of the v3/v4 family): inputs `input` (batch, samples) float32 in [-1, 1],
`sr` int64 and the LSTM state `h`, `c` of shape (2, batch, 64); outputs the probability
and the next state. It is stateful, so windows must come in order, one stream per
instance. It was trained on 512-sample windows at 16 kHz (256 at 8 kHz), which is the
window used here (openwakeword's own wrapper passes 480 or 640; 512 is what Silero documents
for this family). One window costs ~0.15 ms on one CPU core: idle listening is cheap.

When the model file is not there, `EnergyVad` stands in: a loudness gate relative to a
tracked noise floor, with the same interface, and `load_vad` says that it fell back.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Iterator
from pathlib import Path
from typing import Protocol

import numpy as np

WINDOW = 512  # samples at 16 kHz = 32 ms
SAMPLE_RATE = 16000


class Vad(Protocol):
    """Speech probability of consecutive `WINDOW`-sample windows of one stream."""

    name: str

    def prob(self, window: np.ndarray) -> float: ...

    def reset(self) -> None: ...


def silero_model_path() -> Path | None:
    """Where openwakeword's `silero_vad.onnx` is installed, or None.

    Found, not imported: `import openwakeword` imports scikit-learn and scipy (1.1 s of CPU
    on the development machine), which a file's no-speech gate and `seqx listen` never use.
    """
    from seqx.errors import SeqxError
    from seqx.runtime.embedding import package_models

    try:
        path = package_models() / "silero_vad.onnx"
    except (SeqxError, ImportError, ValueError):
        return None
    return path if path.is_file() else None


class SileroVad:
    """Silero VAD run with onnxruntime on one thread, its LSTM state carried between windows."""

    name = "silero"

    def __init__(self, path: str | Path) -> None:
        import onnxruntime as ort

        options = ort.SessionOptions()
        # one window is a few hundred microseconds of work: threads would only add wake-ups
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        self.session = ort.InferenceSession(str(path), sess_options=options, providers=["CPUExecutionProvider"])
        self.sr = np.array(SAMPLE_RATE, dtype=np.int64)
        self.reset()

    def reset(self) -> None:
        self.h = np.zeros((2, 1, 64), dtype=np.float32)
        self.c = np.zeros((2, 1, 64), dtype=np.float32)

    def prob(self, window: np.ndarray) -> float:
        feed = {"input": window.reshape(1, -1).astype(np.float32, copy=False), "sr": self.sr, "h": self.h, "c": self.c}
        out, self.h, self.c = self.session.run(None, feed)
        return float(out[0, 0])


class EnergyVad:
    """A loudness gate: 'speech' when a window is `margin_db` above the noise floor.

    The floor is a low percentile (10th) of the last 5 s of window levels: steady noise
    sets it within a second or two, while a command, which has pauses and is shorter than
    the memory, barely moves it. The probability is a soft step a few dB wide around the
    gate, so the endpointer's threshold means the same thing (0.5 = at the gate) with
    either detector.
    """

    name = "energy"
    MEMORY = 5 * SAMPLE_RATE // WINDOW  # windows of level history

    def __init__(self, margin_db: float = 12.0) -> None:
        self.margin_db = margin_db
        self.reset()

    def reset(self) -> None:
        self.levels: deque[float] = deque(maxlen=self.MEMORY)

    def prob(self, window: np.ndarray) -> float:
        rms = float(np.sqrt(np.mean(np.square(window, dtype=np.float64)))) if window.size else 0.0
        level = 20 * math.log10(max(rms, 1e-7))
        self.levels.append(level)
        floor = float(np.percentile(self.levels, 10))
        gate = max(floor + self.margin_db, -55.0)  # digital near-silence is never speech
        return 1.0 / (1.0 + math.exp(-(level - gate) / 1.5))


def load_vad(kind: str = "silero", margin_db: float = 12.0, model: Path | None = None) -> tuple[Vad, str | None]:
    """The detector the settings ask for, and a note when it is not the one asked for. `model`: the
    Silero graph to use (an export folder's own copy) instead of openwakeword's."""
    if kind == "energy":
        return EnergyVad(margin_db), None
    path = model if model is not None else silero_model_path()
    if path is None:
        note = "Silero VAD model not found (pip install openwakeword==0.5.1): using the energy gate instead"
        return EnergyVad(margin_db), note
    try:
        return SileroVad(path), None
    except ImportError:
        return EnergyVad(margin_db), "onnxruntime is not installed: using the energy gate instead of Silero VAD"


class Windower:
    """Blocks of any size in, `WINDOW`-sample windows out, in order (a remainder waits for the next block)."""

    def __init__(self, window: int = WINDOW) -> None:
        self.window = window
        self.pending = np.zeros(0, dtype=np.float32)

    def feed(self, block: np.ndarray) -> Iterator[np.ndarray]:
        data = np.concatenate([self.pending, block.astype(np.float32, copy=False)]) if self.pending.size else block
        whole = data.size // self.window * self.window
        for first in range(0, whole, self.window):
            yield data[first : first + self.window]
        self.pending = np.array(data[whole:], dtype=np.float32)

    def flush(self) -> Iterator[np.ndarray]:
        """The last partial window, padded with zeros (the end of a file is rarely a whole window)."""
        if self.pending.size:
            yield np.pad(self.pending, (0, self.window - self.pending.size))
        self.pending = np.zeros(0, dtype=np.float32)


def speech_probs(wave: np.ndarray, vad: Vad) -> np.ndarray:
    """(ceil(T / WINDOW),) probabilities for a whole waveform (the stream is reset first)."""
    vad.reset()
    windower = Windower()
    windows = [*windower.feed(wave), *windower.flush()]
    return np.array([vad.prob(w) for w in windows], dtype=np.float32)
