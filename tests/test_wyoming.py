"""The Wyoming protocol's framing and a connection's audio (`seqx serve`), without a model: the
audio each utterance hands to the decoder is checked against the samples sent. The model's answers
over a real socket are tests/test_listen_decode.py's."""

from __future__ import annotations

import io
import json
from types import SimpleNamespace

import numpy as np
import pytest

from seqx.serve.service import Connection, Service
from seqx.serve.wyoming import ProtocolError, WyomingEvent, read_event, write_event


def test_data_after_the_header_is_merged_and_the_payload_read_whole() -> None:
    more = json.dumps({"width": 2, "channels": 1}).encode()
    raw = json.dumps({"type": "audio-chunk", "data": {"rate": 16000}, "data_length": len(more), "payload_length": 4})
    event = read_event(io.BytesIO(raw.encode() + b"\n" + more + b"\x01\x02\x03\x04" + b'{"type": "audio-stop"}\n'))
    assert event == WyomingEvent("audio-chunk", {"rate": 16000, "width": 2, "channels": 1}, b"\x01\x02\x03\x04")
    sent = io.BytesIO()
    write_event(sent, "transcript", {"text": "lights on"})
    header, body = sent.getvalue().split(b"\n", 1)
    assert json.loads(header)["data_length"] == len(body) and json.loads(body) == {"text": "lights on"}


@pytest.mark.parametrize(
    ("raw", "problem"),
    [(b"hello\n", "not JSON"), (b'{"data": {}}\n', 'no "type"'), (b'{"type": "x", "payload_length": 9}\nabc', "6 bytes short"),
     (b'{"type": "x", "payload_length": -1}\n', "is not a size"), (b"{" + b" " * 70000, "too long")],
)
def test_bytes_that_are_not_an_event_are_named(raw: bytes, problem: str) -> None:
    with pytest.raises(ProtocolError, match=problem):
        read_event(io.BytesIO(raw))


def _utterance(connection: Connection, audio: dict, payloads: list[bytes]) -> list:
    replies = connection.handle(WyomingEvent("audio-start", audio))
    for payload in payloads:
        replies += connection.handle(WyomingEvent("audio-chunk", audio, payload))
    return replies + connection.handle(WyomingEvent("audio-stop"))


def test_every_sample_width_and_channel_count_reaches_the_decoder_as_mono_float() -> None:
    heard: list[np.ndarray] = []

    def decode(waves: list[np.ndarray]) -> list:
        heard.append(waves[0])
        return [SimpleNamespace(text="lights on", understood=True, intent=None, confidence=0.9)]

    connection = Connection(Service("m", decode))
    ramp = np.linspace(-0.5, 0.5, 1600, dtype=np.float32)
    for width, kind, scale, offset in ((2, np.int16, 32767, 0), (4, np.int32, 2**31 - 1, 0), (1, np.uint8, 128, 128)):
        left = (ramp * scale + offset).astype(kind)
        stereo = np.stack([left, left], axis=1).tobytes()  # two equal channels: their mean is the one
        replies = _utterance(connection, {"rate": 16000, "width": width, "channels": 2}, [stereo[:800], stereo[800:]])
        assert replies == [("transcript", {"text": "lights on", "understood": True, "heard": "lights on",
                                           "confidence": 0.9, "seconds": 0.1})]
        np.testing.assert_allclose(heard[-1], ramp, atol=1.5 / 128 if width == 1 else 1e-4)


def test_bad_audio_is_told_and_skipped_and_silence_or_too_long_is_not_understood() -> None:
    decoded: list[int] = []

    def decode(waves: list[np.ndarray]) -> list:
        decoded.append(waves[0].size)
        return [SimpleNamespace(text="", understood=False, reason="no speech", confidence=0.0)]

    connection = Connection(Service("m", decode, max_seconds=1.0))
    mono = {"rate": 16000, "width": 2, "channels": 1}
    assert connection.handle(WyomingEvent("audio-start", {**mono, "width": 3}))[0][1]["code"] == "bad-audio-format"
    assert "without audio-start" in connection.handle(WyomingEvent("audio-chunk", mono, b"\0\0"))[0][1]["text"]
    replies = _utterance(connection, mono, [b"\0\0" * 800, b"\0", b"\0\0" * 800])
    assert [kind for kind, _ in replies] == ["error", "transcript"] and decoded == [1600]
    assert replies[1][1]["text"] == "" and replies[1][1]["reason"] == "no speech"
    too_long = _utterance(connection, mono, [b"\0\0" * 16000] * 3)
    assert too_long[0][1]["reason"] == "too long" and decoded == [1600]  # not decoded at all
    assert connection.handle(WyomingEvent("synthesize", {"text": "hi"})) == []  # another service's event: skipped
    assert connection.handle(WyomingEvent("ping", {"text": "x"})) == [("pong", {"text": "x"})]


