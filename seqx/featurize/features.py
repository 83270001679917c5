"""MFCC and log-Mel filterbank frames: torchaudio's filterbank and DCT around one STFT.

Window and hop are given in milliseconds (what a speech person thinks in) and
turned into samples here; the FFT size is the next power of two above the window.

The output is what `torchaudio.transforms.MelSpectrogram` / `MFCC` compute with
these settings (tests hold it to them, and to librosa), written out because the
transforms take |X|² as `abs().pow(2)`: a square root then a square, which cost
40 % of the featurize stage's time on short commands. Kaldi-compatible fbank
goes through `torchaudio.compliance.kaldi.fbank` itself.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
import torchaudio
from torch import Tensor, nn

from seqx.featurize.embedding import STRIDE, WINDOW, SpeechEmbedding
from seqx.recipe import FeatureSettings

LOG_FLOOR = 1e-10  # power floor before the log: -100 dB, below any 16-bit signal
TOP_DB = 80.0  # MFCC: dB range kept below the loudest bin (torchaudio's and librosa's default)
KALDI_SCALE = 2**15  # Kaldi works on 16-bit sample values, not on [-1, 1]


class FeatureExtractor(nn.Module):
    """forward(wave (T,)) -> (frames, n_feats) float32, on the wave's device."""

    def __init__(self, settings: FeatureSettings, sample_rate: int) -> None:
        super().__init__()
        self.settings = settings
        self.sample_rate = sample_rate
        self.win_length = int(round(settings.win_ms * sample_rate / 1000))  # 25 ms at 16 kHz = 400
        self.hop_length = int(round(settings.hop_ms * sample_rate / 1000))  # 10 ms at 16 kHz = 160
        self.n_fft = 2 ** math.ceil(math.log2(self.win_length))  # 400 -> 512
        n_freqs = self.n_fft // 2 + 1  # one-sided spectrum: 257 bins
        # HTK mel scale, unnormalized triangles, 0 Hz to Nyquist: torchaudio's MelSpectrogram defaults
        fbanks = torchaudio.functional.melscale_fbanks(n_freqs, 0.0, sample_rate / 2, settings.n_mels, sample_rate)
        self.register_buffer("window", torch.hann_window(self.win_length), persistent=False)
        self.register_buffer("mel_fb", fbanks.T.contiguous(), persistent=False)  # (n_mels, n_freqs)
        dct = torchaudio.functional.create_dct(settings.n_mfcc, settings.n_mels, norm="ortho")  # (n_mels, n_mfcc)
        self.register_buffer("dct", dct, persistent=False)

        # the speech embedding runs in onnxruntime; made here so bundle and featurize workers share it
        self.embedding = SpeechEmbedding(settings.embed_pad_ms) if settings.is_embedding else None

    @property
    def n_feats(self) -> int:
        return self.settings.n_feats

    @property
    def hop_seconds(self) -> float:
        return self.settings.frame_ms / 1000 if self.settings.is_embedding else self.hop_length / self.sample_rate

    def power_mel(self, wave: Tensor) -> Tensor:
        """(T,) -> mel power spectrogram (n_mels, frames)."""
        # centered frames, zero-padded at the ends (librosa's default since 0.10): unlike
        # reflect padding this works for a wave shorter than half a window, e.g. a click
        spec = torch.stft(
            wave, self.n_fft, self.hop_length, self.win_length, self.window,
            center=True, pad_mode="constant", return_complex=True,
        )  # fmt: skip  # (n_freqs, frames)
        parts = torch.view_as_real(spec).square()  # (n_freqs, frames, 2): re², im²
        power = parts[..., 0] + parts[..., 1]  # |X|² without abs()'s square root (and 8x faster than .sum(-1))
        return self.mel_fb @ power

    @torch.no_grad()
    def forward(self, wave: Tensor) -> Tensor:
        return self._utterance_cmvn(self._frames(wave))

    def _utterance_cmvn(self, frames: Tensor) -> Tensor:
        if self.settings.cmvn == "utterance":  # the utterance's own mean out; global CMVN still follows
            frames = frames - frames.mean(dim=0, keepdim=True)
        return frames

    @torch.no_grad()
    def views(self, wave: Tensor, n: int) -> list[Tensor]:
        """`forward(wave)` and, for a speech embedding with n > 1, the n - 1 shifted views of it
        (features.embed_views; SpeechEmbedding.views)."""
        if n == 1 or self.embedding is None or self.settings.kind != "speech_embedding":
            return [self(wave)]
        views = self.embedding.views(wave.detach().cpu().numpy(), n)
        return [self._utterance_cmvn(torch.from_numpy(v).to(wave.device)) for v in views]

    @torch.no_grad()
    def averaged(self, wave: Tensor, n: int) -> Tensor:
        """`forward(wave)`, or for a speech embedding with n > 1 the mean of its n views
        (decode.views; SpeechEmbedding.averaged): what decoding hears."""
        if n == 1 or self.embedding is None or self.settings.kind != "speech_embedding":
            return self(wave)
        mean = self.embedding.averaged(wave.detach().cpu().numpy(), n)
        return self._utterance_cmvn(torch.from_numpy(mean).to(wave.device))

    def _frames(self, wave: Tensor) -> Tensor:
        s = self.settings
        if self.embedding is not None:
            emb = torch.from_numpy(self.embedding(wave.detach().cpu().numpy())).to(wave.device)  # (N, 96)
            if s.kind == "speech_embedding":
                return emb
            return torch.cat([emb, self._pooled_fbank(wave, emb.shape[0])], dim=1)  # (N, 96 + n_mels)
        if s.kind == "fbank" and s.kaldi:
            # dither off and the energy floor at 0 so the features are deterministic
            return torchaudio.compliance.kaldi.fbank(
                wave[None] * KALDI_SCALE, num_mel_bins=s.n_mels, frame_length=s.win_ms, frame_shift=s.hop_ms,
                sample_frequency=self.sample_rate, dither=0.0, energy_floor=0.0,
            )  # fmt: skip
        mel = self.power_mel(wave)  # (n_mels, frames)
        if s.kind == "fbank":
            return mel.clamp_(min=LOG_FLOOR).log_().T.contiguous()  # (frames, n_mels)
        db = mel.clamp_(min=LOG_FLOOR).log10_().mul_(10.0)  # power to dB, reference 1.0
        db = db.clamp_(min=float(db.max()) - TOP_DB)
        return db.T @ self.dct  # (frames, n_mfcc)

    def _pooled_fbank(self, wave: Tensor, n: int) -> Tensor:
        """log-Mel averaged over each embedding frame's newest 80 ms: (n, n_mels).

        Embedding frame i's window covers mel frames 8i .. 8i + 75 of the padded wave; the
        fbank frames 8i + 68 .. 8i + 75 of the same padded wave (its last 80 ms) are averaged.
        """
        pad = self.embedding.pad if self.embedding is not None else 0
        fb = self.power_mel(F.pad(wave, (pad, pad))).clamp_(min=LOG_FLOOR).log_().T  # (frames, n_mels), 10 ms
        first, need = WINDOW - STRIDE, WINDOW - STRIDE + STRIDE * n
        if fb.shape[0] < need:  # the embedding pads a very short wave at the end: so does this
            fb = F.pad(fb, (0, 0, 0, need - fb.shape[0]), value=math.log(LOG_FLOOR))
        return fb[first:need].reshape(n, STRIDE, -1).mean(dim=1)  # (n, n_mels)
