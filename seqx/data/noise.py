"""Background noise for the synthetic corpus: coloured noise and mains hum, mixed at an SNR.

A command recognizer meets fans, hiss and hum, not studio silence. Coloured
noise is white noise shaped by 1/f^alpha in the frequency domain (alpha 0 white,
1 pink, 2 brown); hum is 50 or 60 Hz with a few harmonics. Noise is made for
every utterance, so its cost shows in the corpus's rate: pink and brown noise
are cut from a seeded 30-second bank at a random offset (as corpora mix in
stretches of recorded noise) rather than shaped anew by an FFT each time.
"""

from __future__ import annotations

import functools

import numpy as np

NOISE_KINDS = ("white", "pink", "brown", "hum")
_ALPHA = {"pink": 1.0, "brown": 2.0}


@functools.lru_cache(maxsize=64)
def _shaping(n_fft: int, alpha: float) -> np.ndarray:
    """1/f^(alpha/2) amplitude over the rfft bins (DC gets the lowest bin's gain)."""
    freqs = np.fft.rfftfreq(n_fft).astype(np.float32)
    freqs[0] = freqs[1]
    return (freqs ** (-alpha / 2)).astype(np.float32)


def make_noise(kind: str, n: int, sample_rate: int, rng: np.random.Generator) -> np.ndarray:
    """Unit-RMS float32 noise of `n` samples."""
    if kind == "white":
        noise = rng.standard_normal(n, dtype=np.float32)
    elif kind == "hum":
        t = np.arange(n, dtype=np.float32) / np.float32(sample_rate)
        base = rng.choice([50.0, 60.0])
        noise = 0.1 * rng.standard_normal(n, dtype=np.float32)
        for h in (1, 2, 3, 5):
            weight, phase = rng.uniform(0.2, 1.0) / h, rng.uniform(0, 2 * np.pi)
            noise += np.float32(weight) * np.sin(np.float32(2 * np.pi * base * h) * t + np.float32(phase))
    else:
        # shaped over a power-of-two length and cut: an FFT of an odd length (a prime, say)
        # costs many times more, and a longer stretch of the same noise is just as good
        n_fft = 1 << max(n - 1, 1).bit_length()
        spectrum = np.fft.rfft(rng.standard_normal(n_fft, dtype=np.float32))
        noise = np.fft.irfft(spectrum * _shaping(n_fft, _ALPHA[kind]), n_fft)[:n]
    rms = float(np.sqrt(np.mean(np.square(noise, dtype=np.float32)))) or 1.0
    return (noise / np.float32(rms)).astype(np.float32, copy=False)


BANK_SECONDS = 30


@functools.lru_cache(maxsize=16)
def noise_bank(kind: str, sample_rate: int, seed: int) -> np.ndarray:
    """A long stretch of unit-RMS noise, the same in every process for the same arguments."""
    rng = np.random.default_rng([seed, 7, NOISE_KINDS.index(kind)])
    return make_noise(kind, BANK_SECONDS * sample_rate, sample_rate, rng)


def draw_noise(kind: str, n: int, sample_rate: int, rng: np.random.Generator, seed: int = 0) -> np.ndarray:
    """Unit-RMS noise of `n` samples: from the bank for pink/brown, made afresh for white and hum."""
    if kind not in _ALPHA:
        return make_noise(kind, n, sample_rate, rng)
    bank = noise_bank(kind, sample_rate, seed)
    start = int(rng.integers(bank.size))
    noise = np.take(bank, np.arange(start, start + n), mode="wrap") * np.float32(rng.choice([-1.0, 1.0]))
    rms = float(np.sqrt(np.mean(np.square(noise)))) or 1.0
    return (noise / np.float32(rms)).astype(np.float32, copy=False)


FLOOR_SEED = 2026  # the decode-time noise floor's generator: the same noise for the same length, every run


def with_noise_floor(speech: np.ndarray, sample_rate: int, snr_db: float) -> np.ndarray:
    """`speech` over pink noise `snr_db` below it, the same noise for the same length every time.

    Decoding adds it (`decode.floor_snr_db`): nearly every training utterance has noise under it
    (data.synth.noise_share, at 5-40 dB), while a person's recording may be noise-gated or
    denoised to digital silence between and around the words, which the model seldom heard.
    """
    rng = np.random.default_rng([FLOOR_SEED, speech.size])
    noise = make_noise("pink", speech.size, sample_rate, rng)
    return mix_at_snr(np.asarray(speech, dtype=np.float32), noise, snr_db).astype(np.float32, copy=False)


def mix_at_snr(speech: np.ndarray, noise: np.ndarray, snr_db: float) -> np.ndarray:
    """Add `noise` scaled so that speech power / noise power = snr_db (speech power over its active part)."""
    magnitude = np.abs(speech)
    active = speech[magnitude > 0.02 * (magnitude.max() or 1.0)]
    power = float(np.mean(np.square(active))) if active.size else float(np.mean(np.square(speech)))
    scale = np.float32(np.sqrt(power / 10 ** (snr_db / 10)))
    return speech + scale * noise
