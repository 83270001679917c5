"""`seqx listen` measured: latency, idle CPU, long-file RTF; PocketSphinx's endpointer beside it.

Usage:
    python bench/listen.py --model DIR [--commands 40] [--idle-s 20] [--long-min 10] [--voice en-us]
                           [--rate-wpm 170] [--skip-peer] [--json]

The stream: `--commands` espeak-ng commands (the default recipe's kind of command) with
1.2-2.0 s of quiet room (-65 dBFS) or noise (-40 dBFS) between them, 16 kHz.
  - latency: each command's end of speech -> decoded result. It is the endpointer's
    wait (min_silence_ms of audio, plus the VAD's decay; on a live input audio time is
    wall time) + the compute after the last block arrived (VAD + featurize + search),
    measured on the wall clock with the stream fed as fast as it is read. Median, p95.
  - found: commands the endpointer found (a segment overlapping the true span), extra
    segments in the gaps, and sentence accuracy of the decoded text.
  - idle CPU: the listening loop on `--idle-s` of quiet room fed at real time (32 ms
    blocks, as a microphone delivers them): process CPU seconds / wall seconds.
  - long file: a `--long-min` minute recording of commands and pauses, cut at pauses by
    `split_long` into pieces of at most `--max-piece-s`, decoded in batches: RTF.
  - peer: PocketSphinx 5's `Endpointer` (WebRTC VAD, 0.3 s window) on the same stream,
    each of its segments decoded by PocketSphinx with its en-us default language model
    (PocketSphinx's own `LiveSpeech` loop, done by hand so its times can be taken).
Everything runs on one thread (torch, onnxruntime, PocketSphinx).
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
import torch  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from seqx.data.noise import make_noise  # noqa: E402
from seqx.decode.transcribe import transcribe_waves  # noqa: E402
from seqx.listen.segment import join_texts, split_long  # noqa: E402
from seqx.listen.session import listen  # noqa: E402
from seqx.listen.sources import file_blocks  # noqa: E402
from seqx.listen.vad import load_vad  # noqa: E402
from seqx.decode.bundle import load_bundle  # noqa: E402
from seqx.recipe import ListenSettings, TokenizerSettings  # noqa: E402
from seqx.tokenize.text import normalize_text as _normalize  # noqa: E402

R = 16000


def normalize_text(text: str) -> str:
    return _normalize(text, TokenizerSettings())


COMMANDS = ["open the terminal", "check the battery", "scroll down", "open the browser", "scroll up"]


def make_stream(n: int, voice: str, wpm: int, seed: int = 0) -> tuple[np.ndarray, list[tuple[float, float, str]]]:
    """Commands with quiet or noisy gaps; truth = (start, end, text) of each voice (-50 dBFS frames)."""
    rng = np.random.default_rng(seed)
    cache: dict[str, np.ndarray] = {}
    parts, truth, pos = [np.zeros(R // 2, dtype=np.float32)], [], R // 2
    for i in range(n):
        text = COMMANDS[i % len(COMMANDS)]
        if text not in cache:
            wav = subprocess.run(
                ["espeak-ng", "-v", voice, "-s", str(wpm), "--stdout", text], capture_output=True, check=True
            )
            with tempfile.NamedTemporaryFile(suffix=".wav") as handle:
                handle.write(wav.stdout)
                handle.flush()
                wave, rate = sf.read(handle.name, dtype="float32")
            cache[text] = soxr.resample(wave, rate, R).astype(np.float32)
        wave = cache[text]
        frames = np.sqrt((wave[: wave.size // 160 * 160].reshape(-1, 160) ** 2).mean(axis=1))
        loud = np.flatnonzero(frames > 10 ** (-50 / 20))
        truth.append(((pos + loud[0] * 160) / R, (pos + (loud[-1] + 1) * 160) / R, text))
        gap = np.zeros(int(rng.uniform(1.2, 2.0) * R), dtype=np.float32)
        if i % 3 == 1:  # noise starting after the command, inside the gap
            noise = make_noise(["white", "pink", "hum"][i % 3], gap.size - R // 2, R, rng).astype(np.float32)
            gap[R // 2 :] = noise * (10 ** (-40 / 20) / np.sqrt(np.mean(noise**2)))
        parts += [wave, gap]
        pos += wave.size + gap.size
    stream = np.concatenate(parts)
    return stream + (rng.standard_normal(stream.size) * 10 ** (-65 / 20)).astype(np.float32), truth


def score(spans: list[tuple[float, float, str]], truth: list[tuple[float, float, str]]) -> dict[str, float]:
    """Found commands, extra segments, sentence accuracy, boundary errors (ms, median of |error|)."""
    found, correct, extra, errors = 0, 0, 0, []
    matched = set()
    for start, end, text in spans:
        hit = next((i for i, t in enumerate(truth) if start < t[1] and t[0] < end and i not in matched), None)
        if hit is None:
            extra += 1
            continue
        matched.add(hit)
        found += 1
        correct += normalize_text(text) == normalize_text(truth[hit][2])
        errors += [abs(start - truth[hit][0]), abs(end - truth[hit][1])]
    return {
        "commands": len(truth),
        "found": found,
        "extra_segments": extra,
        "sentence_acc": correct / len(truth),
        "boundary_err_ms_median": 1000 * float(np.median(errors)) if errors else float("nan"),
    }


def pct(values: list[float], q: float) -> float:
    return float(np.percentile(values, q)) if values else float("nan")


def bench_seqx(stream: np.ndarray, truth, bundle, settings: ListenSettings) -> dict[str, object]:
    vad, note = load_vad(settings.vad)
    decode = (lambda waves: transcribe_waves(bundle, list(waves), bundle.decode)) if bundle else None
    blocks = [stream[i : i + 512] for i in range(0, stream.size, 512)]
    events = list(listen(blocks, vad, settings, decode))
    latency = [e.latency_ms for e in events]
    return {
        "vad": vad.name,
        "vad_note": note,
        **score([(e.start, e.end, e.text) for e in events], truth),
        "latency_ms_median": pct(latency, 50),
        "latency_ms_p95": pct(latency, 95),
        "wait_ms_median": pct([e.wait_ms for e in events], 50),
        "compute_ms_median": pct([e.compute_ms for e in events], 50),
        "compute_ms_p95": pct([e.compute_ms for e in events], 95),
    }


def bench_idle(seconds: float, settings: ListenSettings) -> dict[str, float]:
    rng = np.random.default_rng(1)
    room = (rng.standard_normal(int(seconds * R)) * 10 ** (-65 / 20)).astype(np.float32)
    with tempfile.NamedTemporaryFile(suffix=".wav") as handle:
        sf.write(handle.name, room, R, subtype="PCM_16")
        vad, _ = load_vad(settings.vad)
        cpu, wall = time.process_time(), time.perf_counter()
        events = list(listen(file_blocks(handle.name, realtime=True), vad, settings))
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    return {"idle_seconds": wall, "idle_cpu_share_of_one_core": cpu / wall, "idle_segments": len(events)}


def bench_long(minutes: float, bundle, max_piece_s: float, voice: str, wpm: int) -> dict[str, object]:
    n = int(minutes * 60 / 2.8)  # ~1.2 s of command + ~1.6 s of gap
    stream, truth = make_stream(n, voice, wpm, seed=2)
    vad, _ = load_vad("silero")
    start = time.perf_counter()
    pieces = split_long(stream, vad, max_s=max_piece_s)
    split_s = time.perf_counter() - start
    results = transcribe_waves(bundle, [torch.from_numpy(p.wave) for p in pieces], bundle.decode)
    text = join_texts([r.text for r in results], [p.hard_cut for p in pieces])
    seconds = time.perf_counter() - start
    said = " ".join(t[2] for t in truth)
    from seqx.decode.metrics import utterance_errors

    errors = utterance_errors(normalize_text(said), normalize_text(text))
    return {
        "long_audio_s": stream.size / R,
        "long_pieces": len(pieces),
        "long_split_s": split_s,
        "long_rtf": seconds / (stream.size / R),
        "long_wer": (errors.substitutions + errors.deletions + errors.insertions) / max(errors.ref_words, 1),
    }


def bench_peer(stream: np.ndarray, truth) -> dict[str, object]:
    from pocketsphinx import Decoder, Endpointer

    endpointer = Endpointer()  # window 0.3 s, ratio 0.9, LOOSE
    decoder = Decoder(loglevel="FATAL")
    pcm = (np.clip(stream, -1, 32767 / 32768) * 32768).astype("<i2").tobytes()
    step = endpointer.frame_bytes
    spans, latency, compute, waits = [], [], [], []
    speech: list[bytes] = []
    for first in range(0, len(pcm) - step + 1, step):
        arrived = time.perf_counter()
        was = endpointer.in_speech
        out = endpointer.process(pcm[first : first + step])
        if out is not None:
            speech.append(out)
        if was and not endpointer.in_speech:
            decoder.start_utt()
            decoder.process_raw(b"".join(speech), full_utt=True)
            decoder.end_utt()
            hyp = decoder.hyp()
            spent = 1000 * (time.perf_counter() - arrived)
            decided = (first + step) / 2 / R
            wait = 1000 * (decided - endpointer.speech_end)
            spans.append((endpointer.speech_start, endpointer.speech_end, hyp.hypstr if hyp else ""))
            latency.append(wait + spent)
            compute.append(spent)
            waits.append(wait)
            speech = []
    return {
        **score(spans, truth),
        "latency_ms_median": pct(latency, 50),
        "latency_ms_p95": pct(latency, 95),
        "wait_ms_median": pct(waits, 50),
        "compute_ms_median": pct(compute, 50),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, default=None, help="seqx bundle (none: endpointing only)")
    parser.add_argument("--commands", type=int, default=40)
    parser.add_argument("--idle-s", type=float, default=20.0)
    parser.add_argument("--long-min", type=float, default=10.0)
    parser.add_argument("--max-piece-s", type=float, default=20.0)
    parser.add_argument("--voice", default="en-us")
    parser.add_argument("--rate-wpm", type=int, default=170)
    parser.add_argument("--min-silence-ms", type=int, default=None)
    parser.add_argument("--skip-peer", action="store_true")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    torch.set_num_threads(1)
    settings = ListenSettings(**({"min_silence_ms": args.min_silence_ms} if args.min_silence_ms else {}))
    bundle = load_bundle(args.model) if args.model else None
    stream, truth = make_stream(args.commands, args.voice, args.rate_wpm)
    report: dict[str, object] = {"stream_s": stream.size / R, "settings": settings.model_dump()}
    report["seqx"] = bench_seqx(stream, truth, bundle, settings)
    if args.idle_s > 0:  # 0: no idle measurement (an empty stream is no input to listen to)
        report["idle"] = bench_idle(args.idle_s, settings)
    if bundle is not None and args.long_min > 0:
        report["long"] = bench_long(args.long_min, bundle, args.max_piece_s, args.voice, args.rate_wpm)
    if not args.skip_peer:
        report["pocketsphinx"] = bench_peer(stream, truth)
    if args.json:
        print(json.dumps(report, indent=1, default=float))
        return
    for name, values in report.items():
        if isinstance(values, dict):
            print(
                f"{name}: "
                + "  ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in values.items())
            )
        else:
            print(f"{name}: {values}")


if __name__ == "__main__":
    main()
