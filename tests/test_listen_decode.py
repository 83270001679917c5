"""`seqx listen` with a real (tiny) model: each command in a stream is decoded as it ends, as the
model decodes its file alone, and `--run` starts the recipe's action (a harmless script the test
writes), never without `--run`.

The model is trained once for the module (~1 min on one core) on a three-template espeak-ng
grammar with one training voice; it knows little beyond its training files, so the stream is
made of training files: this tests the listening, not the learning.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
import torch

from seqx.data.manifest import read_manifest
from seqx.decode.transcribe import transcribe_files, transcribe_waves
from seqx.featurize.audio import load_audio
from seqx.decode.bundle import Bundle
from seqx.recipe import Recipe
from tiny import TEMPLATES, train_tiny

R = 16000
REPO = Path(__file__).resolve().parents[1]
TINY = [
    *TEMPLATES,
    "data.synth.empty_share=0.4",
    "train.epochs=60",
    # more than test_decode's 64 files, with lead and trail from none to 0.5 s: segments cut by the
    # endpointer are not the training files, and a model that only knows those files' exact padding
    # truncates the segments' last words
    "data.size=160",
    "data.synth.lead_s=[0.0, 0.5]",
    "data.synth.trail_s=[0.0, 0.5]",
]


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> tuple[Recipe, Bundle]:
    return train_tiny(tmp_path_factory.mktemp("listen_model"), TINY)


@pytest.fixture(scope="module")
def stream(trained: tuple[Recipe, Bundle], tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    """Three training commands (files the tiny model knows), 1.2 s of quiet room between them,
    and what `transcribe_files` makes of each file alone."""
    recipe, bundle = trained
    utts = [u for u in read_manifest(recipe.data_dir / "train.jsonl") if u.text]
    picked: dict[str, str] = {}
    for utt in utts:  # one file per text, the first three texts
        picked.setdefault(utt.text, utt.audio)
    paths = list(picked.values())[:3]
    alone = [r.text for r in transcribe_files(bundle, paths, bundle.decode)]
    parts = [np.zeros(R // 2, dtype=np.float32)]
    for path in paths:
        parts += [load_audio(path, R).numpy(), np.zeros(int(1.2 * R), dtype=np.float32)]
    wave = np.concatenate(parts)
    # no room tone here: this model never heard any (its corpus has noise_share=0)
    out = tmp_path_factory.mktemp("listen_stream") / "stream.wav"
    sf.write(out, wave, R, subtype="PCM_16")
    return out, alone


def test_transcribe_waves_equals_transcribe_files(trained: tuple[Recipe, Bundle]) -> None:
    recipe, bundle = trained
    paths = [u.audio for u in read_manifest(recipe.data_dir / "train.jsonl")[:6]]
    waves = [load_audio(p, bundle.sample_rate) for p in paths]
    from_files = transcribe_files(bundle, paths, bundle.decode)
    from_waves = transcribe_waves(bundle, [*waves, torch.zeros(8000)], bundle.decode)
    assert [r.text for r in from_waves[:-1]] == [r.text for r in from_files]
    assert [r.score for r in from_waves[:-1]] == pytest.approx([r.score for r in from_files])
    assert from_waves[-1].no_speech and not from_waves[-1].text  # digital silence: the model is not asked


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO), "COLUMNS": "300", "OMP_NUM_THREADS": "1"}
    return subprocess.run(
        [sys.executable, "-m", "seqx", "listen", *args], capture_output=True, text=True, env=env, cwd=REPO, timeout=300
    )


def test_listen_decodes_each_command_and_runs_its_action_only_with_run(
    trained: tuple[Recipe, Bundle], stream: tuple[Path, list[str]], tmp_path: Path
) -> None:
    _, bundle = trained
    path, alone = stream
    assert all(alone) and len(set(alone)) == 3  # the model knows these files
    record = tmp_path / "ran.txt"
    script = tmp_path / "act.py"
    script.write_text(f"import sys\nopen({str(record)!r}, 'a').write(' '.join(sys.argv[1:]) + '\\n')\n")
    recipe = tmp_path / "listen.yaml"
    recipe.write_text(
        "name: listen\nactions:\n"
        f"  - {{text: {alone[0]}, run: [{sys.executable}, {script}, first, '{{text}}']}}\n"
        f"  - {{text: {alone[2]}, run: [{sys.executable}, {script}, third]}}\n"
    )
    base = ["--model", str(bundle.folder), "--recipe", str(recipe), "--input", str(path)]
    plain = _cli(*base)
    assert plain.returncode == 0, plain.stderr
    # each command as the model hears it alone (then, tab-separated, its intent and slots)
    assert [line.split("\t")[0] for line in plain.stdout.splitlines()] == alone
    assert not record.exists()  # no --run: nothing is executed
    # --set decode.KEY=VALUE reaches the model's decoding, as in `seqx transcribe`: one output token
    # leaves no whole command, so every segment is rejected and nothing is printed
    capped = _cli(*base, "--set", "decode.max_len=1", "--json")
    assert capped.returncode == 0, capped.stderr
    assert not any(json.loads(line)["understood"] for line in capped.stdout.splitlines())

    ran = _cli(*base, "--run", "--json")
    assert ran.returncode == 0, ran.stderr
    events = [json.loads(line) for line in ran.stdout.splitlines()]
    assert [e["text"] for e in events] == alone
    assert all(e["latency_ms"] > 0 and e["end"] > e["start"] for e in events)
    # the bundle's grammar (each template of the recipe its own intent) gives every command its intent
    assert [e["intent"] for e in events] == [bundle.grammar.parse(text).intent for text in alone]
    assert ran.stderr.count("run: ") == 2
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and (not record.exists() or len(record.read_text().splitlines()) < 2):
        time.sleep(0.1)
    assert sorted(record.read_text().splitlines()) == [f"first {alone[0]}", "third"]


def test_long_file_is_cut_at_pauses_and_never_costs_the_batch(
    trained: tuple[Recipe, Bundle], stream: tuple[Path, list[str]], tmp_path: Path
) -> None:
    """A recording longer than decode.max_segment_s is decoded in pieces cut at its pauses; the
    files beside it in the same call are transcribed as if alone, and a corrupt one is named."""
    recipe, bundle = trained
    long_path, alone = stream
    bad = tmp_path / "corrupt.wav"
    bad.write_bytes(b"RIFF\x00\x00\x00\x00WAVEnot really")
    settings = bundle.decode.model_copy(update={"max_segment_s": 3.0})  # the stream is ~8 s: >= 3 pieces
    first_file = [u.audio for u in read_manifest(recipe.data_dir / "train.jsonl") if u.text][0]
    results = transcribe_files(bundle, [str(long_path), str(bad), first_file], settings, warn_unreadable=False)
    long, corrupt, single = results
    assert long.segments is not None and len(long.segments) >= 3
    assert all(s["end"] - s["start"] <= 3.0 + 1e-6 for s in long.segments)
    heard = [s["text"] for s in long.segments if s["understood"]]
    assert long.text == " ".join(heard) and set(alone) <= set(heard)  # every command, each in a piece of its own
    assert corrupt.error and not corrupt.text
    assert single.segments is None and single.text == transcribe_files(bundle, [first_file], settings)[0].text


def test_with_a_wake_word_only_the_commands_after_it_are_decoded(
    trained: tuple[Recipe, Bundle], stream: tuple[Path, list[str]], tmp_path: Path
) -> None:
    """`--wake-word "hey jarvis"`: espeak-ng's "hey jarvis" right before the first command (one breath),
    nothing before the second, said alone 0.8 s before the third. The first and third are decoded as
    the model decodes their files alone (the word is cut off the first), the second is not decoded."""
    recipe, bundle = trained
    _, alone = stream
    utts = [u for u in read_manifest(recipe.data_dir / "train.jsonl") if u.text]
    picked: dict[str, str] = {}
    for utt in utts:
        picked.setdefault(utt.text, utt.audio)
    first, second, third = (load_audio(p, R).numpy() for p in list(picked.values())[:3])
    said = tmp_path / "wake.wav"
    subprocess.run(["espeak-ng", "-v", "en-us", "-w", str(said), "hey jarvis"], check=True)
    word = load_audio(str(said), R).numpy()
    word = word[: np.flatnonzero(np.abs(word) > 0.01)[-1] + 1]  # espeak's trailing silence off: one breath
    gap = np.zeros(int(1.5 * R), dtype=np.float32)
    # digital silence between, as in the module's stream: this model never heard room tone
    wave = np.concatenate([gap, word, np.zeros(R // 8, np.float32), first, gap, second, gap, word,
                           np.zeros(int(0.8 * R), np.float32), third, gap])
    path = tmp_path / "woken.wav"
    sf.write(path, wave, R, subtype="PCM_16")
    run = _cli("--model", str(bundle.folder), "--input", str(path), "--wake-word", "hey jarvis", "--json")
    assert run.returncode == 0, run.stderr
    lines = [json.loads(line) for line in run.stdout.splitlines()]
    events = [e for e in lines if e.get("event") != "wake"]
    assert [e["text"] for e in events if e["understood"]] == [alone[0], alone[2]], json.dumps(lines)
    # the moment each word is heard, a line of its own, before the command it opens ends
    wakes = [(i, e) for i, e in enumerate(lines) if e.get("event") == "wake"]
    assert [e["wake_word"] for _, e in wakes] == ["hey jarvis"] * 2 and all(e["score"] >= 0.5 for _, e in wakes)
    decoded = [i for i, e in enumerate(lines) if e.get("understood")]
    assert wakes[0][0] < decoded[0] < wakes[1][0] < decoded[1]
    assert wakes[0][1]["wake"] == [e["wake"] for e in events if e["understood"]][0]  # the word in one breath
    assert set(wakes[0][1]) >= set(events[0])  # shaped as a segment: a reader of segments does not trip on it
    second_at = (2 * gap.size + word.size + R // 8 + first.size) / R
    second_span = (second_at, second_at + second.size / R)
    heard_second = [e for e in events if second_span[0] <= e["start"] < second_span[1]]
    assert len(heard_second) == 1 and heard_second[0]["wake"] is None  # heard, not decoded
    plain = _cli("--model", str(bundle.folder), "--input", str(path), "--wake-word", "hey jarvis")
    assert [line.split("\t")[0] for line in plain.stdout.splitlines()] == [alone[0], alone[2]]
    assert plain.stderr.count("(hey jarvis)") == 2  # shown when heard, so a person knows to go on
    # listen.wake_run: started the moment the word is heard, only with --run
    record = tmp_path / "woke.txt"
    script = tmp_path / "woke.py"
    script.write_text(f"open({str(record)!r}, 'a').write('woke\\n')\n")
    recipe_file = tmp_path / "wake.yaml"
    recipe_file.write_text(f"name: wake\nlisten:\n  wake_run: [{sys.executable}, {script}]\n")
    quiet = _cli("--model", str(bundle.folder), "--recipe", str(recipe_file), "--input", str(path), "--wake-word", "hey jarvis")
    assert quiet.returncode == 0 and not record.exists()
    ran = _cli("--model", str(bundle.folder), "--recipe", str(recipe_file), "--input", str(path), "--wake-word",
               "hey jarvis", "--run")
    assert ran.returncode == 0, ran.stderr
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and (not record.exists() or len(record.read_text().splitlines()) < 2):
        time.sleep(0.1)
    assert record.read_text().splitlines() == ["woke", "woke"]


def _events_of(raw: bytes) -> list:
    import io

    from seqx.serve.wyoming import read_event

    stream, events = io.BytesIO(raw), []
    while (event := read_event(stream)) is not None:
        events.append(event)
    return events


def test_serve_answers_home_assistants_wyoming_requests_as_transcribe_does(
    trained: tuple[Recipe, Bundle], tmp_path: Path
) -> None:
    """`seqx serve`: a client on a real TCP socket sends what Home Assistant's Wyoming integration
    sends (describe; transcribe, audio-start, audio-chunk..., audio-stop) and gets the model's answer
    for the same file (16 kHz mono, and 48 kHz stereo resampled), "" for silence, and an `error` for
    a bad chunk or a bad header without losing the utterance or (for a chunk) the connection."""
    import socket
    import threading

    from seqx.cli.cmd_listen import wave_decoder
    from seqx.serve.server import open_server
    from seqx.serve.service import Service
    from seqx.serve.wyoming import read_event, write_event

    recipe, bundle = trained
    path = [u.audio for u in read_manifest(recipe.data_dir / "train.jsonl") if u.text][0]
    alone = transcribe_files(bundle, [path], bundle.decode)[0]
    assert alone.understood and alone.text
    heard: list[dict] = []
    server = open_server("tcp://127.0.0.1:0", Service("tiny", wave_decoder(bundle.folder, recipe)), on_result=heard.append)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        with socket.create_connection(server.server_address[:2], timeout=120) as sock, sock.makefile("rwb") as conn:
            write_event(conn, "describe")
            info = read_event(conn)
            assert info.type == "info" and info.data["asr"][0]["models"][0]["languages"] == ["en"]
            assert info.data["asr"][0]["installed"] and info.data["asr"][0]["models"][0]["name"] == "tiny"

            def say(wave: np.ndarray, rate: int, channels: int = 1, extra: bytes = b"") -> list:
                pcm = (np.clip(wave, -1, 1) * 32767).astype(np.int16)
                pcm = np.repeat(pcm, channels).tobytes()
                audio = {"rate": rate, "width": 2, "channels": channels}
                write_event(conn, "transcribe", {"language": "en"})
                write_event(conn, "audio-start", audio)
                step = 2 * channels * 1024
                for at in range(0, len(pcm), step):  # Home Assistant sends chunks of 1024 samples
                    write_event(conn, "audio-chunk", audio, pcm[at : at + step])
                    if at == 0 and extra:
                        write_event(conn, "audio-chunk", audio, extra)
                write_event(conn, "audio-stop")
                events = [read_event(conn)]
                while events[-1].type != "transcript":
                    events.append(read_event(conn))
                return events

            wave = load_audio(path, R).numpy()
            (said,) = say(wave, R)
            assert said.data["text"] == alone.text and said.data["understood"]
            assert said.data["intent"] == alone.intent and said.data["language"] == "en"
            import soxr

            *errors, stereo = say(soxr.resample(wave, R, 48000), 48000, channels=2, extra=b"\x00\x01\x02")
            assert [e.type for e in errors] == ["error"] and "not whole 4-byte frames" in errors[0].data["text"]
            assert stereo.data["text"] == alone.text  # the bad chunk skipped, the utterance kept
            (silent,) = say(np.zeros(R, np.float32), R)
            assert silent.data["text"] == "" and not silent.data["understood"]
            assert [h["text"] for h in heard] == [alone.text, alone.text, ""]
            conn.write(b"{not json\n")
            conn.flush()
            bad = read_event(conn)
            assert bad.type == "error" and "not JSON" in bad.data["text"] and read_event(conn) is None
    finally:
        server.shutdown()
        server.server_close()


def test_serve_over_stdio_is_the_cli_end_to_end(trained: tuple[Recipe, Bundle]) -> None:
    """`seqx serve --uri stdio://` (how a Rhasspy 3 pipeline runs a program): events in on stdin, out on
    stdout, the log on stderr; a wrong --uri is one line."""
    from seqx.serve.wyoming import write_event

    recipe, bundle = trained
    path = [u.audio for u in read_manifest(recipe.data_dir / "train.jsonl") if u.text][0]
    alone = transcribe_files(bundle, [path], bundle.decode)[0]
    import io

    sent = io.BytesIO()
    pcm = (load_audio(path, R).numpy() * 32767).astype(np.int16).tobytes()
    write_event(sent, "describe")
    write_event(sent, "audio-start", {"rate": R, "width": 2, "channels": 1})
    write_event(sent, "audio-chunk", {"rate": R, "width": 2, "channels": 1}, pcm)
    write_event(sent, "audio-stop")
    # Home Assistant's conversation agent: a command's text (as another recognizer writes it), then one outside
    write_event(sent, "transcript", {"text": alone.text.capitalize() + ".", "context": {"conversation_id": "c1"}})
    write_event(sent, "recognize", {"text": "open the pod bay doors"})
    env = {**os.environ, "PYTHONPATH": str(REPO), "COLUMNS": "300", "OMP_NUM_THREADS": "1"}
    run = subprocess.run([sys.executable, "-m", "seqx", "serve", "--model", str(bundle.folder), "--uri", "stdio://"],
                         input=sent.getvalue(), capture_output=True, env=env, cwd=REPO, timeout=300)
    assert run.returncode == 0, run.stderr.decode()
    events = _events_of(run.stdout)
    assert [e.type for e in events] == ["info", "transcript", "intent", "not-recognized"]
    assert events[0].data["intent"][0]["models"][0]["name"] == bundle.folder.name  # the conversation agent's
    assert events[1].data["text"] == alone.text and alone.text in run.stderr.decode()
    assert alone.intent and events[2].data["name"] == alone.intent and events[2].data["context"] == {"conversation_id": "c1"}
    assert {e["name"]: e["value"] for e in events[2].data.get("entities", [])} == alone.slots
    assert events[3].data["heard"] == "open the pod bay doors"
    wrong = subprocess.run([sys.executable, "-m", "seqx", "serve", "--model", str(bundle.folder), "--uri", "http://x:1"],
                           capture_output=True, text=True, env=env, cwd=REPO, timeout=300)
    assert wrong.returncode == 1 and "expected tcp://HOST:PORT" in wrong.stderr and len(wrong.stderr.splitlines()) == 1
