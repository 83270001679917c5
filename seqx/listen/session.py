"""The resident loop: audio blocks -> VAD -> endpointer -> decode -> events.

The recognizer is injected as a callable, `decode(list of waves) -> list of results`,
where a result has at least `text` and `confidence` (and may have `intent`, `slots`,
`no_speech`), so this loop runs the same with the Transformer bundle, an exported ONNX
model, a grammar-constrained decoder, or none (segments only). Each segment is decoded
as soon as it ends, on this thread: the next audio waits in the source's queue or pipe.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from seqx.listen.endpoint import Endpointer, Segment
from seqx.listen.level import StreamLevel
from seqx.listen.vad import Vad, Windower
from seqx.listen.wake import WakeGate
from seqx.recipe import ListenSettings

Decode = Callable[[Sequence[np.ndarray]], Sequence[Any]]


@dataclass
class Event:
    """One finished command, as `seqx listen` reports it.

    `latency_ms` is from the end of speech to the result: the endpointer's wait
    (min_silence_ms of audio, which is wall time on a live input) plus the compute
    from the arrival of the block that ended the command to the decoded result.
    """

    start: float
    end: float
    text: str = ""
    confidence: float = 0.0
    intent: str | None = None
    slots: dict[str, str] | None = None
    understood: bool = True  # False: the recognizer rejected the segment (no speech, not a command)
    cut: bool = False
    latency_ms: float = 0.0
    wait_ms: float = 0.0  # the endpointer's share of the latency
    compute_ms: float = 0.0  # VAD + decode after the last block arrived
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "start": round(self.start, 3),
            "end": round(self.end, 3),
            "text": self.text,
            "intent": self.intent,
            "slots": self.slots,
            "confidence": round(self.confidence, 4),
            "understood": self.understood,
            "cut": self.cut,
            "latency_ms": round(self.latency_ms, 1),
            **self.extra,
        }


def segments(
    blocks: Iterable[np.ndarray], vad: Vad, settings: ListenSettings, hear: Callable[[np.ndarray], None] | None = None
) -> Iterator[tuple[Segment, float]]:
    """Every finished segment, with the `perf_counter` time its last block arrived.

    Silero hears each window raised as a quiet file is (`StreamLevel`); the endpointer keeps the
    audio as it came. The energy gate needs no raising: it listens relative to the room's floor.
    `hear` gets every window as the VAD heard it, before the endpointer: a wake-word detector, which
    a quiet microphone leaves as deaf as Silero (espeak-ng's "hey jarvis" turned down 40 dB: 12 of 40
    heard as it came; docs/benchmarks.md "A wake word")."""
    windower, endpointer = Windower(), Endpointer(settings)
    level = StreamLevel() if vad.name == "silero" else None
    vad.reset()

    def prob(window: np.ndarray) -> float:
        heard = level.raise_window(window) if level is not None else window
        if hear is not None:
            hear(heard)
        return vad.prob(heard)

    arrived = time.perf_counter()
    for block in blocks:
        arrived = time.perf_counter()
        for window in windower.feed(block):
            for segment in endpointer.push(window, prob(window)):
                yield segment, arrived
    for window in windower.flush():
        for segment in endpointer.push(window, prob(window)):
            yield segment, arrived
    for segment in endpointer.flush():
        yield segment, arrived


def listen(
    blocks: Iterable[np.ndarray], vad: Vad, settings: ListenSettings, decode: Decode | None = None,
    wake: WakeGate | None = None,
) -> Iterator[Event]:
    """Events for the commands in `blocks`, in order; without `decode`, events with segment times only.
    With `wake`, only what follows the wake word is decoded: a segment without it is an event
    `understood=False` with `wake` None, the wake word said alone one with `wake` set.

    Closing the generator (or Ctrl-C in the caller) closes the source, which stops a microphone.
    """
    source = iter(blocks)
    try:
        for segment, arrived in segments(source, vad, settings, wake.hear if wake is not None else None):
            event = Event(start=segment.start, end=segment.end, cut=segment.cut)
            ways = [segment.samples]
            if wake is not None:
                ways, heard = wake.command(segment.start, segment.end, segment.offset, segment.samples)
                event.extra["wake"] = None if heard is None else round(heard.time, 3)
                event.understood = False
            if decode is not None and ways:
                _fill(event, _surest(decode(ways)))
            event.compute_ms = 1000 * (time.perf_counter() - arrived)
            event.wait_ms = 1000 * segment.endpoint_delay
            event.latency_ms = event.wait_ms + event.compute_ms
            yield event
    finally:
        close = getattr(source, "close", None)
        if close is not None:
            close()


def _surest(results: Sequence[Any]) -> Any:
    """Of the ways to cut a wake word off (best first): the first when it is understood; else a
    command that two of the other cuts agree on (the more confident); else the first, not understood.

    Why two: taking whichever cut was understood with the most confidence answered 12 of 120
    out-of-grammar sentences said after the word, against 7 cut once; asking the earlier cuts to
    agree, 8, and commands said without a pause 112 of 120 right against 115 and 87 (flite kal and slt,
    piper; docs/benchmarks.md "A wake word")."""
    if _understood(results[0]):
        return results[0]
    later = [r for r in results[1:] if _understood(r)]
    agreed = [r for r in later if sum(o.text == r.text for o in later) >= 2]
    return max(agreed, key=lambda r: float(getattr(r, "confidence", 0.0) or 0.0)) if agreed else results[0]


def _understood(result: Any) -> bool:
    return bool(getattr(result, "text", "")) and not getattr(result, "no_speech", False)


def _fill(event: Event, result: Any) -> None:
    event.text = getattr(result, "text", "") or ""
    event.confidence = float(getattr(result, "confidence", 0.0) or 0.0)
    event.intent = getattr(result, "intent", None)
    event.slots = getattr(result, "slots", None)
    event.understood = _understood(result)
