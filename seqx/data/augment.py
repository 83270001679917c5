"""Waveform augmentation at synthesis: the speaker, the room, the crowd and the channel.

A model trained on a few TTS engines hears clean, dry, full-band speech from a handful of vocal
tracts; a person speaks at their own rate and pitch, in a room, among other voices, through a
microphone or a phone line. Each augmentation here changes one of those, and each is a recipe
setting (`data.synth.augment.NAME`: the share of utterances it applies to and the ranges of its
parameters; seqx/recipe.py), all off by default until measured.

Why at synthesis and not in the training loop: features are computed once, at featurize time, and
stored (the speech-embedding front-end runs an ONNX model per utterance, far too slow to repeat per
batch on a CPU). Augmenting the rendered waveform costs nothing in training and keeps one code path
for every feature kind; the price is one augmented version per utterance rather than a fresh one
each epoch, which a corpus of thousands of differently seeded utterances makes up for.

Every utterance draws each augmentation's parameters from its own generator, seeded by the corpus
seed, the augmentation's fixed index and the utterance's number, whether or not the augmentation
is on: turning one on, or changing its share, leaves every other draw (and every other utterance's
audio, when it is off there) as it was, so one change at a time can be measured on the same corpus.

Order, as in the world: the speaker (speed, pitch, vocal-tract warp), the room (reverberation,
babble, then the noise bank in synth.py), the channel (telephone band, EQ, clipping, quantization).
"""

from __future__ import annotations

import functools
import zlib
from dataclasses import dataclass
from types import ModuleType

import numpy as np
import soxr

from seqx.data import engines
from seqx.featurize.span import loud_frames
from seqx.librosa_import import import_librosa
from seqx.recipe import AugmentSettings, Voice

# the fixed index of each augmentation's generator stream: append, never reorder
NAMES = ("speed", "pitch", "warp", "reverb", "babble", "telephone", "eq", "clip", "quantize", "lengthen", "pauses")
BANK_STREAM = 9  # the babble bank's sentence choice: len(NAMES) when it had nine, kept so banks stay as they were
STREAM = 8  # the corpus's generator streams: 2 plans, 3 copies, 4 sentences, 7 piper scales, 8 augmentation
MU = 255  # mu-law's mu for 8 bits (G.711)
TELEPHONE_RATE = 8000
EQ_HZ = (100.0, 6000.0)  # peaking bands' centre frequencies, log-uniform
EQ_Q = (0.5, 2.0)


@functools.cache
def _signal() -> ModuleType:
    """scipy.signal, imported when an augmentation first needs it: it takes 1.2 s (a third of
    `seqx train`'s start on a 2-core AMD EPYC), and every seqx process that reaches the data stage
    imports this module, while only a corpus with an augmentation on calls into scipy."""
    from scipy import signal

    return signal


@dataclass(frozen=True)
class Talker:
    """One babble sentence: said once per render worker, then cut at random offsets."""

    text: str
    voice: Voice
    rate: int
    pitch: int
    amplitude: int


@dataclass(frozen=True)
class Augment:
    """What a plan needs to augment its audio: the settings and the babble bank's sentences."""

    settings: AugmentSettings
    talkers: tuple[Talker, ...] = ()


@dataclass(frozen=True)
class Drawn:
    """One utterance's augmentation parameters; None where the augmentation is off for it."""

    speed: float | None = None  # tempo and pitch factor: duration becomes 1/speed
    pitch: float | None = None  # semitones, duration kept
    warp: float | None = None  # VTLP alpha: formants move by this factor
    reverb: tuple[float, float, float, int] | None = None  # rt60 s, DRR dB, pre-delay ms, noise seed
    babble: tuple[float, tuple[tuple[int, float], ...]] | None = None  # SNR dB, (bank index, offset share)
    telephone: tuple[float, float] | None = None  # band kept, Hz
    eq: tuple[tuple[float, float, float], ...] | None = None  # (centre Hz, gain dB, Q) per band
    clip: tuple[float, bool] | None = None  # drive dB, soft
    quantize: bool | None = None  # True: 8-bit mu-law, False: 8-bit linear
    lengthen: tuple[float, float] | None = None  # factor on the duration, share of each stretch's end
    pauses: float | None = None  # seconds of silence added inside each pause between stretches of speech

    @property
    def active(self) -> list[str]:
        return [name for name in NAMES if getattr(self, name) is not None]


