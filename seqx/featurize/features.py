"""MFCC and log-Mel filterbank frames with torchaudio's transforms.

Window and hop are given in milliseconds (what a speech person thinks in) and
turned into samples here; the FFT size is the next power of two above the window.
"""

from __future__ import annotations

import math

import torch
import torchaudio
from torch import Tensor, nn

from seqx.recipe import FeatureSettings

LOG_FLOOR = 1e-10  # power floor before the log: -100 dB, below any 16-bit signal


class FeatureExtractor(nn.Module):
    """forward(wave (T,)) -> (frames, n_feats) float32."""

    def __init__(self, settings: FeatureSettings, sample_rate: int) -> None:
        super().__init__()
        self.settings = settings
        self.sample_rate = sample_rate
        self.win_length = int(round(settings.win_ms * sample_rate / 1000))  # 25 ms at 16 kHz = 400
        self.hop_length = int(round(settings.hop_ms * sample_rate / 1000))  # 10 ms at 16 kHz = 160
        self.n_fft = 2 ** math.ceil(math.log2(self.win_length))  # 400 -> 512
        # centered frames, zero-padded at the ends (librosa's default since 0.10): unlike
        # reflect padding it works for a wave shorter than half a window, e.g. a click
        mel = dict(
            n_fft=self.n_fft,
            win_length=self.win_length,
            hop_length=self.hop_length,
            n_mels=settings.n_mels,
            pad_mode="constant",
        )
        if settings.kind == "mfcc":
            self.transform: nn.Module = torchaudio.transforms.MFCC(sample_rate, n_mfcc=settings.n_mfcc, melkwargs=mel)
        else:
            self.transform = torchaudio.transforms.MelSpectrogram(sample_rate, power=2.0, **mel)

    @property
    def n_feats(self) -> int:
        return self.settings.n_feats

    @property
    def hop_seconds(self) -> float:
        return self.hop_length / self.sample_rate

    @torch.no_grad()
    def forward(self, wave: Tensor) -> Tensor:
        if self.settings.kind == "fbank" and self.settings.kaldi:
            # Kaldi works on 16-bit sample values; dither off so features are deterministic
            return torchaudio.compliance.kaldi.fbank(
                wave[None] * 32768.0,
                num_mel_bins=self.settings.n_mels,
                frame_length=self.settings.win_ms,
                frame_shift=self.settings.hop_ms,
                sample_frequency=self.sample_rate,
                dither=0.0,
                energy_floor=0.0,
            )
        spec = self.transform(wave)  # (n_feats, frames)
        if self.settings.kind == "fbank":
            spec = spec.clamp(min=LOG_FLOOR).log()
        return spec.T.contiguous()  # (frames, n_feats)
