"""What a seqx model answers over the Wyoming protocol, one connection at a time: no sockets here.

Home Assistant (and Rhasspy 3, and any Wyoming satellite) streams a spoken command as
`transcribe`, `audio-start`, `audio-chunk`..., `audio-stop` and reads back one `transcript`.
A command not understood (silence, noise, speech outside the grammar) is the empty text, which
Home Assistant answers with "sorry, I couldn't understand that", never with a made-up command;
seqx's own answer rides along in the same event (`understood`, `intent`, `slots`, `confidence`,
`heard`), which Wyoming readers that do not know them skip. With a grammar, the service is an intent
recognizer too (seqx/serve/intents.py): a text sent as `transcript` or `recognize` is answered with
`intent` or `not-recognized`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from seqx.grammar.model import Parse
from seqx.listen.sources import SAMPLE_RATE
from seqx.serve.intents import intent_reply
from seqx.serve.wyoming import WyomingEvent

Decode = Callable[[list[np.ndarray]], Sequence[Any]]  # mono float32 waves at SAMPLE_RATE -> one result each
Reply = tuple[str, dict[str, Any]]
_SAMPLE_TYPES = {1: np.uint8, 2: np.int16, 4: np.int32}  # Wyoming's widths: bytes per sample, signed but 8-bit
ATTRIBUTION = {"name": "seqx (trained on your own grammar)", "url": ""}  # no public home to link to yet


@dataclass
class Service:
    """A trained model behind the protocol. `decode` is called one utterance at a time (the caller
    keeps two connections from decoding at once); `max_seconds` is the longest utterance taken."""

    name: str
    decode: Decode
    description: str = "seqx spoken commands"
    languages: tuple[str, ...] = ("en",)
    max_seconds: float = 30.0
    version: str = ""
    understand: Callable[[str], Parse | None] | None = None  # a text -> its command (intents.CommandReader)

    def info(self) -> dict[str, Any]:
        model = {"name": self.name, "description": self.description, "attribution": ATTRIBUTION,
                 "installed": True, "version": self.version, "languages": list(self.languages)}
        program = {"name": "seqx", "description": "offline spoken commands, trained on your own grammar",
                   "attribution": ATTRIBUTION, "installed": True, "version": self.version,
                   "supports_transcript_streaming": False, "models": [model]}
        intent = {**{k: v for k, v in program.items() if k != "supports_transcript_streaming"},
                  "description": "your grammar's commands from their text"}
        return {"asr": [program], "tts": [], "handle": [], "intent": [intent] if self.understand else [], "wake": []}


@dataclass
class Connection:
    """One client's conversation: the audio of the utterance being sent, and what it asked for."""

    service: Service
    on_result: Callable[[dict[str, Any]], None] | None = None  # each transcript as it is sent (the CLI logs it)
    rate: int = SAMPLE_RATE
    width: int = 2
    channels: int = 1
    language: str | None = None
    audio: list[np.ndarray] = field(default_factory=list)
    seconds: float = 0.0
    streaming: bool = False

    def handle(self, event: WyomingEvent) -> list[Reply]:
        """The events to send back for `event` (often none). A bad event is answered with an `error`
        naming the problem; the connection and the utterance go on."""
        kind, data = event.type, event.data
        if kind == "describe":
            return [("info", self.service.info())]
        if kind == "ping":
            return [("pong", {"text": data.get("text")} if data.get("text") else {})]
        if kind == "transcribe":
            self.language = data.get("language")
            return []
        if kind == "audio-start":
            problem = self._take_format(data)
            self.audio, self.seconds, self.streaming = [], 0.0, problem is None
            return [_error(problem, "bad-audio-format")] if problem else []
        if kind == "audio-chunk":
            return self._chunk(event)
        if kind == "audio-stop":
            return [self._transcript()] if self.streaming else [_error("audio-stop without audio-start", "no-audio")]
        if kind in ("transcript", "recognize"):  # Home Assistant's conversation agent; Rhasspy 3's intent step
            return [self._intent(data)]
        return []  # events of other services (tts, wake, ...) are not ours: Wyoming peers skip what they do not know

    def _take_format(self, data: dict[str, Any]) -> str | None:
        rate, width, channels = data.get("rate", self.rate), data.get("width", self.width), data.get("channels", self.channels)
        if not isinstance(rate, int) or not 8000 <= rate <= 192000:
            return f"audio rate {rate!r}: expected 8000-192000 Hz"
        if width not in _SAMPLE_TYPES:
            return f"audio width {width!r}: expected 1, 2 or 4 bytes per sample"
        if not isinstance(channels, int) or not 1 <= channels <= 32:
            return f"audio channels {channels!r}: expected 1-32"
        self.rate, self.width, self.channels = rate, width, channels
        return None

    def _chunk(self, event: WyomingEvent) -> list[Reply]:
        if not self.streaming:
            return [_error("audio-chunk without audio-start (or after a bad one): skipped", "no-audio")]
        if any(event.data.get(k, v) != v for k, v in (("rate", self.rate), ("width", self.width), ("channels", self.channels))):
            return [_error(f"audio-chunk format {event.data} differs from audio-start's: skipped", "bad-audio-format")]
        frame = self.width * self.channels
        if len(event.payload) % frame:
            return [_error(f"audio-chunk of {len(event.payload)} bytes is not whole {frame}-byte frames: skipped", "bad-audio")]
        if self.seconds > self.service.max_seconds:
            return []  # already too long: said once, at audio-stop
        samples = np.frombuffer(event.payload, dtype=_SAMPLE_TYPES[self.width]).astype(np.float32)
        if self.width == 1:
            samples -= 128.0  # 8-bit PCM is unsigned
        scale = float(np.iinfo(_SAMPLE_TYPES[self.width]).max) if self.width > 1 else 128.0
        mono = (samples / scale).reshape(-1, self.channels).mean(axis=1)
        self.audio.append(mono)
        self.seconds += mono.size / self.rate
        return []

    def _transcript(self) -> Reply:
        self.streaming = False
        if self.seconds > self.service.max_seconds:
            said = {"text": "", "understood": False, "reason": "too long",
                    "error": f"audio longer than {self.service.max_seconds:g} s: not a command"}
        elif not self.audio or self.seconds == 0:
            said = {"text": "", "understood": False, "reason": "no audio"}
        else:
            try:
                said = _answer(self.service.decode([_at_model_rate(np.concatenate(self.audio), self.rate)])[0])
            except Exception as err:  # noqa: BLE001 (one utterance's failure is told; the server and connection go on)
                said = {"text": "", "understood": False, "reason": "error", "error": f"{type(err).__name__}: {err}"}
            said["seconds"] = round(self.seconds, 3)
        if self.language:
            said["language"] = self.language
        self.audio = []
        if self.on_result is not None:
            self.on_result(said)
        return ("transcript", said)

    def _intent(self, data: dict[str, Any]) -> Reply:
        text = data.get("text")
        if self.service.understand is None:
            return _error("this model has no grammar to read a command's text by (serve one trained on a grammar, "
                          "or give --grammar FILE)", "no-grammar")
        if not isinstance(text, str):
            return _error(f"a text to read without a text (data {data}): expected {{\"text\": \"...\"}}", "bad-event")
        parse = self.service.understand(text)
        kind, reply = intent_reply(parse, parse.text if parse else text, data.get("context"))
        if self.on_result is not None:
            said: dict[str, Any] = {"text": reply["heard"], "understood": parse is not None, "from": "text"}
            if parse is None:
                said["reason"] = "not in the grammar"
            else:
                said["intent"], said["slots"] = parse.intent, {e["name"]: e["value"] for e in reply["entities"]}
            self.on_result(said)
        return kind, reply


def _answer(result: Any) -> dict[str, Any]:
    """A decode result as the transcript event says it: the command's text, or "" when not understood."""
    understood = bool(getattr(result, "understood", False))
    heard = getattr(result, "text", "") or ""
    said: dict[str, Any] = {"text": heard if understood else "", "understood": understood, "heard": heard,
                            "confidence": round(float(getattr(result, "confidence", 0.0) or 0.0), 4)}
    if getattr(result, "intent", None):
        said["intent"] = result.intent
        said["slots"] = {k: list(v) if isinstance(v, tuple) else v for k, v in (result.slots or {}).items()}
    if not understood and getattr(result, "reason", None):
        said["reason"] = result.reason
    if getattr(result, "error", None):
        said["error"] = result.error
    return said


def _at_model_rate(wave: np.ndarray, rate: int) -> np.ndarray:
    if rate == SAMPLE_RATE:
        return wave
    import soxr

    return soxr.resample(wave, rate, SAMPLE_RATE).astype(np.float32)


def _error(text: str, code: str) -> Reply:
    return ("error", {"text": text, "code": code})
