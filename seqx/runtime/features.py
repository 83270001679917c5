"""Feature frames without torch: numpy log-Mel / MFCC equal to seqx.featurize.features (torchaudio's
filterbank around a centered, zero-padded Hann STFT), the speech embedding through openwakeword's
two ONNX models, and CMVN.

Tolerance (tests/test_runtime.py): on real speech the numpy log-Mel frames are within 1e-3 (absolute,
natural-log units) of the torch ones, and within 1e-3 after CMVN; the difference is float32
rounding in the FFT (numpy's pocketfft vs torch's) and shows in the quietest bins only.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from seqx.errors import SeqxError

LOG_FLOOR = 1e-10  # seqx.featurize.features.LOG_FLOOR
TOP_DB = 80.0  # seqx.featurize.features.TOP_DB


def _hz_to_mel(f: np.ndarray) -> np.ndarray:
    return 2595.0 * np.log10(1.0 + f / 700.0)  # HTK


def _mel_to_hz(m: np.ndarray) -> np.ndarray:
    return 700.0 * (10.0 ** (m / 2595.0) - 1.0)


def mel_filters(n_freqs: int, sample_rate: int, n_mels: int) -> np.ndarray:
    """(n_mels, n_freqs): torchaudio.functional.melscale_fbanks(n_freqs, 0, sr / 2, n_mels, sr).T
    (HTK mel scale, unnormalized triangles), computed in float32 as torchaudio does."""
    all_freqs = np.linspace(0, sample_rate // 2, n_freqs, dtype=np.float32)
    top = _hz_to_mel(np.float32(sample_rate / 2))
    m_pts = np.linspace(_hz_to_mel(np.float32(0.0)), top, n_mels + 2, dtype=np.float32)
    f_pts = _mel_to_hz(m_pts).astype(np.float32)
    f_diff = f_pts[1:] - f_pts[:-1]  # (n_mels + 1,)
    slopes = f_pts[None, :] - all_freqs[:, None]  # (n_freqs, n_mels + 2)
    down = -slopes[:, :-2] / f_diff[:-1]
    up = slopes[:, 2:] / f_diff[1:]
    return np.maximum(0.0, np.minimum(down, up)).T.astype(np.float32).copy()


def dct_matrix(n_mfcc: int, n_mels: int) -> np.ndarray:
    """(n_mels, n_mfcc): torchaudio.functional.create_dct(n_mfcc, n_mels, norm="ortho")."""
    n = np.arange(n_mels, dtype=np.float64)
    k = np.arange(n_mfcc, dtype=np.float64)[:, None]
    dct = np.cos(math.pi / n_mels * (n + 0.5) * k)  # (n_mfcc, n_mels)
    dct[0] *= 1.0 / math.sqrt(2.0)
    dct *= math.sqrt(2.0 / n_mels)
    return dct.T.astype(np.float32).copy()


class NumpyFeatures:
    """__call__(wave (T,) float32 in [-1, 1]) -> CMVN-normalized frames (frames, n_feats) float32."""

    def __init__(
        self, features: dict[str, Any], sample_rate: int, cmvn: dict[str, list[float]], models: Path | None = None
    ) -> None:
        """`models`: the folder holding the speech-embedding graphs (the export folder; None = the
        installed openwakeword package's)."""
        self.kind = features["kind"]
        self.models = models
        if features.get("kaldi"):
            raise SeqxError("features.kaldi: Kaldi-compatible fbank is not supported by the runtime")
        if self.kind not in ("fbank", "mfcc", "speech_embedding", "speech_embedding+fbank"):
            raise SeqxError(f"features.kind {self.kind!r} is not supported by the runtime")
        self.sample_rate = sample_rate
        self.win = int(round(features["win_ms"] * sample_rate / 1000))
        self.hop = int(round(features["hop_ms"] * sample_rate / 1000))
        self.n_fft = 2 ** math.ceil(math.log2(self.win))
        window = np.hanning(self.win + 1)[:-1]  # periodic Hann, torch.hann_window's default
        left = (self.n_fft - self.win) // 2  # torch.stft centers a short window inside n_fft
        self.window = np.zeros(self.n_fft, np.float32)
        self.window[left : left + self.win] = window
        self.mel_fb = mel_filters(self.n_fft // 2 + 1, sample_rate, features["n_mels"])
        self.dct = dct_matrix(features.get("n_mfcc", 40), features["n_mels"]) if self.kind == "mfcc" else None
        self.utterance_cmvn = features.get("cmvn", "global") == "utterance"
        self.embed_pad_ms = float(features.get("embed_pad_ms", 680.0))
        self.mean = np.asarray(cmvn["mean"], np.float32)
        self.std = np.asarray(cmvn["std"], np.float32)

    def power_mel(self, wave: np.ndarray) -> np.ndarray:
        """(T,) -> (frames, n_mels) mel power: torch.stft(center=True, pad_mode="constant")."""
        pad = self.n_fft // 2
        x = np.pad(wave.astype(np.float32), (pad, pad))
        n = 1 + (x.size - self.n_fft) // self.hop
        frames = np.lib.stride_tricks.as_strided(
            x, (n, self.n_fft), (x.strides[0] * self.hop, x.strides[0]), writeable=False
        )  # (frames, n_fft), a view
        spec = np.fft.rfft(frames * self.window, axis=1)  # (frames, n_freqs) complex
        power = (spec.real**2 + spec.imag**2).astype(np.float32)
        return power @ self.mel_fb.T  # (frames, n_mels)

    def log_mel(self, wave: np.ndarray) -> np.ndarray:
        return np.log(np.maximum(self.power_mel(wave), LOG_FLOOR)).astype(np.float32)

    def frames(self, wave: np.ndarray, views: int = 1) -> np.ndarray:
        """Raw frames, before CMVN: what seqx.featurize.features.FeatureExtractor gives (`averaged`
        with `views`: a plain speech embedding is the mean of that many views, decode.views)."""
        if self.kind == "fbank":
            out = self.log_mel(wave)
        elif self.kind == "mfcc":
            db = 10.0 * np.log10(np.maximum(self.power_mel(wave), LOG_FLOOR))
            db = np.maximum(db, db.max() - TOP_DB)
            out = (db @ self.dct).astype(np.float32)
        else:
            from seqx.runtime.embedding import embed, pooled_fbank

            emb, pad = embed(wave, self.embed_pad_ms, self.models, views if self.kind == "speech_embedding" else 1)
            if self.kind == "speech_embedding":
                out = emb
            else:
                out = np.concatenate([emb, pooled_fbank(self, wave, pad, emb.shape[0])], axis=1)
        if self.utterance_cmvn:
            out = out - out.mean(axis=0, keepdims=True)
        return out

    def __call__(self, wave: np.ndarray, views: int = 1) -> np.ndarray:
        return ((self.frames(wave, views) - self.mean) / self.std).astype(np.float32)
