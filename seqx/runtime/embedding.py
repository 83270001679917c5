"""The speech-embedding front-end (features.kind speech_embedding[+fbank]) for the runtime: openwakeword's
melspectrogram.onnx and embedding_model.onnx run with onnxruntime, as seqx.featurize.embedding does
(the same constants and the same padding; that module is torch-free too, and this one follows it).
"""

from __future__ import annotations

import math
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from seqx.errors import SeqxError

SAMPLE_RATE, INT16_SCALE, MEL_HOP, MEL_BANDS = 16000, 32767.0, 160, 32
WINDOW, STRIDE, DIM, MEL_FFT = 76, 8, 96, 512
MIN_SAMPLES = (WINDOW - 1) * MEL_HOP + MEL_FFT


@lru_cache(maxsize=1)
def _sessions() -> tuple[Any, Any]:
    import onnxruntime as ort

    try:
        folder = Path(str(resources.files("openwakeword"))) / "resources" / "models"
    except ModuleNotFoundError as err:
        need = "features.kind speech_embedding needs the openwakeword package (pip install openwakeword==0.5.1)"
        raise SeqxError(need) from err
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.log_severity_level = 3
    providers = ["CPUExecutionProvider"]
    return (
        ort.InferenceSession(str(folder / "melspectrogram.onnx"), options, providers=providers),
        ort.InferenceSession(str(folder / "embedding_model.onnx"), options, providers=providers),
    )


def embed(wave: np.ndarray, pad_ms: float) -> tuple[np.ndarray, int]:
    """(T,) float [-1, 1] at 16 kHz -> ((N, 96) embeddings, samples of silence added each side)."""
    mel_session, emb_session = _sessions()
    pad = int(round(pad_ms * SAMPLE_RATE / 1000))
    padded = np.pad(wave.astype(np.float32) * INT16_SCALE, (pad, pad))
    if padded.size < MIN_SAMPLES:
        padded = np.pad(padded, (0, MIN_SAMPLES - padded.size))
    mel = mel_session.run(None, {"input": padded[None]})[0].reshape(-1, MEL_BANDS) / 10.0 + 2.0
    n = (mel.shape[0] - WINDOW) // STRIDE + 1
    view = np.lib.stride_tricks.sliding_window_view(mel, WINDOW, axis=0)[::STRIDE][:n]  # (N, 32, 76)
    windows = np.ascontiguousarray(view.transpose(0, 2, 1))[..., None].astype(np.float32)
    out = emb_session.run(None, {"input_1": windows})[0].reshape(-1, DIM) if n > 0 else np.zeros((0, DIM), np.float32)
    return out.astype(np.float32), pad


def pooled_fbank(features: Any, wave: np.ndarray, pad: int, n: int) -> np.ndarray:
    """log-Mel averaged over each embedding frame's newest 80 ms: (n, n_mels)."""
    fb = features.log_mel(np.pad(wave.astype(np.float32), (pad, pad)))  # (frames, n_mels)
    first, need = WINDOW - STRIDE, WINDOW - STRIDE + STRIDE * n
    if fb.shape[0] < need:
        fb = np.pad(fb, ((0, need - fb.shape[0]), (0, 0)), constant_values=math.log(1e-10))
    return fb[first:need].reshape(n, STRIDE, -1).mean(axis=1).astype(np.float32)
