"""A wake word before each command: openWakeWord's models, run on the speech embedding seqx already has.

Why: a resident listener that decodes everything it hears answers the television and the
people talking in the room; the standard cure (Alexa, Rhasspy, Mycroft) is a word that has to be
said first. The `openwakeword==0.5.1` wheel that gives seqx its speech embedding also ships four
wake-word models trained on real speech ("alexa", "hey jarvis", "hey mycroft", "hey rhasspy"), each
a small classifier over 16 consecutive embeddings (1.28 s); any openWakeWord model file of the
same shape (one you trained with openWakeWord's recipe) works too.

The embeddings are computed as the audio comes, as openWakeWord streams them: the mel frames of
every 80 ms of new audio (the graph run on exactly that span each time: its dB floor follows the
loudest frame it is given, so the span, not the block size, sets the numbers), one embedding per 8
new frames over the last 76, and one score per embedding. A tiny
dither (-80 dBFS) goes into what the detector hears: digital silence, which files and piped PCM
have and microphones never do, gives the log-Mel floor values the models never heard (piper's
"hey jarvis" after two seconds of zeros scored 0.19, dithered 1.00; docs/benchmarks.md "A wake word").

`WakeGate` decides what a segment of the stream is: a command said with the wake word before it
("hey jarvis, turn on the lights": the audio after the word is decoded), the wake word alone (the
next command starting within `follow_s` is decoded whole), or speech without it (not decoded).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from seqx.errors import SeqxError
from seqx.featurize.embedding import (
    DIM, INT16_SCALE, MAX_WINDOWS, MEL_BANDS, MEL_FFT, MEL_HOP, SAMPLE_RATE, STRIDE, WINDOW, whole_embeddings,
)  # fmt: skip

MODEL_SUFFIX = "_v0.1.onnx"
EXPORT_FILE = "wake_word.onnx"  # an export folder's wake word (`seqx export --wake-word`), named in its config
SHIPPED = ("alexa", "hey_jarvis", "hey_mycroft", "hey_rhasspy")  # in openwakeword 0.5.1's wheel
DITHER = 1e-4  # of full scale (-80 dBFS): what a microphone's self-noise always gives
# the audio kept before the quietest point looked for: the score crosses the threshold 0-0.17 s after
# the word ends (seqx's voices, "hey jarvis, ..."), so the word's end lies in the last 0.3 s heard
CUT_LOOKBACK_S = 0.3
CUT_LOOKAHEAD_S = 0.05
CUT_FRAME = 160  # 10 ms frames to find the quietest point in
MIN_COMMAND_S = 0.3  # less speech than this after the wake word: it was said alone
EARLIER_CUTS_S = (0.3, 0.2, 0.1)  # the other cuts tried beside the quietest point (cut_points)
# a score dips and rises again within one saying of the word (seqx's voices: 2-3 crossings in 0.5 s
# for 9 of 80 streams): another wake counts only this long after the last
REFRACTORY_S = 1.5


def wake_model_path(name: str) -> Path:
    """A shipped model's file ("hey jarvis", "hey_jarvis" or "hey-jarvis") or an .onnx file given by path."""
    if name.endswith(".onnx") or "/" in name:
        path = Path(name)
        if not path.is_file():
            raise SeqxError(f"{name}: no such wake-word model file")
        return path
    from seqx.runtime.embedding import package_models

    key = name.strip().lower().replace(" ", "_").replace("-", "_")
    if key not in SHIPPED:
        known = ", ".join(s.replace("_", " ") for s in SHIPPED)
        raise SeqxError(f"unknown wake word {name!r}: the shipped ones are {known} (or give an openWakeWord .onnx file)")
    path = package_models() / f"{key}{MODEL_SUFFIX}"
    if not path.is_file():
        raise SeqxError(f"{path}: missing from the installed openwakeword package")
    return path


def wake_word_label(name: str) -> str:
    """How a wake word is shown and matched: "hey jarvis" for "Hey Jarvis" or hey_jarvis, a file's stem
    otherwise ("my word" for /x/my_word.onnx)."""
    stem = Path(name).name.removesuffix(".onnx").removesuffix(MODEL_SUFFIX.removesuffix(".onnx"))
    return " ".join(stem.replace("_", " ").replace("-", " ").lower().split())


def exported_wake_word(folder: Path) -> str | None:
    """The wake word an export folder carries (its label), or None."""
    import json

    try:
        config = json.loads((folder / "config.json").read_text())
    except (OSError, ValueError):
        return None
    label = config.get("export", {}).get("wake_word")
    return label if label and (folder / EXPORT_FILE).is_file() else None