def draw(settings: AugmentSettings, seed: tuple[int, int], bank_size: int = 0) -> Drawn:
    """The utterance's parameters, each augmentation from its own stream (drawn even when off)."""
    drawn = {}
    for index, name in enumerate(NAMES):
        rng = np.random.default_rng([seed[0], STREAM, index, seed[1]])
        config = getattr(settings, name)
        on = rng.random() < config.share
        value = _DRAW[name](config, rng, bank_size)
        if on and value is not None:
            drawn[name] = value
    return Drawn(**drawn)


def _log_uniform(rng: np.random.Generator, lo: float, hi: float) -> float:
    return float(np.exp(rng.uniform(np.log(lo), np.log(hi))))


_DRAW = {
    "speed": lambda c, rng, _: float(rng.uniform(*c.factor)),
    "pitch": lambda c, rng, _: float(rng.uniform(*c.semitones)),
    "warp": lambda c, rng, _: float(rng.uniform(*c.alpha)),
    "reverb": lambda c, rng, _: (
        float(rng.uniform(*c.rt60_s)),
        float(rng.uniform(*c.drr_db)),
        float(rng.uniform(*c.predelay_ms)),
        int(rng.integers(2**31)),
    ),
    "babble": lambda c, rng, bank: (
        float(rng.uniform(*c.snr_db)),
        tuple(
            (int(rng.integers(max(bank, 1))), float(rng.random()))
            for _ in range(int(rng.integers(c.talkers[0], c.talkers[1] + 1)))
        ),
    )
    if bank
    else None,
    "telephone": lambda c, rng, _: tuple(c.band_hz),
    "eq": lambda c, rng, _: tuple(
        (_log_uniform(rng, *EQ_HZ), float(rng.uniform(*c.gain_db)), float(rng.uniform(*EQ_Q)))
        for _ in range(int(rng.integers(c.bands[0], c.bands[1] + 1)))
    ),
    "clip": lambda c, rng, _: (float(rng.uniform(*c.drive_db)), bool(rng.random() < c.soft_share)),
    "quantize": lambda c, rng, _: bool(rng.random() < c.mu_law_share),
    "lengthen": lambda c, rng, _: (float(rng.uniform(*c.factor)), float(rng.uniform(*c.tail))),
    "pauses": lambda c, rng, _: float(rng.uniform(*c.extra_s)),
}


# ---------------------------------------------------------------------------- the speaker


def speed(speech: np.ndarray, factor: float, sample_rate: int) -> np.ndarray:
    """Kaldi's speed perturbation: play the samples `factor` times faster (tempo and pitch; duration / factor)."""
    return soxr.resample(speech, sample_rate * factor, sample_rate).astype(np.float32)


def pitch_shift(speech: np.ndarray, semitones: float, sample_rate: int) -> np.ndarray:
    """Pitch (and formants) up or down by `semitones`, duration kept (librosa: phase vocoder + resampling)."""
    librosa = import_librosa()  # late: 2-4 s to import, and only augmented corpora need it

    shifted = librosa.effects.pitch_shift(speech, sr=sample_rate, n_steps=semitones, res_type="soxr_hq")
    return shifted.astype(np.float32)


def warp(speech: np.ndarray, alpha: float, sample_rate: int, boundary_hz: float = 4800.0) -> np.ndarray:
    """Vocal-tract-length perturbation (Jaitly & Hinton 2013): the spectrum's frequency axis scaled by alpha.

    Piecewise linear as theirs, so that the band edge stays where it is: below a knee f -> alpha f,
    above it a line to Nyquist. Done on the STFT and resynthesized, so every front-end sees it:
    magnitudes move to their warped bins and, as in a phase vocoder, each bin's phase advances at
    the warped instantaneous frequency of its source (harmonics move with the formants).
    """
    n_fft, hop = 512, 128
    nyquist = sample_rate / 2
    boundary_hz = min(boundary_hz, 0.6 * nyquist)
    knee = boundary_hz * min(alpha, 1.0) / alpha

    def warped(f: np.ndarray) -> np.ndarray:
        return np.where(
            f <= knee, f * alpha, nyquist - (nyquist - boundary_hz * min(alpha, 1.0)) / (nyquist - knee) * (nyquist - f)
        )

    _, _, spec = _signal().stft(speech, sample_rate, nperseg=n_fft, noverlap=n_fft - hop)
    bins = spec.shape[0]
    freqs = np.linspace(0, nyquist, bins)
    source = np.interp(freqs, warped(freqs), freqs)  # for each output bin, the frequency it comes from
    position = source / nyquist * (bins - 1)
    low = np.clip(np.floor(position).astype(int), 0, bins - 2)
    frac = (position - low)[:, None]
    magnitude = (1 - frac) * np.abs(spec[low]) + frac * np.abs(spec[low + 1])
    # instantaneous frequency of each source bin (Hz), from its phase advance between frames
    expected = 2 * np.pi * np.arange(bins)[:, None] * hop / n_fft
    advance = np.diff(np.angle(spec), axis=1, prepend=np.angle(spec[:, :1])) - expected
    advance = (advance + np.pi) % (2 * np.pi) - np.pi
    inst_hz = (np.arange(bins)[:, None] + advance * n_fft / (2 * np.pi * hop)) * sample_rate / n_fft
    nearest = np.clip(np.rint(position).astype(int), 0, bins - 1)
    out_hz = warped(np.clip(inst_hz[nearest], 0, nyquist))
    phase = np.angle(spec[nearest][:, :1]) + np.cumsum(2 * np.pi * out_hz * hop / sample_rate, axis=1)
    _, out = _signal().istft(magnitude * np.exp(1j * phase), sample_rate, nperseg=n_fft, noverlap=n_fft - hop)
    return _fit(out, speech.size)


