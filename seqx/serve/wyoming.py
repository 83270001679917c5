"""The Wyoming protocol's framing: how Home Assistant and Rhasspy talk to a speech service.

An event is one line of JSON (`type`, optional `data`, `data_length`, `payload_length`), then
`data_length` bytes of more JSON data merged over `data`, then `payload_length` bytes of payload
(PCM audio for `audio-chunk`). Home Assistant's Wyoming integration sends a speech-to-text request as
`transcribe`, `audio-start`, `audio-chunk`..., `audio-stop` and waits for `transcript`; it learns what
a service offers from `describe` -> `info`. Spelled as the protocol's README describes it
(github.com/rhasspy/wyoming); the `wyoming` package is not needed.

>>> import io
>>> stream = io.BytesIO()
>>> write_event(stream, "audio-chunk", {"rate": 16000, "width": 2, "channels": 1}, b"\\x00\\x01")
>>> _ = stream.seek(0)
>>> event = read_event(stream)
>>> event.type, event.data["rate"], event.payload
('audio-chunk', 16000, b'\\x00\\x01')
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, BinaryIO

PROTOCOL_VERSION = "1.5.2"  # the Wyoming version whose events these are (sent in each header, as the package does)
MAX_HEADER_BYTES = 1 << 16  # one JSON line; a longer one is not a Wyoming client
MAX_PAYLOAD_BYTES = 1 << 24  # 16 MiB in one event: 8 min of 16 kHz 16-bit audio, far beyond any chunk


class ProtocolError(ValueError):
    """Bytes that are not a Wyoming event: the connection cannot be read further."""


@dataclass
class WyomingEvent:
    type: str
    data: dict[str, Any] = field(default_factory=dict)
    payload: bytes = b""


def read_event(stream: BinaryIO) -> WyomingEvent | None:
    """The next event, or None at the end of the stream."""
    line = stream.readline(MAX_HEADER_BYTES + 1)
    if not line:
        return None
    if len(line) > MAX_HEADER_BYTES or not line.endswith(b"\n"):
        raise ProtocolError("event header too long or cut off (one JSON line is expected)")
    try:
        header = json.loads(line)
    except ValueError as err:
        raise ProtocolError(f"event header is not JSON: {err}") from None
    if not isinstance(header, dict) or not isinstance(header.get("type"), str):
        raise ProtocolError("event header has no \"type\"")
    data = header.get("data") or {}
    if not isinstance(data, dict):
        raise ProtocolError(f"{header['type']}: \"data\" is not an object")
    extra = _exactly(stream, _length(header, "data_length"), header["type"])
    if extra:
        try:
            more = json.loads(extra)
        except ValueError as err:
            raise ProtocolError(f"{header['type']}: its data is not JSON: {err}") from None
        if not isinstance(more, dict):
            raise ProtocolError(f"{header['type']}: its data is not an object")
        data = {**data, **more}
    payload = _exactly(stream, _length(header, "payload_length"), header["type"])
    return WyomingEvent(header["type"], data, payload)


def write_event(stream: BinaryIO, type_: str, data: dict[str, Any] | None = None, payload: bytes = b"") -> None:
    """One event, flushed: a client waits for it."""
    header: dict[str, Any] = {"type": type_, "version": PROTOCOL_VERSION}
    body = json.dumps(data, ensure_ascii=False).encode() if data else b""
    if body:
        header["data_length"] = len(body)
    if payload:
        header["payload_length"] = len(payload)
    stream.write(json.dumps(header, ensure_ascii=False).encode() + b"\n" + body + payload)
    stream.flush()


def _length(header: dict[str, Any], key: str) -> int:
    value = header.get(key) or 0
    if not isinstance(value, int) or value < 0 or value > MAX_PAYLOAD_BYTES:
        raise ProtocolError(f"{header['type']}: {key} {value!r} is not a size up to {MAX_PAYLOAD_BYTES}")
    return value


def _exactly(stream: BinaryIO, size: int, what: str) -> bytes:
    """`size` bytes (a socket's reads may come in pieces)."""
    got = b""
    while len(got) < size:
        more = stream.read(size - len(got))
        if not more:
            raise ProtocolError(f"{what}: the stream ended {size - len(got)} bytes short")
        got += more
    return got
