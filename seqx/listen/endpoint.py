"""The streaming endpointer: VAD windows in, finished commands (segments) out.

A small state machine over 32 ms windows, counted in samples (never a wall clock):

    silence --(prob >= threshold)--> speech --(min_silence_ms below the lower threshold)--> emit, silence
                                       |--(max_command_s reached)--> emit (cut), speech goes on

Two thresholds (Silero's own hysteresis): a command starts at `vad_threshold` but only
ends when the probability stays below `vad_threshold - 0.15` for `min_silence_ms`, so
the dip between two words does not split a command. A segment's `start`/`end` are the
detected speech; its `samples` add `pre_roll_ms` before (the VAD reacts a window or
two late, and the first consonant is quiet) and `post_roll_ms` after, which the
recognizer was trained with (synthetic corpora have 50-400 ms of lead and trail).
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass

import numpy as np

from seqx.listen.vad import WINDOW
from seqx.recipe import ListenSettings

HYSTERESIS = 0.15  # how far below vad_threshold the probability must fall to count as silence
# Silero rises a window or two after a soft onset (the /s/ of "scroll"): a start steps back over
# the windows just before it whose probability was already at least half the lower threshold
ONSET_LOOKBACK = 3
# ...and it stays up a few windows after the voice stops (its LSTM smooths): the end steps back
# over up to this many trailing windows that are no louder than the audio before the command was
TAIL_LAG = 4
QUIET_DB = 3.0  # "no louder": within this many dB of the median level of the pre-roll


@dataclass
class Segment:
    """One command: speech from `start` to `end` (seconds in the stream) and the audio to decode."""

    start: float
    end: float
    samples: np.ndarray  # float32, with pre-roll and post-roll
    decided: float  # stream time (s) at which the endpointer knew the command was over
    cut: bool = False  # ended by max_command_s, not by a pause
    offset: float = 0.0  # stream time (s) of samples[0]: the pre-roll's start

    @property
    def endpoint_delay(self) -> float:
        """Seconds of audio between the end of speech and the decision: the part of latency that is waiting."""
        return self.decided - self.end


class Endpointer:
    """Feed consecutive `(window, prob)` pairs; collect the segments each one finishes."""

    def __init__(self, settings: ListenSettings, sample_rate: int = 16000, window: int = WINDOW) -> None:
        self.s, self.rate, self.window = settings, sample_rate, window
        self.low = max(settings.vad_threshold - HYSTERESIS, 0.01)
        self.min_silence = settings.min_silence_ms * sample_rate // 1000
        self.min_speech = settings.min_speech_ms * sample_rate // 1000
        self.max_command = int(settings.max_command_s * sample_rate)
        self.pre_roll = settings.pre_roll_ms * sample_rate // 1000
        self.post_roll = settings.post_roll_ms * sample_rate // 1000
        self.history: deque[np.ndarray] = deque(maxlen=math.ceil(self.pre_roll / window) + ONSET_LOOKBACK + 1)
        self.recent: deque[float] = deque(maxlen=ONSET_LOOKBACK)  # probabilities of the windows before a start
        self.pos = 0  # samples seen so far
        self.in_speech = False
        self.start = 0  # first sample of the current command's speech
        self.audio_start = 0  # first sample kept (start - pre-roll)
        self.kept: list[np.ndarray] = []
        self.speech_end = 0  # end sample of the last window at or above vad_threshold
        self.voiced_end = 0  # end sample of the last window at or above the lower threshold
        self.noise_db = -120.0  # median level of the pre-roll windows: what "quiet" means here

    def push(self, window: np.ndarray, prob: float) -> list[Segment]:
        begin, self.pos = self.pos, self.pos + window.size
        done: list[Segment] = []
        if not self.in_speech:
            if prob >= self.s.vad_threshold:
                self._open(begin - self._rising() * self.window)
            else:
                self.history.append(window)
                self.recent.append(prob)
                return done
        self.kept.append(window)
        if prob >= self.s.vad_threshold or (prob >= self.low and self.speech_end == begin):
            self.speech_end = self.pos  # speech, or the decay just after it (not a later noise blip)
        if prob >= self.low:
            self.voiced_end = self.pos
        elif self.pos - self.voiced_end >= self.min_silence:
            if self.speech_end - self.start >= self.min_speech:
                done.append(self._segment(cut=False))
            self._close()
            return done
        if self.pos - self.start >= self.max_command:
            cut = self.start + self.max_command
            segment = self._segment(cut=True, end=cut)
            rest = np.concatenate(self.kept)[cut - self.audio_start :]
            done.append(segment)
            self._close()
            # what follows is still speech (or its tail): the next command starts at the cut
            self.in_speech, self.start, self.audio_start = True, cut, cut
            self.speech_end = self.voiced_end = self.pos
            self.kept = [rest]
        return done

    def flush(self) -> list[Segment]:
        """The stream ended: an open command ends at its last speech."""
        done: list[Segment] = []
        if self.in_speech and self.speech_end - self.start >= self.min_speech:
            done.append(self._segment(cut=False))
        self._close()
        return done

    def _rising(self) -> int:
        """How many windows just before this one were already rising speech."""
        count = 0
        for prob in reversed(self.recent):
            if prob < self.low / 2:
                break
            count += 1
        return count

    def _open(self, begin: int) -> None:
        """Speech from `begin` (at or before the window just pushed); keep `pre_roll` before it."""
        before = np.concatenate(list(self.history)) if self.history else np.zeros(0, dtype=np.float32)
        window_start = self.pos - self.window
        before = before[max(0, before.size - (window_start - begin) - self.pre_roll) :]
        self.in_speech, self.start, self.speech_end, self.voiced_end = True, begin, begin, begin
        self.noise_db = float(np.median([_level_db(w) for w in self.history])) if self.history else -120.0
        self.audio_start = window_start - before.size
        self.kept = [before]
        self.history.clear()
        self.recent.clear()

    def _segment(self, cut: bool, end: int | None = None) -> Segment:
        audio = np.concatenate(self.kept)
        end = self._trimmed_end(audio) if end is None else end
        stop = min(end + self.post_roll, self.pos) - self.audio_start
        return Segment(
            start=self.start / self.rate,
            end=end / self.rate,
            samples=audio[:stop],
            decided=self.pos / self.rate,
            cut=cut,
            offset=self.audio_start / self.rate,
        )

    def _trimmed_end(self, audio: np.ndarray) -> int:
        """`speech_end` less the VAD's lag: trailing windows as quiet as the pre-roll are not speech."""
        end = self.speech_end
        for _ in range(TAIL_LAG):
            first = end - self.window - self.audio_start
            if end - self.window <= self.start or first < 0:
                break
            if _level_db(audio[first : first + self.window]) > self.noise_db + QUIET_DB:
                break
            end -= self.window
        return end

    def _close(self) -> None:
        # the trailing silence is the next command's pre-roll
        tail = np.concatenate(self.kept)[-self.pre_roll :] if self.kept and self.pre_roll else None
        self.in_speech, self.kept = False, []
        self.history.clear()
        self.recent.clear()
        if tail is not None and tail.size:
            self.history.append(tail)


def _level_db(samples: np.ndarray) -> float:
    rms = float(np.sqrt(np.mean(np.square(samples, dtype=np.float64)))) if samples.size else 0.0
    return 20 * math.log10(max(rms, 1e-6))