def open_wake_model(path: Path) -> tuple[Any, str, int]:
    """(session, input name, embedding frames it scores) of an openWakeWord model; a file that is not
    one (or not a loadable graph) is one SeqxError line. One thread: a step is a fraction of a ms."""
    from seqx.runtime.model import onnx_session

    session = onnx_session(path, 1)
    wake_input = session.get_inputs()[0]
    shape = wake_input.shape
    if len(shape) != 3 or shape[2] != DIM or not isinstance(shape[1], int):
        raise SeqxError(f"{path}: not an openWakeWord model (its input is {shape}, not (1, frames, {DIM}))")
    return session, wake_input.name, int(shape[1])


@dataclass
class Wake:
    """The wake word heard: `time` is the end of the audio the detector had heard when the score
    crossed the threshold (stream seconds), `score` that first score over it."""

    time: float
    score: float


class WakeDetector:
    """Feed 16 kHz float blocks of any size; get the wake words they complete."""

    def __init__(self, model: Path, threshold: float = 0.5, dither: float = DITHER, graphs_folder: Path | None = None) -> None:
        """`graphs_folder`: an export folder whose mel and whole-utterance embedding graphs to use (the
        same numbers, no openwakeword package needed); None: the installed package's."""
        from seqx.runtime.embedding import graphs
        from seqx.runtime.model import onnx_session

        self.wake_session, self.wake_input, self.frames = open_wake_model(model)
        mel_graph, embedding_graph, self.whole = graphs(graphs_folder)
        self.mel_session = onnx_session(mel_graph, 1)  # a few hundred microseconds a step: threads only add wake-ups
        self.embedding_session = onnx_session(embedding_graph, 1)
        self.threshold, self.dither = threshold, dither
        self.trace: list[tuple[float, float]] | None = None  # (time, score) of every step, when a caller asks
        self.rng = np.random.default_rng(0)
        self.audio = np.zeros(0, np.float32)  # int16-scaled samples from `audio_base` on
        self.audio_base = 0
        self.mel = np.zeros((0, MEL_BANDS), np.float32)  # mel frames from `mel_base` on
        self.mel_base = 0
        self.embeddings = np.zeros((0, DIM), np.float32)  # the last `frames` embeddings: what the model scores
        self.next_embedding = 0  # index of the next embedding to make
        self.last_wake = -REFRACTORY_S
        # the first score needs 2 s of audio behind it (16 embeddings of 0.76 s, 80 ms apart): the
        # detector starts as if it had heard 2 s of a quiet room, so a wake word in the stream's first
        # seconds is scored too, and stream time 0 is the first sample fed after it
        self.lead = (WINDOW - 1 + STRIDE * (self.frames - 1)) * MEL_HOP + MEL_FFT
        self.feed(np.zeros(self.lead, np.float32))

    def feed(self, block: np.ndarray) -> list[Wake]:
        noisy = block.astype(np.float32) + self.rng.normal(0.0, self.dither, block.size).astype(np.float32)
        self.audio = np.concatenate([self.audio, noisy * INT16_SCALE])
        self._new_mel()
        return self._new_wakes()

    def _new_mel(self) -> None:
        """The mel frames the audio now completes, 8 (80 ms) at a time: the graph's dB floor is set by
        the loudest frame of what it is given, so every run gets the same span whatever the block size."""
        while True:
            first = self.mel_base + self.mel.shape[0]  # the next frame wanted
            last = first + STRIDE - 1
            if last * MEL_HOP + MEL_FFT > self.audio_base + self.audio.size:
                return
            begin = first * MEL_HOP - self.audio_base
            chunk = self.audio[begin : last * MEL_HOP + MEL_FFT - self.audio_base]
            frames = self.mel_session.run(None, {"input": chunk[None]})[0].reshape(-1, MEL_BANDS) / 10.0 + 2.0
            self.mel = np.concatenate([self.mel, frames.astype(np.float32)])
            keep_from = (last + 1) * MEL_HOP - self.audio_base  # frame last + 1 starts here
            self.audio, self.audio_base = self.audio[keep_from:], self.audio_base + keep_from

    def _new_wakes(self) -> list[Wake]:
        first = self.next_embedding
        ready = (self.mel_base + self.mel.shape[0] - WINDOW) // STRIDE + 1  # embeddings the frames allow
        if ready <= first:
            return []
        if self.whole:  # the export's graph: all the new windows in one run over the frames they cover
            part = self.mel[STRIDE * first - self.mel_base : STRIDE * (ready - 1) + WINDOW - self.mel_base]
            new = whole_embeddings(self.embedding_session, part, MAX_WINDOWS)
        else:
            starts = [STRIDE * i - self.mel_base for i in range(first, ready)]
            windows = np.stack([self.mel[s : s + WINDOW] for s in starts])[..., None]
            new = self.embedding_session.run(None, {"input_1": windows})[0].reshape(-1, DIM)
        self.next_embedding = ready
        drop = STRIDE * ready - self.mel_base  # frames before the next window's first are done with
        self.mel, self.mel_base = self.mel[drop:], self.mel_base + drop
        wakes = []
        for offset, embedding in enumerate(new):
            self.embeddings = np.concatenate([self.embeddings, embedding[None]])[-self.frames :]
            if self.embeddings.shape[0] < self.frames:
                continue
            score = float(self.wake_session.run(None, {self.wake_input: self.embeddings[None]})[0].reshape(-1)[0])
            heard_to = ((STRIDE * (first + offset) + WINDOW - 1) * MEL_HOP + MEL_FFT - self.lead) / SAMPLE_RATE
            if self.trace is not None:
                self.trace.append((heard_to, score))
            if score >= self.threshold and heard_to - self.last_wake >= REFRACTORY_S:
                wakes.append(Wake(time=heard_to, score=score))
                self.last_wake = heard_to
        return wakes


