"""FeatureExtractor agrees with librosa (MFCC, log-Mel) and with torchaudio's Kaldi fbank on real speech.

What makes torchaudio and librosa comparable: the same n_fft (512, the power of
two above a 400-sample window), hop 160, periodic Hann window zero-padded to
n_fft, centered frames with zero padding (librosa's default pad_mode), power 2,
HTK mel scale with unnormalized triangles (librosa: htk=True, norm=None), and
for log-Mel the same floor before the log (1e-10). For MFCC both take
10*log10 with top_db=80 and an orthonormal DCT-II.
"""

from __future__ import annotations

import subprocess
from types import ModuleType

import numpy as np
import pytest
import torch
import torchaudio

from seqx.featurize.audio import load_audio
from seqx.featurize.features import LOG_FLOOR, FeatureExtractor
from seqx.librosa_import import import_librosa
from seqx.recipe import FeatureSettings

RATE = 16000


@pytest.fixture(scope="module")
def speech(tmp_path_factory: pytest.TempPathFactory) -> torch.Tensor:
    path = tmp_path_factory.mktemp("speech") / "x.wav"
    wav = subprocess.run(["espeak-ng", "-v", "en-us", "--stdout", "find my files"], capture_output=True, check=True)
    path.write_bytes(wav.stdout)
    return load_audio(path, RATE)


@pytest.fixture(scope="module")
def librosa() -> ModuleType:
    """The reference, its kernels compiled under seqx's lock (tests run in parallel); a fixture, not a
    module-level import, so that collecting this file (every pytest worker does) costs no import."""
    return import_librosa()


def _librosa_mel(librosa: ModuleType, wave: np.ndarray, n_mels: int) -> np.ndarray:
    return librosa.feature.melspectrogram(
        y=wave, sr=RATE, n_fft=512, hop_length=160, win_length=400, window="hann",
        center=True, pad_mode="constant", power=2.0, n_mels=n_mels, htk=True, norm=None,
    )  # fmt: skip


def test_extractor_constants_follow_from_milliseconds() -> None:
    extractor = FeatureExtractor(FeatureSettings(win_ms=25, hop_ms=10), RATE)
    assert (extractor.win_length, extractor.hop_length, extractor.n_fft) == (400, 160, 512)
    assert extractor.hop_seconds == 0.01
    assert FeatureExtractor(FeatureSettings(win_ms=25, hop_ms=10), 8000).n_fft == 256  # 200 samples -> 256


def test_log_mel_matches_librosa(speech: torch.Tensor, librosa: ModuleType) -> None:
    ours = FeatureExtractor(FeatureSettings(kind="fbank", n_mels=80), RATE)(speech).numpy()
    ref = np.log(np.maximum(_librosa_mel(librosa, speech.numpy(), 80), LOG_FLOOR)).T
    assert ours.shape == ref.shape == (1 + speech.numel() // 160, 80)
    # float32 FFTs in two libraries: within 0.01 nats (1 %) everywhere, far tighter on average
    np.testing.assert_allclose(ours, ref, atol=1e-2)
    assert np.abs(ours - ref).mean() < 1e-3


def test_mfcc_matches_librosa(speech: torch.Tensor, librosa: ModuleType) -> None:
    ours = FeatureExtractor(FeatureSettings(kind="mfcc", n_mfcc=40, n_mels=80), RATE)(speech).numpy()
    mel_db = librosa.power_to_db(_librosa_mel(librosa, speech.numpy(), 80), ref=1.0, amin=1e-10, top_db=80.0)
    ref = librosa.feature.mfcc(S=mel_db, n_mfcc=40, dct_type=2, norm="ortho").T
    assert ours.shape == ref.shape
    # coefficients run to a few hundred (c0); 0.05 absolute is a 1e-4 relative difference
    np.testing.assert_allclose(ours, ref, atol=5e-2)


@pytest.mark.parametrize("kind", ["fbank", "mfcc"])
def test_same_as_torchaudio_transforms(speech: torch.Tensor, kind: str) -> None:
    """The hand-written power spectrum is the transforms' own computation, only faster."""
    mel = dict(n_fft=512, win_length=400, hop_length=160, n_mels=64, pad_mode="constant")
    ours = FeatureExtractor(FeatureSettings(kind=kind, n_mels=64, n_mfcc=20), RATE)(speech)
    if kind == "fbank":
        ref = torchaudio.transforms.MelSpectrogram(RATE, power=2.0, **mel)(speech).clamp(min=LOG_FLOOR).log().T
    else:
        ref = torchaudio.transforms.MFCC(RATE, n_mfcc=20, melkwargs=mel)(speech).T
    torch.testing.assert_close(ours, ref, atol=1e-3, rtol=1e-4)


def test_kaldi_fbank_matches_torchaudio_reference(speech: torch.Tensor) -> None:
    ours = FeatureExtractor(FeatureSettings(kind="fbank", kaldi=True, n_mels=40), RATE)(speech)
    ref = torchaudio.compliance.kaldi.fbank(
        speech[None] * 32768, num_mel_bins=40, frame_length=25.0, frame_shift=10.0, sample_frequency=RATE, dither=0.0
    )
    assert ours.shape == (1 + (speech.numel() - 400) // 160, 40)  # Kaldi snips edges: whole windows only
    torch.testing.assert_close(ours, ref)


def test_short_and_silent_waves_still_make_frames() -> None:
    for kind in ("fbank", "mfcc"):
        extractor = FeatureExtractor(FeatureSettings(kind=kind), RATE)
        assert extractor(torch.zeros(50)).shape == (1, extractor.n_feats)  # shorter than half a window
        frames = extractor(torch.zeros(RATE))
        assert torch.isfinite(frames).all()