LENGTHEN_GAP_S = 0.1  # silence this long ends a stretch of speech (a pause, a comma, the end)
LENGTHEN_FLOOR_DB = 30.0  # 10 ms frames more than this below the loudest are silence
LENGTHEN_FADE_S = 0.01  # crossfade into the slowed end, so the join does not click


def speech_stretches(speech: np.ndarray, sample_rate: int) -> tuple[np.ndarray, np.ndarray, int]:
    """(first frames, ends (one past the last frame), frame length) of the stretches of speech between
    pauses: 10 ms frames within 30 dB of the loudest, LENGTHEN_GAP_S of quiet ending one. What
    `lengthen` slows the ends of and `longer_pauses` stretches the gaps between: one idea of a pause."""
    loud, frame = loud_frames(speech, sample_rate, LENGTHEN_FLOOR_DB)
    if loud.size == 0:
        return loud, loud, frame
    breaks = np.flatnonzero(np.diff(loud) > LENGTHEN_GAP_S * sample_rate / frame)  # frame gaps that are pauses
    return np.r_[loud[0], loud[breaks + 1]], np.r_[loud[breaks] + 1, loud[-1] + 1], frame


def lengthen(speech: np.ndarray, factor: float, tail: float, sample_rate: int) -> np.ndarray:
    """The end of each stretch of speech said slower: its last `tail` share takes `factor` times as long.

    People lengthen the syllable before a pause or at the end of a command (phrase-final
    lengthening), far more than voice engines do. A model that learned "a long last syllable
    is -teen" from engines hears a person's slow "fifty" as "fifteen" (docs/benchmarks.md
    "Longer ends before a pause"). A phase vocoder slows the end, pitch kept.
    """
    librosa = import_librosa()  # late: 2-4 s to import, and only augmented corpora need it

    starts, ends, frame = speech_stretches(speech, sample_rate)
    if starts.size == 0 or factor <= 1.0:
        return speech
    fade = int(LENGTHEN_FADE_S * sample_rate)
    ramp = np.linspace(0.0, 1.0, fade, dtype=np.float32)
    pieces, done = [], 0
    for start, end in zip(starts * frame, ends * frame):
        cut = end - int(tail * (end - start))
        if end - cut < 4 * frame or cut - done < fade:  # too short to slow, or no room to fade in
            continue
        slow = librosa.effects.time_stretch(speech[cut:end], rate=1.0 / factor, n_fft=512, hop_length=128)
        head = speech[done:cut].copy()
        head[-fade:] = head[-fade:] * (1 - ramp) + slow[:fade] * ramp
        pieces += [head, slow[fade:]]
        done = end
    pieces.append(speech[done:])
    return np.concatenate(pieces).astype(np.float32)


