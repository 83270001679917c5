"""Audio sources for `seqx listen`: float32 mono blocks at 16 kHz, whatever the input.

Every source is an iterator of 1-D float32 numpy blocks in [-1, 1] at `SAMPLE_RATE`,
so the VAD and the endpointer never know where the audio came from. Time is counted
in samples downstream, never read from a clock, which is what makes a file played
as fast as possible give the same segments as the same audio through a microphone.
"""

from __future__ import annotations

import queue
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import BinaryIO

import numpy as np
import soxr

from seqx.errors import SeqxError

SAMPLE_RATE = 16000  # what Silero VAD and the models here take
BLOCK = 512  # 32 ms at 16 kHz: one VAD window per block from the microphone


class AudioSourceError(SeqxError):
    """No microphone, a PortAudio failure, or an input that cannot be read: one printable line."""


FULL_SCALE = 0.999  # a sample this loud is at the converter's limit (int16 32767 is 0.99997)
CLIPPING = "the input is clipped (its loudest sounds flattened at full scale): turn the microphone's gain down"


class ClipWatch:
    """Calls `warn(CLIPPING)` once, the first time a second of a live input (`rate`: samples a second,
    every channel's) has `CLIPPED_SHARE` of its samples at full scale (seqx/featurize/samples.py: 6 dB
    of clipping costs a quarter of the right answers). Fed the samples as they arrive, before resampling,
    whose ringing hides the flat tops."""

    def __init__(self, rate: int, warn: Callable[[str], None]) -> None:
        self.rate, self.warn = rate, warn
        self.at_full = self.seen = 0
        self.told = False

    def feed(self, samples: np.ndarray) -> None:
        from seqx.featurize.samples import CLIPPED_SHARE

        if self.told:
            return
        self.at_full += int(np.count_nonzero(np.abs(samples) >= FULL_SCALE))
        self.seen += samples.size
        if self.seen >= self.rate:
            if self.at_full >= CLIPPED_SHARE * self.seen:
                self.told = True
                self.warn(CLIPPING)
            self.at_full = self.seen = 0


def microphone_blocks(
    device: str | int | None = None, block: int = BLOCK, rate: int = SAMPLE_RATE,
    on_clipping: Callable[[str], None] | None = None, channels: int = 1,
) -> Iterator[np.ndarray]:
    """Blocks from a PortAudio input device (the default one when `device` is None), at 16 kHz.

    The device is opened at `rate`; one that refuses 16 kHz (a USB microphone or a Raspberry Pi's
    card through raw ALSA takes 44.1 or 48 kHz only) is opened again at its own default rate, and
    either way a rate other than 16 kHz goes through soxr's streaming resampler. PortAudio calls back
    on its own thread; a queue hands the blocks over. The stream opens on the first `next()` and
    closes when the iterator is closed (Ctrl-C included). `on_clipping`: told once if the input clips.
    `channels`: how many to open, mixed to mono. With 1, PortAudio's ALSA host gives a device that
    records two or more only its first channel, which a microphone array's firmware beamforms into.
    """
    try:
        import sounddevice as sd
    except OSError as err:  # sounddevice raises OSError when libportaudio2 is missing
        raise AudioSourceError(f"microphone: PortAudio is not installed ({err})") from None
    blocks: queue.Queue[np.ndarray] = queue.Queue()

    def callback(indata: np.ndarray, frames: int, when: object, status: object) -> None:
        blocks.put(indata.copy())  # (frames, channels): mixed in _drain, after the clip watch heard each

    def opened(at: int) -> object:
        return sd.InputStream(samplerate=at, channels=channels, dtype="float32", blocksize=block * at // SAMPLE_RATE,
                              device=device, callback=callback)  # fmt: skip

    what = "the default input device" if device is None else f"input device {device!r}"
    try:
        try:
            stream = opened(rate)
        except sd.PortAudioError as err:
            own = _own_rate(sd, device)
            if rate != SAMPLE_RATE or "sample rate" not in str(err).lower() or own in (None, rate):
                raise
            rate = own  # it refused 16 kHz: its own rate, resampled here (and named if that fails too)
            stream = opened(rate)
    except (sd.PortAudioError, ValueError) as err:  # ValueError: "No input device matching ..."
        raise AudioSourceError(f"microphone: cannot open {what} at {rate} Hz ({_first_line(err)})") from None
    return _drain(stream, blocks, rate, None if on_clipping is None else ClipWatch(rate * channels, on_clipping))


def _own_rate(sd: object, device: str | int | None) -> int | None:
    """The device's default sample rate, None when PortAudio cannot say."""
    try:
        return int(sd.query_devices(device, "input")["default_samplerate"])  # type: ignore[attr-defined]
    except (ValueError, KeyError, TypeError):
        return None


