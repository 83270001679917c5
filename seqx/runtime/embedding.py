"""The speech-embedding front-end (features.kind speech_embedding[+fbank]) for the runtime: openwakeword's
melspectrogram.onnx and embedding model run with onnxruntime, as seqx.featurize.embedding does (the
same constants and the same padding; that module is torch-free too, and this one follows it).

An export folder holds melspectrogram.onnx and embedding_stream.onnx (`seqx export` writes them:
seqx/featurize/embedding_graph.py), the embedding graph rewired to run once over the whole mel sequence
instead of once per 76-frame window: the same numbers (checked at export, equal to the bit on real
speech) for 1/8 of the CPU (40 -> 5 ms on a 2 s command). A folder exported before that has
neither; then the installed openwakeword package's graphs run, window by window in one batch.
"""

from __future__ import annotations

import math
from functools import lru_cache
from importlib.util import find_spec
from pathlib import Path
from typing import Any

import numpy as np

from seqx.errors import SeqxError
from seqx.featurize.embedding import (  # torch-free: the constants and windows the torch path embeds with
    DIM, MAX_WINDOWS, SAMPLE_RATE, STRIDE, WINDOW, SpeechEmbedding, mean_of_views, scaled_mel, views_of_mel,
    whole_embeddings, window_count,
)  # fmt: skip

MEL_MODEL, WINDOW_MODEL, STREAM_MODEL = "melspectrogram.onnx", "embedding_model.onnx", "embedding_stream.onnx"


def package_models() -> Path:
    """Where the installed openwakeword package keeps its graphs. Found without importing the
    package: its __init__ imports scikit-learn and more, ~1 s of CPU (importlib.resources.files
    would import it)."""
    spec = find_spec("openwakeword")
    if spec is None or not spec.submodule_search_locations:
        need = "features.kind speech_embedding needs the openwakeword package (pip install openwakeword==0.5.1)"
        raise SeqxError(need)
    return Path(list(spec.submodule_search_locations)[0]) / "resources" / "models"


def graphs(folder: Path | None) -> tuple[Path, Path, bool]:
    """(mel graph, embedding graph, whether the latter is the whole-utterance one): the export
    folder's when it has them, else the openwakeword package's window-by-window pair."""
    if folder is not None and (folder / MEL_MODEL).is_file() and (folder / STREAM_MODEL).is_file():
        return folder / MEL_MODEL, folder / STREAM_MODEL, True
    package = package_models()
    return package / MEL_MODEL, package / WINDOW_MODEL, False


@lru_cache(maxsize=4)
def _sessions(mel: Path, emb: Path) -> tuple[Any, Any]:
    """One thread each: one utterance's features are too small to split."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.log_severity_level = 3
    sessions = [ort.InferenceSession(str(p), options, providers=["CPUExecutionProvider"]) for p in (mel, emb)]
    return sessions[0], sessions[1]


def embed(wave: np.ndarray, pad_ms: float, folder: Path | None = None, views: int = 1) -> tuple[np.ndarray, int]:
    """(T,) float [-1, 1] at 16 kHz -> ((N, 96) embeddings, samples of silence added each side), with
    the graphs of export folder `folder` (None: the installed openwakeword package's). `views` > 1:
    the mean of that many shifted views (decode.views; SpeechEmbedding.averaged)."""
    mel_path, emb_path, whole = graphs(folder)
    mel_session, emb_session = _sessions(mel_path, emb_path)
    pad = int(round(pad_ms * SAMPLE_RATE / 1000))

    def of_mel(mel: np.ndarray) -> np.ndarray:
        if whole:
            return whole_embeddings(emb_session, mel, MAX_WINDOWS)
        if window_count(mel.shape[0]) <= 0:
            return np.zeros((0, DIM), np.float32)
        return emb_session.run(None, {"input_1": SpeechEmbedding.windows(mel)})[0].reshape(-1, DIM).astype(np.float32)

    mel = scaled_mel(mel_session, wave, pad)
    return mean_of_views(views_of_mel(mel, views, of_mel)), pad


def pooled_fbank(features: Any, wave: np.ndarray, pad: int, n: int) -> np.ndarray:
    """log-Mel averaged over each embedding frame's newest 80 ms: (n, n_mels)."""
    fb = features.log_mel(np.pad(wave.astype(np.float32), (pad, pad)))  # (frames, n_mels)
    first, need = WINDOW - STRIDE, WINDOW - STRIDE + STRIDE * n
    if fb.shape[0] < need:
        fb = np.pad(fb, ((0, need - fb.shape[0]), (0, 0)), constant_values=math.log(1e-10))
    return fb[first:need].reshape(n, STRIDE, -1).mean(axis=1).astype(np.float32)