def longer_pauses(speech: np.ndarray, extra_s: float, sample_rate: int) -> np.ndarray:
    """Each pause between two stretches of speech (`speech_stretches`) made `extra_s` longer, with
    silence in its middle; the lead-in and the tail are left.

    An engine says a comma as a 0.2-0.3 s pause; a person stopping between the parts of a command
    stops longer, and a model that never heard a longer stop inside a command takes it for the end:
    her dates' last "five" after a 0.44 s pause was dropped ("fifty five" heard as "fifty").
    """
    starts, ends, frame = speech_stretches(speech, sample_rate)
    extra = int(extra_s * sample_rate)
    if starts.size == 0 or extra <= 0:
        return speech
    middles = ((ends[:-1] + starts[1:]) // 2) * frame  # the middle of each pause, in samples
    pieces = np.split(speech, middles)
    silence = np.zeros(extra, dtype=speech.dtype)
    return np.concatenate([p for piece in pieces[:-1] for p in (piece, silence)] + [pieces[-1]])


# ------------------------------------------------------------------------------ the room


def room_impulse(rt60: float, drr_db: float, predelay_ms: float, sample_rate: int, seed: int) -> np.ndarray:
    """A generated room impulse response: the direct path, then exponentially decaying noise.

    The tail's amplitude falls 60 dB in rt60 seconds (energy as exp(-13.8 t / rt60)), and its
    energy is that of the direct path less `drr_db`. Cheap (no room geometry) and enough for
    what a speech model hears of a room: smearing in time and colouring by the decay.
    """
    rng = np.random.default_rng(seed)
    delay = int(predelay_ms * sample_rate / 1000)
    length = int(min(1.2 * rt60, 2.0) * sample_rate)
    t = np.arange(length) / sample_rate
    tail = rng.standard_normal(length) * 10 ** (-3 * t / rt60)
    tail *= np.sqrt(10 ** (-drr_db / 10) / np.sum(tail**2))
    rir = np.zeros(delay + 1 + length)
    rir[delay] = 1.0
    rir[delay + 1 :] = tail
    return rir.astype(np.float32)


def reverberate(audio: np.ndarray, rir: np.ndarray) -> np.ndarray:
    """The audio heard through the room; same length (the tail rings into the padding that follows)."""
    return _signal().fftconvolve(audio, rir)[: audio.size].astype(np.float32)


@functools.lru_cache(maxsize=4)
def babble_bank(talkers: tuple[Talker, ...], sample_rate: int) -> tuple[np.ndarray, ...]:
    """Each babble sentence said once per process (the render workers keep theirs), unit RMS over its speech."""
    bank = []
    for talker in talkers:
        speech, rate_hz = say_alone(talker)
        if speech.ndim > 1:
            speech = speech.mean(axis=1)
        if rate_hz != sample_rate:
            speech = soxr.resample(speech, rate_hz, sample_rate)
        active = speech[np.abs(speech) > 0.02 * (np.abs(speech).max() or 1.0)]
        rms = float(np.sqrt(np.mean(np.square(active)))) if active.size else 1.0
        bank.append((speech / (rms or 1.0)).astype(np.float32))
    return tuple(bank)


def say_alone(talker: Talker) -> tuple[np.ndarray, int]:
    """A babble sentence said the same in every worker, whenever it is first needed: festival and
    piper by a process of their own (a worker's kept one is mid-job, and a sentence said there would
    change what it says next: synth.render_groups), piper seeded by the sentence."""
    how = engines.Delivery(rate=talker.rate, pitch=talker.pitch, amplitude=talker.amplitude,
                           stream=zlib.crc32(repr((talker.text, engines.voice_name(talker.voice))).encode()))  # fmt: skip
    return engines.speak_alone(talker.text, talker.voice, how)


def babble(n: int, picks: tuple[tuple[int, float], ...], bank: tuple[np.ndarray, ...]) -> np.ndarray:
    """Several talkers at once, each a bank sentence from a drawn offset, looped to `n` samples."""
    out = np.zeros(n, dtype=np.float32)
    for index, offset in picks:
        sentence = bank[index % len(bank)]
        start = int(offset * sentence.size)
        out += np.take(sentence, np.arange(start, start + n), mode="wrap")
    return out


# ---------------------------------------------------------------------------- the channel


def telephone(audio: np.ndarray, band_hz: tuple[float, float], sample_rate: int) -> np.ndarray:
    """A phone line: through 8 kHz and back, and only `band_hz` kept (8th-order Butterworth band-pass)."""
    narrow = soxr.resample(audio, sample_rate, TELEPHONE_RATE) if sample_rate > TELEPHONE_RATE else audio
    rate = min(sample_rate, TELEPHONE_RATE)
    high = min(band_hz[1], 0.49 * rate)
    sos = _signal().butter(8, [band_hz[0], high], btype="bandpass", fs=rate, output="sos")
    narrow = _signal().sosfilt(sos, narrow)
    back = soxr.resample(narrow, rate, sample_rate) if sample_rate > rate else narrow
    return _fit(back, audio.size)


def equalize(audio: np.ndarray, bands: tuple[tuple[float, float, float], ...], sample_rate: int) -> np.ndarray:
    """A microphone's colour: peaking biquads (RBJ's cookbook), one per (centre Hz, gain dB, Q)."""
    out = audio.astype(np.float64)
    for centre, gain_db, q in bands:
        w0 = 2 * np.pi * min(centre, 0.45 * sample_rate) / sample_rate
        a_gain, alpha = 10 ** (gain_db / 40), np.sin(w0) / (2 * q)
        b = [1 + alpha * a_gain, -2 * np.cos(w0), 1 - alpha * a_gain]
        a = [1 + alpha / a_gain, -2 * np.cos(w0), 1 - alpha / a_gain]
        out = _signal().lfilter(b, a, out)
    return out.astype(np.float32)


def clip(audio: np.ndarray, drive_db: float, soft: bool) -> np.ndarray:
    """An overdriven input: gain `drive_db` over the peak, then a hard limit or tanh; back to the old peak."""
    peak = float(np.abs(audio).max())
    if peak == 0:
        return audio
    driven = audio / peak * 10 ** (drive_db / 20)
    limited = np.tanh(driven) if soft else np.clip(driven, -1.0, 1.0)
    return (limited * peak).astype(np.float32)


def mu_law_encode(audio: np.ndarray) -> np.ndarray:
    x = np.clip(audio, -1.0, 1.0)
    return np.sign(x) * np.log1p(MU * np.abs(x)) / np.log1p(MU)


def mu_law_decode(encoded: np.ndarray) -> np.ndarray:
    return np.sign(encoded) * ((1 + MU) ** np.abs(encoded) - 1) / MU


def quantize(audio: np.ndarray, mu_law: bool) -> np.ndarray:
    """8 bits a sample: mu-law (G.711's companding, fine steps for quiet sounds) or linear (coarse)."""
    levels = 2**8 - 1
    if mu_law:
        encoded = np.round((mu_law_encode(audio) + 1) / 2 * levels) / levels * 2 - 1
        return mu_law_decode(encoded).astype(np.float32)
    return (np.round((np.clip(audio, -1.0, 1.0) + 1) / 2 * levels) / levels * 2 - 1).astype(np.float32)


def _fit(audio: np.ndarray, n: int) -> np.ndarray:
    """`audio` cut or zero-padded to n samples (a resampling round trip can be a sample off)."""
    out = np.zeros(n, dtype=np.float32)
    out[: min(n, audio.size)] = audio[:n]
    return out


# ----------------------------------------------------------------------- applied in render


def apply_speaker(speech: np.ndarray, drawn: Drawn, sample_rate: int) -> np.ndarray:
    """Speed, pitch and vocal-tract warp of the speech alone (before padding)."""
    if speech.size == 0:
        return speech
    if drawn.speed is not None:
        speech = speed(speech, drawn.speed, sample_rate)
    if drawn.pitch is not None:
        speech = pitch_shift(speech, drawn.pitch, sample_rate)
    if drawn.warp is not None:
        speech = warp(speech, drawn.warp, sample_rate)
    if drawn.lengthen is not None:
        speech = lengthen(speech, *drawn.lengthen, sample_rate)
    if drawn.pauses is not None:
        speech = longer_pauses(speech, drawn.pauses, sample_rate)
    return speech


def apply_room(audio: np.ndarray, drawn: Drawn, augment: Augment, sample_rate: int, speaking: bool) -> np.ndarray:
    """Reverberation of the padded utterance, then babble under it (speech only: babble is not 'nothing')."""
    if drawn.reverb is not None:
        audio = reverberate(audio, room_impulse(*drawn.reverb[:3], sample_rate, drawn.reverb[3]))
    if drawn.babble is not None and speaking and augment.talkers:
        from seqx.data.noise import mix_at_snr

        crowd = babble(audio.size, drawn.babble[1], babble_bank(augment.talkers, sample_rate))
        rms = float(np.sqrt(np.mean(np.square(crowd)))) or 1.0
        audio = mix_at_snr(audio, crowd / np.float32(rms), drawn.babble[0])
    return audio.astype(np.float32)


def apply_channel(audio: np.ndarray, drawn: Drawn, sample_rate: int) -> np.ndarray:
    """Telephone band, EQ, clipping, then 8-bit quantization (of audio already within +-1)."""
    if drawn.telephone is not None:
        audio = telephone(audio, drawn.telephone, sample_rate)
    if drawn.eq is not None:
        audio = equalize(audio, drawn.eq, sample_rate)
    if drawn.clip is not None:
        audio = clip(audio, *drawn.clip)
    peak = float(np.abs(audio).max())
    if peak > 0.99:
        audio = audio * (0.99 / peak)
    if drawn.quantize is not None:
        audio = quantize(audio, drawn.quantize)
    return audio.astype(np.float32)
