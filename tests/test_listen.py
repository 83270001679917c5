"""`seqx listen` without a model: real espeak-ng commands in a stream with silence and noise
between them, through the real Silero VAD (onnxruntime), the endpointer, the sources and the CLI."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import soundfile as sf
import soxr

from seqx.data.noise import make_noise
from seqx.listen.actions import match_action, render_argv, start_action
from seqx.listen.segment import join_texts, split_long
from seqx.listen.session import listen
from seqx.listen.vad import EnergyVad, load_vad
from seqx.recipe import ActionSettings, ListenSettings

R = 16000
REPO = Path(__file__).resolve().parents[1]
TEXTS = ["check the battery", "open the terminal", "set a timer for five minutes", "scroll up", "show the program log"]
GAPS = ["silence", "white", "pink", "hum", "silence"]  # what follows each command
TOLERANCE = 0.1  # seconds: detected start/end vs the true ones


def _espeak(text: str, tmp: Path) -> np.ndarray:
    path = tmp / "u.wav"
    path.write_bytes(
        subprocess.run(["espeak-ng", "-v", "en-us", "--stdout", text], capture_output=True, check=True).stdout
    )
    wave, rate = sf.read(path, dtype="float32")
    return soxr.resample(wave, rate, R).astype(np.float32)


def _voiced(wave: np.ndarray) -> tuple[int, int]:
    """First and last sample of the 10 ms frames above -50 dBFS: espeak-ng pads with digital silence."""
    frames = np.sqrt((wave[: wave.size // 160 * 160].reshape(-1, 160) ** 2).mean(axis=1))
    loud = np.flatnonzero(frames > 10 ** (-50 / 20))
    return int(loud[0]) * 160, (int(loud[-1]) + 1) * 160


def _gap(kind: str, seconds: float, rng: np.random.Generator) -> np.ndarray:
    """`seconds` of quiet, then (after 0.4 s, when the command before has ended) a noise at -40 dBFS:
    a quiet room, audible, that starts and stops inside the gap and must not be taken for a command."""
    n = int(seconds * R)
    gap = np.zeros(n, dtype=np.float32)
    if kind != "silence":
        lead = int(0.4 * R)
        noise = make_noise(kind, n - lead, R, rng).astype(np.float32)
        noise *= 10 ** (-40 / 20) / np.sqrt(np.mean(noise**2))
        ramp = np.minimum(1.0, np.minimum(np.arange(noise.size), np.arange(noise.size)[::-1]) / (0.05 * R))
        gap[lead:] = noise * ramp  # 50 ms fades: a fan, not a click
    return gap


@pytest.fixture(scope="module")
def stream(tmp_path_factory: pytest.TempPathFactory) -> tuple[np.ndarray, list[tuple[float, float]]]:
    """Commands with 1.5 s of silence or noise after each; the true (start, end) of each command's voice."""
    tmp = tmp_path_factory.mktemp("listen")
    rng = np.random.default_rng(0)
    parts, truth, pos = [np.zeros(R // 2, dtype=np.float32)], [], R // 2
    for text, gap in zip(TEXTS, GAPS, strict=True):
        wave = _espeak(text, tmp)
        first, last = _voiced(wave)
        truth.append(((pos + first) / R, (pos + last) / R))
        parts += [wave, _gap(gap, 1.5, rng)]
        pos += wave.size + int(1.5 * R)
    wave = np.concatenate(parts)
    # room tone under everything: a live input is never digital silence
    return wave + _white(wave.size, -65, rng), truth


def _white(n: int, dbfs: float, rng: np.random.Generator) -> np.ndarray:
    return (rng.standard_normal(n) * 10 ** (dbfs / 20)).astype(np.float32)


def _blocks(wave: np.ndarray, size: int = 1000) -> list[np.ndarray]:
    return [wave[i : i + size] for i in range(0, wave.size, size)]  # not a multiple of the VAD window


def _segments(wave: np.ndarray, vad_kind: str = "silero", **settings: object) -> list:
    vad, _ = load_vad(vad_kind)
    return list(listen(_blocks(wave), vad, ListenSettings(**settings)))


def _assert_found(events: list, truth: list[tuple[float, float]], tolerance: float = TOLERANCE) -> None:
    found = [(round(e.start, 3), round(e.end, 3)) for e in events]
    assert len(events) == len(truth), f"found {found}, expected {truth}"
    for (start, end), event in zip(truth, events, strict=True):
        assert abs(event.start - start) <= tolerance and abs(event.end - end) <= tolerance, (found, truth)


def test_every_command_found_in_order_and_nothing_in_the_gaps(stream) -> None:
    wave, truth = stream
    events = _segments(wave)
    _assert_found(events, truth)
    assert not any(e.cut for e in events)
    # the wait is min_silence_ms and a little: the VAD's tail and the window the decision falls in
    assert all(0.3 <= e.wait_ms / 1000 <= 0.3 + 0.4 for e in events)


@pytest.mark.parametrize("gain_db", [-45, -55])
def test_a_quiet_microphone_finds_the_same_commands_where_they_are(stream, gain_db: int) -> None:
    # the whole input turned down, room tone included, as a microphone's gain does: Silero hears each
    # window raised by the stream's loudest (unraised, its ends came 0.1-0.2 s off and words went unfound)
    wave, truth = stream
    _assert_found(_segments(wave * np.float32(10 ** (gain_db / 20))), truth)


def test_stream_level_raises_a_quiet_stream_and_never_lowers_a_loud_one() -> None:
    from seqx.listen.level import FLOOR_CAP_DBFS, StreamLevel

    rng = np.random.default_rng(0)

    def gain_db(level: StreamLevel, dbfs: float) -> float:
        window = _white(512, dbfs, rng)
        return float(20 * np.log10(np.std(level.raise_window(window)) / np.std(window)))

    level = StreamLevel(memory_s=1.0)
    assert [round(gain_db(level, -95)) for _ in range(10)][-1] == 40  # at most 40 dB
    loud = _white(512, -10, rng)
    assert level.raise_window(loud) is loud  # never lowered
    assert gain_db(level, -95) == pytest.approx(0, abs=0.01)  # the loud window is remembered...
    gains = [gain_db(level, -95) for _ in range(40)]  # ...for memory_s (1 s = 31 windows)
    assert gains[-1] == pytest.approx(40, abs=0.5)
    # a room as loud as an ordinary one's is raised no further than FLOOR_CAP_DBFS: only a quiet microphone is
    room = StreamLevel()
    assert [gain_db(room, -60) for _ in range(10)][-1] == pytest.approx(FLOOR_CAP_DBFS + 60, abs=1)


def test_segment_audio_carries_pre_and_post_roll(stream) -> None:
    wave, _ = stream
    for event_samples, event in _with_samples(wave, pre_roll_ms=250, post_roll_ms=100):
        extra = event_samples - (event.end - event.start) * R
        assert extra == pytest.approx((0.25 + 0.1) * R, abs=1)


def _with_samples(wave: np.ndarray, **settings: object) -> list[tuple[int, object]]:
    from seqx.listen.session import segments

    vad, _ = load_vad("silero")
    return [(seg.samples.size, seg) for seg, _ in segments(_blocks(wave), vad, ListenSettings(**settings))]


def test_thresholds_are_honoured(stream, tmp_path: Path) -> None:
    wave, truth = stream
    assert _segments(wave, min_speech_ms=5000) == []  # no command is 5 s long
    default, strict = _segments(wave), _segments(wave, vad_threshold=0.95)
    assert sum(e.end - e.start for e in strict) < sum(e.end - e.start for e in default)
    for event in strict:  # a stricter threshold only ever hears less
        assert any(d.start <= event.start and event.end <= d.end for d in default)
    # two commands 600 ms apart: two commands when the endpointer waits 300 ms, one when it waits 900
    # (the VAD's decay after a voice takes ~100-150 ms of the pause)
    one, two = _espeak("check the battery", tmp_path), _espeak("scroll up", tmp_path)
    a, b = one[slice(*_voiced(one))], two[slice(*_voiced(two))]
    pair = np.concatenate(
        [np.zeros(R // 2, np.float32), a, np.zeros(int(0.6 * R), np.float32), b, np.zeros(R, np.float32)]
    )
    assert len(_segments(pair, min_silence_ms=300)) == 2
    assert len(_segments(pair, min_silence_ms=900)) == 1


def test_a_long_command_is_cut_at_max_command_s(stream) -> None:
    wave, truth = stream
    events = _segments(wave, max_command_s=0.5)
    assert any(e.cut for e in events)
    for event in events:
        assert event.end - event.start <= 0.5 + 1e-9
        if event.cut:
            assert event.end - event.start == pytest.approx(0.5, abs=1 / R)
    # the cut pieces still cover the commands: every command has a segment inside it
    for start, end in truth:
        assert any(start - TOLERANCE <= e.start < end for e in events)


def test_energy_gate_finds_the_commands_over_a_steady_noise_bed(stream) -> None:
    wave, truth = stream
    rng = np.random.default_rng(1)
    bed = make_noise("pink", wave.size, R, rng).astype(np.float32)
    quiet = _only_speech(wave, truth)
    noisy = quiet + bed * (10 ** (-50 / 20) / np.sqrt(np.mean(bed**2)))
    events = _segments(noisy, vad_kind="energy")
    _assert_found(events, truth, tolerance=0.15)


def _only_speech(wave: np.ndarray, truth: list[tuple[float, float]]) -> np.ndarray:
    out = np.zeros_like(wave)
    for start, end in truth:
        out[int(start * R) : int(end * R)] = wave[int(start * R) : int(end * R)]
    return out


def test_missing_model_falls_back_to_the_energy_gate_and_says_so(monkeypatch) -> None:
    import seqx.listen.vad as vad_module

    monkeypatch.setattr(vad_module, "silero_model_path", lambda: None)
    vad, note = vad_module.load_vad("silero")
    assert isinstance(vad, EnergyVad) and "energy gate" in note


def _cli(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    env = {**os.environ, "PYTHONPATH": str(REPO), "COLUMNS": "300", "OMP_NUM_THREADS": "1"}
    return subprocess.run(
        [sys.executable, "-m", "seqx", "listen", *args],
        input=stdin,
        capture_output=True,
        env=env,
        cwd=REPO,
        timeout=120,
    )


def test_stdin_pcm_and_input_file_give_the_same_segments(stream, tmp_path: Path) -> None:
    wave, truth = stream
    path = tmp_path / "stream.wav"
    sf.write(path, wave, R, subtype="PCM_16")
    pcm = (np.clip(wave, -1, 32767 / 32768) * 32768).astype("<i2").tobytes()
    from_file = _cli("--segments", "--json", "--input", str(path))
    from_stdin = _cli("--segments", "--json", "-", stdin=pcm)
    assert from_file.returncode == 0 and from_stdin.returncode == 0, from_file.stderr + from_stdin.stderr

    def spans(run: subprocess.CompletedProcess[bytes]) -> list[tuple[float, float]]:
        return [(r["start"], r["end"]) for r in map(json.loads, run.stdout.decode().splitlines())]

    assert spans(from_file) == spans(from_stdin)
    assert len(spans(from_file)) == len(truth)
    # 8 kHz PCM with --rate is resampled to the same commands (a little shorter: 8 kHz has no /s/ above 4 kHz)
    eight = soxr.resample(wave, R, 8000)
    pcm8 = (np.clip(eight, -1, 32767 / 32768) * 32768).astype("<i2").tobytes()
    resampled = spans(_cli("--segments", "--json", "--rate", "8000", "-", stdin=pcm8))
    assert len(resampled) == len(truth)
    assert all(abs(a[0] - b[0]) <= 0.1 and abs(a[1] - b[1]) <= 0.2 for a, b in zip(resampled, spans(from_file))), (
        resampled,
        spans(from_file),
    )


def test_no_microphone_is_one_line_and_exit_1() -> None:
    run = _cli("--segments", "--mic", "no-such-input-device-xyz")
    assert run.returncode == 1
    errors = [line for line in run.stderr.decode().splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "microphone" in errors[0] and b"Traceback" not in run.stderr


def test_actions_pass_slot_values_as_arguments_without_a_shell(tmp_path: Path) -> None:
    record = tmp_path / "args.json"
    script = tmp_path / "act.py"
    script.write_text(f"import json, sys\nopen({str(record)!r}, 'w').write(json.dumps(sys.argv[1:]))\n")
    actions = [
        ActionSettings(text="check the battery", run=[sys.executable, str(script), "battery"]),
        ActionSettings(
            intent="open_app", when={"app": "terminal"}, run=[sys.executable, str(script), "{app}", "{text}"]
        ),
    ]
    assert match_action(actions, "scroll up") is None
    assert match_action(actions, "open the terminal", "open_app", {"app": "browser"}) is None
    action = match_action(actions, "open the terminal", "open_app", {"app": "terminal"})
    argv = render_argv(action, "open the terminal; rm -rf /", {"app": "terminal"})
    start_action(argv).process.wait(timeout=30)
    assert json.loads(record.read_text()) == ["terminal", "open the terminal; rm -rf /"]  # one argument, not a shell


def test_cli_run_needs_actions_and_never_runs_without_run(tmp_path: Path, stream) -> None:
    recipe = tmp_path / "r.yaml"
    recipe.write_text("name: r\n")
    run = _cli("--segments", "--run", "--recipe", str(recipe), "--input", "nothing.wav")
    assert run.returncode == 1 and b"no actions" in run.stderr


def test_long_recording_is_cut_at_pauses_into_pieces_the_model_can_take(stream) -> None:
    wave, truth = stream
    vad, _ = load_vad("silero")
    pieces = split_long(wave, vad, max_s=4.0)
    assert len(pieces) > 1 and all(p.end - p.start <= 4.0 + 1e-9 for p in pieces)
    assert np.array_equal(np.concatenate([p.wave for p in pieces]), wave)  # pause cuts: no gap, no overlap
    for piece in pieces[:-1]:  # never inside a command
        assert not any(start < piece.end < end for start, end in truth)
    assert not any(p.hard_cut for p in pieces)
    spoken = [sum(start < p.end and end > p.start for start, end in truth) for p in pieces]
    assert max(spoken) == 1 and sum(spoken) == len(truth)  # one command a piece: what a grammar search can take


class AlwaysSpeech:
    """A VAD that hears a voice everywhere: a talker who never pauses."""

    name = "always"

    def prob(self, window: np.ndarray) -> float:
        return 1.0

    def reset(self) -> None:
        pass


def test_speech_without_pauses_is_hard_cut_with_overlap_and_joined(stream) -> None:
    wave, truth = stream
    speech = _only_speech(wave, truth)
    dense = np.concatenate([speech[int(s * R) : int(e * R)] for s, e in truth] * 3)  # voice, no pause
    pieces = split_long(dense, AlwaysSpeech(), max_s=2.0, overlap_s=0.5)
    assert all(p.end - p.start <= 2.0 + 1e-9 for p in pieces)
    assert pieces[-1].end == pytest.approx(dense.size / R)
    assert any(p.hard_cut for p in pieces)
    for before, after in zip(pieces, pieces[1:]):
        assert after.start <= before.end  # covered: overlap after a hard cut, contiguous after a pause
    assert join_texts(["check the battery open", "battery open the terminal"], [False, True]) == (
        "check the battery open the terminal"
    )
    assert join_texts(["scroll up", "scroll up"], [False, False]) == "scroll up scroll up"  # a pause cut keeps both


def _live(wave: np.ndarray, tmp_path: Path, tail_s: float = 0.0) -> subprocess.Popen[bytes]:
    """`seqx listen --realtime` on the stream, followed by tail_s seconds of silence."""
    path = tmp_path / "live.wav"
    sf.write(path, np.concatenate([wave, np.zeros(int(tail_s * R), wave.dtype)]), R, subtype="PCM_16")
    env = {**os.environ, "PYTHONPATH": str(REPO), "COLUMNS": "300", "OMP_NUM_THREADS": "1"}
    return subprocess.Popen(
        [sys.executable, "-m", "seqx", "listen", "--segments", "--realtime", "--input", str(path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        cwd=REPO,
        # Ctrl-C as a user's terminal delivers it: a shell's background job (a test run started with
        # `&`) ignores SIGINT, the child would inherit that, and Python then never raises KeyboardInterrupt
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )


def test_ctrl_c_stops_cleanly_and_a_closed_pipe_is_one_line(stream, tmp_path: Path) -> None:
    wave, _ = stream
    # 60 s of silence after the commands: the signal must find listen still running, whatever the load
    run = _live(wave, tmp_path, tail_s=60.0)
    assert run.stdout.readline()  # the first command, at its real time
    run.send_signal(signal.SIGINT)
    _, err = run.communicate(timeout=30)
    assert run.returncode == 0 and b"stopped" in err and b"Traceback" not in err

    run = _live(wave, tmp_path)
    assert run.stdout.readline()
    run.stdout.close()  # the reader goes away; the next command has nowhere to go
    err = run.stderr.read()
    assert run.wait(timeout=30) == 1
    assert err.decode().strip().splitlines() == ["error: output closed (broken pipe)"]


class _Trickle:
    """A pipe that hands over odd numbers of bytes at a time (half a sample now, the rest later)."""

    def __init__(self, data: bytes, sizes: tuple[int, ...] = (1, 7, 333, 1024, 5)) -> None:
        self.data, self.sizes, self.calls = data, sizes, 0

    def read(self, n: int) -> bytes:
        size = min(n, self.sizes[self.calls % len(self.sizes)])
        self.calls += 1
        chunk, self.data = self.data[:size], self.data[size:]
        return chunk


def test_pcm_from_a_trickling_pipe_is_the_same_audio(stream) -> None:
    from seqx.listen.sources import pcm_blocks

    wave, _ = stream
    pcm = (np.clip(wave[: R * 2], -1, 32767 / 32768) * 32768).astype("<i2")
    got = np.concatenate(list(pcm_blocks(_Trickle(pcm.tobytes()), rate=R)))
    assert np.array_equal(got, pcm.astype(np.float32) / 32768)
    # at 8 kHz the streaming resampler gives what resampling the whole at once gives
    eight = pcm[::2].tobytes()
    streamed = np.concatenate(list(pcm_blocks(_Trickle(eight), rate=8000)))
    whole = soxr.resample(np.frombuffer(eight, "<i2").astype(np.float32) / 32768, 8000, R)
    assert streamed.size == whole.size and np.allclose(streamed, whole, atol=1e-4)


def test_stereo_pcm_is_mixed_to_the_same_commands(stream) -> None:
    """A USB microphone that records stereo only (`arecord -c 2`): with --channels 2 its interleaved
    frames are mixed to mono, a frame split across reads included; read as mono they were noise at
    twice the rate."""
    from seqx.listen.sources import pcm_blocks

    wave, truth = stream
    left = (np.clip(wave, -1, 32767 / 32768) * 32768).astype("<i2")
    right = (left // 3).astype("<i2")
    frames = np.stack([left, right], axis=1)
    got = np.concatenate(list(pcm_blocks(_Trickle(frames.tobytes(), (3, 5, 1024, 333)), rate=R, channels=2)))
    assert np.allclose(got, (left.astype(np.float32) + right) / 2 / 32768)
    mono = _cli("--segments", "--json", "-", stdin=left.tobytes())
    stereo = _cli("--segments", "--json", "--channels", "2", "-", stdin=frames.tobytes())
    spans = [[(r["start"], r["end"]) for r in map(json.loads, run.stdout.decode().splitlines())] for run in (mono, stereo)]
    assert stereo.returncode == 0 and len(spans[1]) == len(spans[0]) == len(truth), stereo.stderr
    assert all(abs(a[0] - b[0]) <= 0.1 and abs(a[1] - b[1]) <= 0.2 for a, b in zip(*spans)), spans


def test_a_clipping_input_is_told_once_and_a_clean_one_never(stream, tmp_path: Path) -> None:
    """A microphone whose gain is too high (the commands driven 6 dB into full scale): `seqx listen`
    says so once, from raw PCM at 48 kHz (counted before the resampler) as from a file; the same
    stream clean, never."""
    from seqx.listen.sources import CLIPPING, file_blocks, pcm_blocks

    wave, _ = stream
    loud = np.clip(2 * wave / np.abs(wave).max(), -1, 32767 / 32768)
    for signal_, expected in [(loud, [CLIPPING]), (0.9 * wave / np.abs(wave).max(), [])]:
        pcm = (soxr.resample(signal_, R, 48000).clip(-1, 32767 / 32768) * 32768).astype("<i2")
        told: list[str] = []
        got = list(pcm_blocks(_Trickle(pcm.tobytes()), rate=48000, on_clipping=told.append))
        assert told == expected and sum(b.size for b in got) == pytest.approx(signal_.size, abs=R // 100)
        sf.write(tmp_path / "take.wav", signal_, R, subtype="PCM_16")
        told = []
        list(file_blocks(tmp_path / "take.wav", on_clipping=told.append))
        assert told == expected


def test_recipe_listen_and_actions_sections_are_checked() -> None:
    from seqx.recipe import RecipeError, recipe_from_dict

    recipe = recipe_from_dict({"listen": {"min_silence_ms": 200}, "actions": [{"text": "scroll up", "run": ["true"]}]})
    assert recipe.listen.min_silence_ms == 200 and recipe.actions[0].run == ["true"]
    with pytest.raises(RecipeError, match="listen.min_silense_ms: unknown key, did you mean listen.min_silence_ms"):
        recipe_from_dict({"listen": {"min_silense_ms": 200}})
    with pytest.raises(RecipeError, match="exactly one of intent or text"):
        recipe_from_dict({"actions": [{"run": ["true"]}]})
    with pytest.raises(RecipeError, match="actions.0.run"):
        recipe_from_dict({"actions": [{"text": "x", "run": []}]})


def test_a_microphone_that_takes_only_48_khz_gives_the_same_commands(stream, tmp_path: Path) -> None:
    """The microphone path, PortAudio and ALSA as a user's: ALSA's `file` plugin is a capture device
    whose samples are the stream at 48 kHz (its `infile`, read as fast as it is asked; silence after).
    Opened with --rate 48000, as one that refuses 16 kHz is opened, the commands are found where
    the 16 kHz file's are."""
    wave, truth = stream
    ahead = soxr.resample(wave, R, 48000).astype("<f4")
    (tmp_path / "mic48.f32").write_bytes(ahead.tobytes())
    (tmp_path / ".asoundrc").write_text(
        f'pcm.seqxmic48 {{ type file; slave.pcm null; file "/dev/null"; infile "{tmp_path / "mic48.f32"}"; format raw; }}\n'
    )
    env = {**os.environ, "HOME": str(tmp_path), "PYTHONPATH": str(REPO), "COLUMNS": "300", "OMP_NUM_THREADS": "1"}
    run = subprocess.Popen(
        [sys.executable, "-m", "seqx", "listen", "--segments", "--json", "--mic", "seqxmic48", "--rate", "48000"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=REPO,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )  # fmt: skip
    found = [json.loads(run.stdout.readline() or "null") for _ in truth]
    run.send_signal(signal.SIGINT)  # the device goes on with silence: a user's Ctrl-C ends it
    _, err = run.communicate(timeout=30)
    assert None not in found, err.decode()
    assert run.returncode == 0 and b"Traceback" not in err and b"clipped" not in err
    _assert_found([SimpleNamespace(**e) for e in found], truth, tolerance=TOLERANCE + 0.05)