def _drain(stream: object, blocks: queue.Queue[np.ndarray], rate: int, watch: ClipWatch | None) -> Iterator[np.ndarray]:
    resampler = soxr.ResampleStream(rate, SAMPLE_RATE, 1, dtype="float32") if rate != SAMPLE_RATE else None
    with stream:  # type: ignore[attr-defined]
        while True:
            try:
                frames = blocks.get(timeout=2.0)
            except queue.Empty:
                raise AudioSourceError("microphone: no audio for 2 s (device stopped delivering)") from None
            samples = _mono(frames, watch)
            if resampler is not None:
                samples = resampler.resample_chunk(samples)
            if samples.size:
                yield samples


def pcm_blocks(
    stream: BinaryIO | None = None, rate: int = SAMPLE_RATE, block: int = BLOCK,
    on_clipping: Callable[[str], None] | None = None, channels: int = 1,
) -> Iterator[np.ndarray]:
    """Raw signed 16-bit little-endian PCM (what `arecord -f S16_LE -c 1` writes) at `rate`, `channels`
    interleaved (a USB microphone that records stereo only: `arecord -c 2`) and mixed to mono.

    Read in small pieces so a live pipe is answered as soon as each block arrives; a rate
    other than 16 kHz goes through soxr's streaming resampler, which keeps its state between
    blocks (resampling each block alone would click at every boundary).
    """
    stream = stream if stream is not None else sys.stdin.buffer
    watch = None if on_clipping is None else ClipWatch(rate * channels, on_clipping)
    resampler = soxr.ResampleStream(rate, SAMPLE_RATE, 1, dtype="float32") if rate != SAMPLE_RATE else None
    want = block * 2 * channels * max(1, round(rate / SAMPLE_RATE))
    carry = b""
    while True:
        data = stream.read1(want) if hasattr(stream, "read1") else stream.read(want)
        last = not data
        data, carry = _whole_frames(carry + data, channels)
        samples = _mono(np.frombuffer(data, dtype="<i2").astype(np.float32).reshape(-1, channels) / 32768.0, watch)
        if resampler is not None:
            samples = resampler.resample_chunk(samples, last=last)
        if samples.size:
            yield samples
        if last:
            return


def _mono(frames: np.ndarray, watch: ClipWatch | None) -> np.ndarray:
    """(frames, channels) as one channel, the mean of them; `watch` hears every channel first, since a
    channel that clips can be hidden by the mix."""
    if watch is not None:
        watch.feed(frames.reshape(-1))
    return frames.mean(axis=1, dtype=np.float32) if frames.shape[1] > 1 else frames[:, 0]


def _whole_frames(data: bytes, channels: int = 1) -> tuple[bytes, bytes]:
    """A frame's first bytes wait for the rest of it in the next read."""
    cut = len(data) - len(data) % (2 * channels)
    return data[:cut], data[cut:]


def file_blocks(
    path: str | Path, realtime: bool = False, block: int = BLOCK, on_clipping: Callable[[str], None] | None = None
) -> Iterator[np.ndarray]:
    """A file (any format `read_samples` reads) played as if live: as fast as possible, or paced to the clock."""
    from seqx.featurize.samples import read_audio  # the one reader, torch-free (an exported model needs no torch)

    wave, clipped = read_audio(path, SAMPLE_RATE)
    if clipped and on_clipping is not None:
        on_clipping(CLIPPING)
    started = time.monotonic()
    for first in range(0, wave.size, block):
        if realtime:  # a block is handed over when it would have finished arriving from a microphone
            due = started + (first + block) / SAMPLE_RATE
            time.sleep(max(0.0, due - time.monotonic()))
        yield wave[first : first + block]


def open_source(
    spec: str, rate: int = SAMPLE_RATE, realtime: bool = False, device: str | int | None = None,
    on_clipping: Callable[[str], None] | None = None, channels: int = 1,
) -> Iterator[np.ndarray]:
    """`mic` (the microphone), `-` (raw PCM on stdin at `rate`, `channels` interleaved) or a file path
    (mixed to mono as it is read); `on_clipping` is told once, with a line to show, when the input clips."""
    if spec == "mic":
        return microphone_blocks(device, rate=rate, on_clipping=on_clipping, channels=channels)
    if spec == "-":
        return pcm_blocks(sys.stdin.buffer, rate, on_clipping=on_clipping, channels=channels)
    return file_blocks(spec, realtime=realtime, on_clipping=on_clipping)


def _first_line(err: BaseException) -> str:
    return (str(err).splitlines() or [type(err).__name__])[0]
