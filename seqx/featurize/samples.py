"""Reading audio without torch: `read_samples(path, sample_rate)` -> a float32 numpy array.

The one implementation of reading a file: seqx.featurize.audio (the torch path) wraps it in
a tensor, and the torch-free runtime (seqx.runtime) and `seqx listen --input FILE` use it as
it is, so an exported model hears a file exactly as the bundle does.

soundfile reads wav/flac/ogg (and mp3 with libsndfile >= 1.1) without decoding through
ffmpeg. Other containers, what phones and browsers record (m4a/aac, webm, mp4), are decoded by
PyAV, whose wheel carries FFmpeg's libraries (no system ffmpeg, which audioread needs and a
fresh machine lacks); librosa (audioread) is the last resort. soxr resamples.
"""

from __future__ import annotations

import re
import warnings
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from seqx.errors import AudioError
from seqx.librosa_import import import_librosa

# What a folder of audio is taken to hold (`seqx transcribe FOLDER`, a folder of recordings with .txt)
AUDIO_SUFFIXES = (".wav", ".wave", ".flac", ".ogg", ".oga", ".opus", ".mp3", ".m4a", ".aac", ".mp4", ".webm",
                  ".aiff", ".aif")  # fmt: skip
# Containers libsndfile reads itself; when it fails on one the file is broken, and
# trying librosa/audioread (ffmpeg) after it would only cost seconds.
SOUNDFILE_ONLY = {".wav", ".wave", ".flac", ".ogg", ".oga", ".aif", ".aiff", ".au", ".w64"}


def _first_line(err: BaseException) -> str:
    line = (str(err).splitlines() or [type(err).__name__])[0]
    return re.sub(r"^Error opening .*?: ", "", line)  # the path is already at the front of AudioError


# A file is clipped when this share of its samples sits at its peak: a microphone's gain set too high
# flattens every loud vowel there. Hard clipping 6 dB into full scale put 0.5-10% of a flite command's
# samples at the peak (median 1.7%); no recording of bench/human.py's people (892 files) had more than
# 0.12% within 1% of theirs. And it matters: 24 flite commands right 24 times clean, 18 times clipped
# 6 dB (5 of the 6 another command), 10 times clipped 12 dB (docs/benchmarks.md "Quiet and clipped
# recordings"). Measured before resampling, whose ringing hides the flat tops.
CLIPPED_SHARE = 0.003
_CLIP_PEAK = 0.1  # below this peak a file is not called clipped: a near-silent file's few levels all repeat


class Audio(NamedTuple):
    samples: np.ndarray  # mono float32 in [-1, 1] at the rate asked for
    clipped: float  # share of the file's own samples at its peak when it is clipped (CLIPPED_SHARE), else 0


def clipped_share(samples: np.ndarray) -> float:
    """The share of `samples` (any shape, as read) at their peak level, when that says clipping; else 0."""
    magnitude = np.abs(samples)
    peak = float(magnitude.max()) if magnitude.size else 0.0
    if peak < _CLIP_PEAK:
        return 0.0
    share = float(np.mean(magnitude >= peak * 0.999))
    return share if share >= CLIPPED_SHARE else 0.0


def read_samples(path: str | Path, sample_rate: int) -> np.ndarray:
    """Mono float32 samples in [-1, 1] at `sample_rate`, shape (T,). Silence is fine; broken files are not."""
    return read_audio(path, sample_rate).samples


def read_audio(path: str | Path, sample_rate: int) -> Audio:
    """`read_samples` and whether the file is clipped (`clipped_share`), which `seqx transcribe` warns of."""
    import soundfile as sf

    path = Path(path)
    if not path.is_file():
        raise AudioError(path, "no such file")
    if path.stat().st_size == 0:
        raise AudioError(path, "empty file (0 bytes)")
    try:
        samples, rate = sf.read(path, dtype="float32")  # ints scaled to [-1, 1) by libsndfile
    except (RuntimeError, sf.LibsndfileError, TypeError) as err:
        if path.suffix.lower() in SOUNDFILE_ONLY:  # libsndfile owns these formats: a second opinion cannot help
            raise AudioError(path, f"unreadable audio ({_first_line(err)})") from None
        samples, rate = _read_other_container(path)
    clipped = clipped_share(samples)  # each channel as recorded: mixing two can round a flat top off
    if samples.ndim == 2:  # (T, channels): mix down
        samples = samples.mean(axis=1, dtype=np.float32)
    if samples.size == 0:
        raise AudioError(path, "empty audio (no samples)")
    if not np.isfinite(samples).all():
        raise AudioError(path, "audio has NaN/inf samples")
    if rate != sample_rate:
        import soxr

        samples = soxr.resample(samples, rate, sample_rate)
    return Audio(np.ascontiguousarray(samples, dtype=np.float32), clipped)


def _read_other_container(path: Path) -> tuple[np.ndarray, int]:
    """A file libsndfile cannot read: PyAV (m4a, webm, mp4, aac ...), else librosa/audioread."""
    try:
        import av
    except ImportError:
        av = None
    if av is not None:
        try:
            return _read_with_av(av, path)
        except AudioError:
            raise
        except Exception as err:  # FFmpeg's errors are many types; none of them a second reader would fix
            said = getattr(err, "strerror", None) or _first_line(err)  # FFmpeg's words without the path again
            raise AudioError(path, f"unreadable or unsupported audio ({said})") from None
    try:
        librosa = import_librosa()

        with warnings.catch_warnings():  # librosa warns that it fell back to audioread: we know
            warnings.simplefilter("ignore")
            return librosa.load(path, sr=None, mono=True)
    except Exception as err:  # audioread raises many unrelated types (and librosa may not be installed)
        hint = "; pip install av reads it" if type(err).__name__ == "NoBackendError" else ""
        raise AudioError(path, f"unreadable or unsupported audio ({type(err).__name__}{hint})") from None


def _read_with_av(av: Any, path: Path) -> tuple[np.ndarray, int]:  # av: the module, imported lazily
    """The first audio stream, mixed to mono float32 at its own rate."""
    with av.open(str(path)) as container:
        stream = next((s for s in container.streams if s.type == "audio"), None)
        if stream is None:
            raise AudioError(path, "no audio stream in the file")
        rate = stream.codec_context.sample_rate or stream.rate
        mono = av.AudioResampler(format="flt", layout="mono", rate=rate)
        chunks = [out.to_ndarray().reshape(-1) for frame in container.decode(stream) for out in mono.resample(frame)]
        chunks += [out.to_ndarray().reshape(-1) for out in mono.resample(None)]  # what the resampler still holds
    return (np.concatenate(chunks) if chunks else np.zeros(0, np.float32)), int(rate)
