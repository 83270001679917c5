"""The wake word in `seqx listen`: openwakeword's shipped models on the streamed speech embedding, with
real espeak-ng and flite speech through the real Silero VAD and endpointer.

The gate is what is tested: which segments reach the recognizer and from where. The recognizer
here only reports what it was handed (the listen loop takes any decode callable by design);
tests/test_listen_decode.py runs the same gate with a trained model.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import soundfile as sf
import soxr

from seqx.errors import SeqxError
from seqx.listen.session import listen
from seqx.listen.vad import load_vad
from seqx.listen.wake import WakeDetector, WakeGate, cut_points, quietest_point, wake_model_path, wake_word_label
from seqx.recipe import ListenSettings

R = 16000
REPO = Path(__file__).resolve().parents[1]


def _say(text: str, tmp: Path, engine: str = "espeak") -> np.ndarray:
    path = tmp / "u.wav"
    if engine == "espeak":
        subprocess.run(["espeak-ng", "-v", "en-us", "-w", str(path), text], check=True)
    else:
        subprocess.run(["flite", "-voice", "slt", "-t", text, "-o", str(path)], check=True)
    wave, rate = sf.read(path, dtype="float32")
    return soxr.resample(wave, rate, R).astype(np.float32)


def _voiced_s(wave: np.ndarray) -> float:
    """Seconds from the first to the last 10 ms frame above -50 dBFS."""
    frames = np.sqrt((wave[: wave.size // 160 * 160].reshape(-1, 160) ** 2).mean(axis=1))
    loud = np.flatnonzero(frames > 10 ** (-50 / 20))
    return (loud[-1] + 1 - loud[0]) * 160 / R


def _wakes(name: str, wave: np.ndarray, block: int = 700) -> list:
    detector = WakeDetector(wake_model_path(name))
    return [w for i in range(0, wave.size, block) for w in detector.feed(wave[i : i + block])]


def _stream(waves: list[np.ndarray], gap_s: float = 1.2) -> tuple[np.ndarray, list[float]]:
    rng = np.random.default_rng(0)
    parts, starts, pos = [np.zeros(R // 2, np.float32)], [], R // 2
    for wave in waves:
        starts.append(pos / R)
        parts += [wave, np.zeros(int(gap_s * R), np.float32)]
        pos += wave.size + int(gap_s * R)
    stream = np.concatenate(parts)
    return stream + (rng.standard_normal(stream.size) * 10 ** (-65 / 20)).astype(np.float32), starts


@pytest.mark.parametrize("engine", ["espeak", "flite"])
def test_the_wake_word_is_heard_once_and_only_by_its_own_model(engine: str, tmp_path: Path) -> None:
    wave, _ = _stream([_say("hey jarvis, turn on the kitchen lights", tmp_path, engine)])
    heard = _wakes("hey jarvis", wave)
    assert len(heard) == 1 and heard[0].score >= 0.5
    # heard after the word began and before the sentence ended (0.5 s of lead in the stream)
    assert 0.8 < heard[0].time < 0.5 + _voiced_s(wave[R // 2 :]) + 0.3
    assert _wakes("alexa", wave) == [] and _wakes("hey_rhasspy", wave) == []


def test_other_speech_silence_and_noise_wake_nothing(tmp_path: Path) -> None:
    from seqx.data.noise import make_noise

    rng = np.random.default_rng(3)
    noise = [make_noise(kind, 5 * R, R, rng).astype(np.float32) for kind in ("white", "pink", "brown")]
    noise = [n * (10 ** (-35 / 20) / np.sqrt(np.mean(n**2))) for n in noise]
    talk = [_say(t, tmp_path) for t in ("what is the capital of france", "turn on the kitchen lights", "hey there")]
    wave, _ = _stream([*talk, *noise, np.zeros(3 * R, np.float32)])
    for name in ("alexa", "hey jarvis", "hey mycroft", "hey rhasspy"):
        assert _wakes(name, wave) == [], name


def test_the_stream_is_heard_the_same_whatever_the_block_size(tmp_path: Path) -> None:
    wave, _ = _stream([_say("hey jarvis, scroll up", tmp_path)])
    traces = []
    for block in (160, 512, 4096, wave.size):
        detector = WakeDetector(wake_model_path("hey_jarvis"))
        detector.trace = []
        for i in range(0, wave.size, block):
            detector.feed(wave[i : i + block])
        traces.append(detector.trace)
    assert len({len(t) for t in traces}) == 1 and len(traces[0]) > 20
    for trace in traces[1:]:
        assert np.allclose([s for _, s in trace], [s for _, s in traces[0]], atol=1e-4)


def test_the_gate_decodes_only_what_follows_the_wake_word(tmp_path: Path) -> None:
    command = _say("turn on the kitchen lights", tmp_path)
    word = _say("hey jarvis", tmp_path)
    breath = _say("hey jarvis, turn on the kitchen lights", tmp_path)
    pause = np.concatenate([word, np.zeros(int(0.8 * R), np.float32), command])
    late = np.concatenate([word, np.zeros(int(6.0 * R), np.float32), command])
    wave, starts = _stream([breath, command, pause, late])
    handed: list[np.ndarray] = []

    def decode(waves):  # noqa: ANN001, ANN202 (reports what the gate handed over)
        handed.extend(waves)
        return [SimpleNamespace(text=f"command {len(handed)}", confidence=1.0) for _ in waves]

    vad, _ = load_vad("silero")
    gate = WakeGate(WakeDetector(wake_model_path("hey jarvis")), follow_s=4.0)
    blocks = [wave[i : i + 1000] for i in range(0, wave.size, 1000)]
    events = list(listen(blocks, vad, ListenSettings(), decode, gate))
    understood = [e for e in events if e.understood]
    # one breath: after the word; the command alone: nothing; the word alone then the command: the
    # command; the command 6 s after the word (past follow_s): nothing
    assert len(understood) == 2, [(round(e.start, 2), e.extra, e.understood) for e in events]
    assert starts[0] < understood[0].start < starts[1] and starts[2] < understood[1].start < starts[3]
    assert [e.extra["wake"] is None for e in events if starts[1] <= e.start < starts[2]] == [True]
    alone_word = [e for e in events if e.extra["wake"] is not None and not e.understood]
    assert len(alone_word) == 2  # the word said alone, twice: it opens follow_s, and prints as "(hey jarvis)"
    # what was handed over is the command and no more of the word than its tail: as long as the
    # command's voice plus the endpointer's pre- and post-roll (0.25 + 0.3 s), give or take 0.3 s
    expected = _voiced_s(command) + 0.55
    assert abs(handed[0].size / R - expected) < 0.3 and abs(handed[1].size / R - expected) < 0.3


def test_quietest_point_is_the_pause_between_the_words() -> None:
    rng = np.random.default_rng(0)
    loud = lambda s: (0.3 * rng.standard_normal(int(s * R))).astype(np.float32)  # noqa: E731
    wave = np.concatenate([loud(0.5), np.zeros(int(0.08 * R), np.float32) + 1e-4, loud(0.5)])
    cut = quietest_point(wave, heard_to_s=0.65)  # the detector heard 0.07 s of the next word
    assert 0.5 * R <= cut <= 0.58 * R


def test_the_command_is_cut_at_the_quietest_point_first_and_earlier_beside_it() -> None:
    rng = np.random.default_rng(1)
    loud = lambda s: (0.3 * rng.standard_normal(int(s * R))).astype(np.float32)  # noqa: E731
    wave = np.concatenate([loud(0.6), np.full(int(0.08 * R), 1e-4, np.float32), loud(0.6)])
    cuts = cut_points(wave, heard_to_s=0.75)
    assert cuts[0] == quietest_point(wave, 0.75) and 0.6 * R <= cuts[0] <= 0.68 * R
    assert [round(c / R, 2) for c in cuts[1:]] == [0.45, 0.55, 0.65]  # 0.3, 0.2 and 0.1 s before the word was heard


def test_a_later_cut_answers_only_when_the_first_is_not_understood_and_two_agree() -> None:
    from seqx.listen.session import _surest

    said = lambda text, confidence=0.9: SimpleNamespace(text=text, confidence=confidence, no_speech=False)  # noqa: E731
    nothing = said("", 0.0)
    assert _surest([said("scroll up", 0.5), said("scroll down", 0.99), said("scroll down")]).text == "scroll up"
    assert _surest([nothing, said("scroll up", 0.8), said("scroll up", 0.7), said("open it")]).confidence == 0.8
    assert _surest([nothing, said("scroll up"), said("open it"), nothing]) is nothing  # one lucky cut: no answer


def test_bad_wake_words_are_one_line_errors(tmp_path: Path) -> None:
    with pytest.raises(SeqxError, match="unknown wake word 'ok google'.*hey jarvis"):
        wake_model_path("ok google")
    with pytest.raises(SeqxError, match="no such wake-word model file"):
        wake_model_path(str(tmp_path / "mine.onnx"))
    melspectrogram = wake_model_path("alexa").with_name("melspectrogram.onnx")
    with pytest.raises(SeqxError, match="not an openWakeWord model"):
        WakeDetector(melspectrogram)
    garbage = tmp_path / "garbage.onnx"
    garbage.write_bytes(b"not a graph")
    with pytest.raises(SeqxError, match="garbage.onnx: not a loadable ONNX graph"):
        WakeDetector(garbage)
    assert wake_word_label("hey_jarvis") == wake_word_label("Hey  Jarvis") == "hey jarvis"
    assert wake_word_label("/x/my_word.onnx") == "my word"
    wav = tmp_path / "s.wav"
    sf.write(wav, np.zeros(R, np.float32), R)
    run = subprocess.run([sys.executable, "-m", "seqx", "listen", "--segments", "--wake-word", "ok google", str(wav)],
                         capture_output=True, text=True, cwd=REPO, env={**os.environ, "COLUMNS": "300"}, check=False)
    assert run.returncode == 1 and "unknown wake word" in run.stderr and len(run.stderr.strip().splitlines()) == 1