class WakeGate:
    """What each segment of the stream is, given the wake words heard.

    `hear(window)` gets the stream window by window before the endpointer does (and calls `on_wake` for
    each wake word as it is heard), so by the time a segment ends every wake word up to its end is
    known; `command(...)` then gives the ways to cut the word off the segment, or none: speech without
    the wake word, or the wake word said alone (which opens `follow_s` seconds for the next command)."""

    def __init__(
        self, detector: WakeDetector, follow_s: float = 4.0, label: str = "wake word",
        on_wake: Callable[[Wake], None] | None = None,
    ) -> None:
        self.detector, self.follow_s, self.label, self.on_wake = detector, follow_s, label, on_wake
        self.heard: list[Wake] = []
        self.open_until = -1.0  # stream time until which a command needs no wake word of its own

    def hear(self, window: np.ndarray) -> None:
        """The next audio of the stream, as the VAD hears it (raised when the microphone is quiet)."""
        for wake in self.detector.feed(window):
            self.heard.append(wake)
            if self.on_wake is not None:  # as soon as it is heard: a person waits for a sign
                self.on_wake(wake)

    def command(self, start: float, end: float, offset: float, samples: np.ndarray) -> tuple[list[np.ndarray], Wake | None]:
        """(the audio to decode: the ways to cut the word off, best first, or none; the wake word this
        segment holds or answers to).

        `start`/`end`: the speech; `offset`: stream time of `samples[0]`."""
        audio_end = offset + samples.size / SAMPLE_RATE
        before = [w for w in self.heard if w.time < offset]
        inside = [w for w in self.heard if offset <= w.time <= audio_end]
        self.heard = [w for w in self.heard if w.time > audio_end]
        for wake in before:  # heard where no segment was (a quiet word the VAD missed): it still opens
            self.open_until = max(self.open_until, wake.time + self.follow_s)
        if inside:
            wake = inside[-1]
            cuts = cut_points(samples, wake.time - offset)
            if end - (offset + cuts[0] / SAMPLE_RATE) < MIN_COMMAND_S:  # the wake word alone
                self.open_until = wake.time + self.follow_s
                return [], wake
            self.open_until = -1.0
            return [samples[cut:] for cut in cuts], wake
        if start <= self.open_until:
            self.open_until = -1.0
            return [samples], Wake(time=start, score=0.0)
        return [], None


def cut_points(samples: np.ndarray, heard_to_s: float) -> list[int]:
    """Where the command may start, best first: the quietest point, then EARLIER_CUTS_S before the
    time the word was heard (session._surest: the first when understood, else what two others agree on).

    Why several: said without a pause ("hey jarvis turn on..."), the quietest point is often a
    consonant's closure inside the command ("jarvis set a timer": the t of "set"); flite's kal and
    slt and piper's joe, 40 such commands each: 87 of 120 right cut once, 112 with the earlier cuts
    beside it, and the same as before where there was a pause (docs/benchmarks.md "A wake word")."""
    best = quietest_point(samples, heard_to_s)
    earlier = [round((heard_to_s - s) * SAMPLE_RATE) for s in EARLIER_CUTS_S]
    return [best] + [c for c in earlier if 0 < c < samples.size and abs(c - best) > 4 * CUT_FRAME]


def quietest_point(samples: np.ndarray, heard_to_s: float) -> int:
    """The sample to start the command at: the quietest 10 ms in the last 0.3 s the detector heard
    (the pause after the wake word, or the dip between it and the next word)."""
    lo = max(0, round((heard_to_s - CUT_LOOKBACK_S) * SAMPLE_RATE))
    hi = min(samples.size, round((heard_to_s + CUT_LOOKAHEAD_S) * SAMPLE_RATE))
    if hi - lo < CUT_FRAME:
        return min(lo, samples.size)
    frames = np.lib.stride_tricks.sliding_window_view(samples[lo:hi], CUT_FRAME)[:: CUT_FRAME // 2]
    energy = np.square(frames, dtype=np.float64).mean(axis=1)
    return lo + int(np.argmin(energy)) * (CUT_FRAME // 2) + CUT_FRAME // 2