def test_a_decoder_failure_is_one_utterance_not_understood_and_the_next_is_answered() -> None:
    calls: list[int] = []

    def decode(waves: list[np.ndarray]) -> list:
        calls.append(waves[0].size)
        if len(calls) == 1:
            raise RuntimeError("out of memory")
        return [SimpleNamespace(text="lights on", understood=True, intent=None, confidence=0.9)]

    connection = Connection(Service("m", decode))
    mono = {"rate": 16000, "width": 2, "channels": 1}
    (failed,) = _utterance(connection, mono, [b"\1\0" * 1600])
    assert failed[1]["text"] == "" and failed[1]["error"] == "RuntimeError: out of memory"
    (answered,) = _utterance(connection, mono, [b"\1\0" * 1600])
    assert answered[1]["text"] == "lights on" and calls == [1600, 1600]


def test_a_commands_text_is_answered_with_its_intent_or_not_recognized(tmp_path) -> None:  # noqa: ANN001
    """Home Assistant's conversation agent sends `transcript` (Rhasspy 3 `recognize`): the text is read by the
    grammar as decoded texts spell it ("50%", capitals and a full stop are "fifty percent" and no stop), its
    slots sent as entities; text outside the grammar is not recognized, never the nearest command."""
    from seqx.recipe import TokenizerSettings
    from seqx.serve.intents import CommandReader, command_reader
    from seqx.tokenize.text import normalize_text

    grammar_file = tmp_path / "g.yaml"
    grammar_file.write_text("intents:\n  light: ['turn {state} the {room} light', 'dim the light to {level}%']\n"
                            "slots:\n  state: [on, off]\n  room: [kitchen, living room]\n  level: [10, 50]\n")
    config = tmp_path / "model" / "config.json"
    config.parent.mkdir()
    config.write_text(json.dumps({"tokenizer": TokenizerSettings().model_dump(), "grammar": None}))
    assert command_reader(config.parent) is None  # no grammar of its own: not an intent recognizer
    reader = command_reader(config.parent, str(grammar_file))
    assert isinstance(reader, CommandReader) and reader.normalize("Dim it to 50%.") == normalize_text(
        "Dim it to 50%.", TokenizerSettings()) == "dim it to fifty percent"
    logged: list[dict] = []
    service = Service("m", lambda waves: [], understand=reader)
    assert service.info()["intent"][0]["models"][0]["name"] == "m" and service.info()["intent"][0]["installed"]
    assert Service("m", lambda waves: []).info()["intent"] == []
    connection = Connection(service, on_result=logged.append)
    context = {"conversation_id": "01J"}
    assert connection.handle(WyomingEvent("transcript", {"text": "Turn on the living room light.", "context": context})) == [
        ("intent", {"name": "light", "entities": [{"name": "state", "value": "on"}, {"name": "room", "value": "living room"}],
                    "heard": "turn on the living room light", "context": context})]
    [(kind, data)] = connection.handle(WyomingEvent("recognize", {"text": "dim the light to 50%"}))
    assert kind == "intent" and data["entities"] == [{"name": "level", "value": 50}]
    [(kind, data)] = connection.handle(WyomingEvent("transcript", {"text": "turn on the garage light"}))
    assert kind == "not-recognized" and data["text"] and data["heard"] == "turn on the garage light"
    assert [e["understood"] for e in logged] == [True, True, False] and logged[0]["slots"]["room"] == "living room"
    [(kind, data)] = connection.handle(WyomingEvent("transcript", {"context": context}))
    assert kind == "error" and data["code"] == "bad-event"
    [(kind, data)] = Connection(Service("m", lambda waves: [])).handle(WyomingEvent("transcript", {"text": "hi"}))
    assert kind == "error" and data["code"] == "no-grammar"
