"""Background noise for the synthetic corpus: coloured noise and mains hum, mixed at an SNR.

A command recognizer meets fans, hiss and hum, not studio silence. Coloured
noise is white noise shaped by 1/f^alpha in the frequency domain (alpha 0 white,
1 pink, 2 brown); hum is 50 or 60 Hz with a few harmonics.
"""

from __future__ import annotations

import numpy as np

NOISE_KINDS = ("white", "pink", "brown", "hum")


def make_noise(kind: str, n: int, sample_rate: int, rng: np.random.Generator) -> np.ndarray:
    """Unit-RMS noise of `n` samples."""
    if kind == "hum":
        t = np.arange(n) / sample_rate
        base = rng.choice([50.0, 60.0])
        noise = sum(rng.uniform(0.2, 1.0) / h * np.sin(2 * np.pi * base * h * t + rng.uniform(0, 2 * np.pi)) for h in (1, 2, 3, 5))
        noise = noise + 0.1 * rng.standard_normal(n)
    else:
        alpha = {"white": 0.0, "pink": 1.0, "brown": 2.0}[kind]
        spectrum = np.fft.rfft(rng.standard_normal(n))
        freqs = np.fft.rfftfreq(n, 1.0 / sample_rate)
        freqs[0] = freqs[1] if n > 1 else 1.0
        noise = np.fft.irfft(spectrum / freqs ** (alpha / 2), n)
    rms = np.sqrt(np.mean(noise**2)) or 1.0
    return (noise / rms).astype(np.float32)


def mix_at_snr(speech: np.ndarray, noise: np.ndarray, snr_db: float) -> np.ndarray:
    """Add `noise` scaled so that speech power / noise power = snr_db (speech power over its active part)."""
    active = speech[np.abs(speech) > 0.02 * (np.abs(speech).max() or 1.0)]
    power = float(np.mean(active**2)) if active.size else float(np.mean(speech**2))
    scale = np.sqrt(power / 10 ** (snr_db / 10))
    return speech + scale * noise
