"""Reading audio without torch: `read_samples(path, sample_rate)` -> a float32 numpy array.

The one implementation of reading a file: seqx.featurize.audio (the torch path) wraps it in
a tensor, and the torch-free runtime (seqx.runtime) and `seqx listen --input FILE` use it as
it is, so an exported model hears a file exactly as the bundle does.

soundfile reads wav/flac/ogg (and mp3 with libsndfile >= 1.1) without decoding through
ffmpeg; librosa (audioread) is the fallback for other containers, imported only then (it
takes a second to import). soxr resamples.
"""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import numpy as np

from seqx.errors import AudioError
from seqx.librosa_import import import_librosa

# Containers libsndfile reads itself; when it fails on one the file is broken, and
# trying librosa/audioread (ffmpeg) after it would only cost seconds.
SOUNDFILE_ONLY = {".wav", ".wave", ".flac", ".ogg", ".oga", ".aif", ".aiff", ".au", ".w64"}


def _first_line(err: BaseException) -> str:
    line = (str(err).splitlines() or [type(err).__name__])[0]
    return re.sub(r"^Error opening .*?: ", "", line)  # the path is already at the front of AudioError


def read_samples(path: str | Path, sample_rate: int) -> np.ndarray:
    """Mono float32 samples in [-1, 1] at `sample_rate`, shape (T,). Silence is fine; broken files are not."""
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
        try:
            librosa = import_librosa()

            with warnings.catch_warnings():  # librosa warns that it fell back to audioread: we know
                warnings.simplefilter("ignore")
                samples, rate = librosa.load(path, sr=None, mono=True)
        except Exception as err:  # audioread raises many unrelated types (and librosa may not be installed)
            raise AudioError(path, f"unreadable or unsupported audio ({type(err).__name__})") from None
    if samples.ndim == 2:  # (T, channels): mix down
        samples = samples.mean(axis=1, dtype=np.float32)
    if samples.size == 0:
        raise AudioError(path, "empty audio (no samples)")
    if not np.isfinite(samples).all():
        raise AudioError(path, "audio has NaN/inf samples")
    if rate != sample_rate:
        import soxr

        samples = soxr.resample(samples, rate, sample_rate)
    return np.ascontiguousarray(samples, dtype=np.float32)
