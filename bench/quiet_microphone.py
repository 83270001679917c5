"""`seqx listen` with the microphone turned down: commands found, their ends, extra segments, commands right.

Usage:
    python bench/quiet_microphone.py [--model DIR] [--gains 0,-20,-30,-40,-50] [--no-level] [--json]

Four streams, each also turned down by every gain (room tone and all, as a microphone's gain does):
  - people: 100 recordings of people in one stream (KTuberling's first 40 words, KLettres' 26 letters
    by its American and its British speaker, alsa's 8 channel names), each peaking at -6 dBFS, with
    1.2-2.0 s gaps of room tone (-65 dBFS) and, in every third, white/pink/brown/hum at -40 dBFS.
    Endpointing only (their words are not the demo's grammar).
  - flite / espeak-ng: 40 of the demo grammar's commands (bench/listen.py's five), flite's four voices
    or espeak-ng's en-us, the same gaps; decoded by `--model` when given (sentence accuracy).
  - first: each of 26 recordings (10 flite commands, KLettres' A-J, 6 of alsa's) alone in a fresh stream
    after 12 s of room tone at -65 or -80 dBFS: the first command after a quiet stretch.
  - noise: 60 s of white, pink, brown, hum and alsa's Noise.wav at -80 ... -30 dBFS: segments found.
`--no-level`: Silero hears the windows as they came (seqx before the stream level), for the comparison.
People's recordings come from Debian's ktuberling, klettres-data and alsa-utils; never trained on.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import soundfile as sf  # noqa: E402
import soxr  # noqa: E402
import torch  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from listen import COMMANDS, bench_seqx, make_stream  # noqa: E402  (bench/listen.py)

from seqx.data.noise import NOISE_KINDS, make_noise  # noqa: E402
from seqx.listen import level  # noqa: E402
from seqx.listen.session import segments  # noqa: E402
from seqx.listen.vad import load_vad  # noqa: E402
from seqx.recipe import ListenSettings  # noqa: E402

R = 16000
FLITE_VOICES = ["slt", "awb", "rms", "kal"]
KLETTRES = Path("/usr/share/klettres")
ALSA = Path("/usr/share/sounds/alsa")


def _read(path: Path) -> np.ndarray:
    wave, rate = sf.read(path, dtype="float32")
    wave = wave.mean(axis=1) if wave.ndim == 2 else wave
    return soxr.resample(wave, rate, R).astype(np.float32)


def _flite(text: str, voice: str) -> np.ndarray:
    with tempfile.NamedTemporaryFile(suffix=".wav") as handle:
        subprocess.run(["flite", "-voice", voice, "-t", text, "-o", handle.name], check=True)
        return _read(Path(handle.name))


def _voiced(wave: np.ndarray, offset: int) -> tuple[float, float]:
    """Seconds from the first to the last 10 ms frame above -50 dBFS, placed at `offset` samples."""
    frames = np.sqrt((wave[: wave.size // 160 * 160].reshape(-1, 160) ** 2).mean(axis=1))
    loud = np.flatnonzero(frames > 10 ** (-50 / 20))
    return (offset + loud[0] * 160) / R, (offset + (loud[-1] + 1) * 160) / R


def people_waves() -> list[tuple[str, np.ndarray]]:
    paths = sorted(Path("/usr/share/ktuberling/sounds/en").glob("*.ogg"))[:40]
    paths += sorted((KLETTRES / "en" / "alpha").glob("*.ogg")) + sorted((KLETTRES / "en_GB" / "alpha").glob("*.ogg"))
    paths += sorted(ALSA.glob("*_*.wav"))
    return [(p.stem, _read(p)) for p in paths]


def joined(waves: list[tuple[str, np.ndarray]], seed: int = 0) -> tuple[np.ndarray, list[tuple[float, float, str]]]:
    """The recordings, each peaking at -6 dBFS, with bench/listen.py's gaps between them."""
    rng = np.random.default_rng(seed)
    parts, truth, pos = [np.zeros(R // 2, dtype=np.float32)], [], R // 2
    for i, (text, wave) in enumerate(waves):
        wave = wave / np.abs(wave).max() * 0.5
        truth.append((*_voiced(wave, pos), text))
        gap = np.zeros(int(rng.uniform(1.2, 2.0) * R), dtype=np.float32)
        if i % 3 == 1:
            noise = make_noise(NOISE_KINDS[i % 4], gap.size - R // 2, R, rng)
            gap[R // 2 :] = noise * np.float32(10 ** (-40 / 20))
        parts += [wave, gap]
        pos += wave.size + gap.size
    stream = np.concatenate(parts)
    return stream + (rng.standard_normal(stream.size) * 10 ** (-65 / 20)).astype(np.float32), truth


def first_after_quiet(waves: list[tuple[str, np.ndarray]], room_dbfs: float, gain_db: float) -> dict[str, float]:
    rng = np.random.default_rng(0)
    found = extra = 0
    errors = []
    for text, wave in waves:
        wave = wave / np.abs(wave).max() * 0.5
        lead = 12 * R
        stream = np.concatenate([np.zeros(lead, np.float32), wave, np.zeros(R, np.float32)])
        stream += (rng.standard_normal(stream.size) * 10 ** (room_dbfs / 20)).astype(np.float32)
        result = bench_seqx(stream * np.float32(10 ** (gain_db / 20)), [(*_voiced(wave, lead), text)], None,
                            ListenSettings())  # fmt: skip
        found, extra = found + result["found"], extra + result["extra_segments"]
        errors.append(result["boundary_err_ms_median"])
    return {"commands": len(waves), "found": found, "extra_segments": extra,
            "boundary_err_ms_median": float(np.nanmedian(errors))}  # fmt: skip


def noise_segments(gains: list[float]) -> dict[str, list[int]]:
    rng = np.random.default_rng(0)
    noises = {kind: make_noise(kind, 60 * R, R, rng) for kind in NOISE_KINDS}
    alsa = _read(ALSA / "Noise.wav")
    noises["alsa Noise.wav"] = np.tile(alsa / np.sqrt(np.mean(alsa**2)), 60 * R // alsa.size + 1)[: 60 * R]
    vad, _ = load_vad("silero")
    counts = {}
    for kind, noise in noises.items():
        counts[kind] = []
        for dbfs in gains:
            stream = (noise * 10 ** (dbfs / 20)).astype(np.float32)
            blocks = [stream[i : i + 512] for i in range(0, stream.size, 512)]
            counts[kind].append(sum(1 for _ in segments(blocks, vad, ListenSettings())))
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, default=None, help="a bundle of the demo's grammar (decodes flite/espeak-ng)")
    parser.add_argument("--gains", default="0,-20,-30,-40,-50", help="dB the whole stream is turned down by")
    parser.add_argument("--no-level", action="store_true", help="Silero hears the windows as they came (before)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    torch.set_num_threads(1)
    if args.no_level:
        level.StreamLevel.raise_window = lambda self, window: window  # type: ignore[method-assign]
    gains = [float(g) for g in args.gains.split(",")]
    bundle = None
    if args.model is not None:
        from seqx.decode.bundle import load_bundle

        bundle = load_bundle(args.model)
    people = people_waves()
    flite = [(t, _flite(t, FLITE_VOICES[i % 4])) for i, t in enumerate(COMMANDS * 8)]
    streams = {"people": (joined(people), None), "flite": (joined(flite), bundle),
               "espeak-ng": (make_stream(40, "en-us", 170), bundle)}  # fmt: skip
    report: dict[str, object] = {"level": "off" if args.no_level else "on"}
    for name, ((stream, truth), model) in streams.items():
        report[name] = {
            g: bench_seqx(stream * np.float32(10 ** (g / 20)), truth, model, ListenSettings()) for g in gains
        }
    firsts = flite[:10] + people[40:50] + people[92:98]
    report["first"] = {
        f"room {room}, gain {g}": first_after_quiet(firsts, room, g) for room in (-65.0, -80.0) for g in gains
    }
    report["noise"] = {"dbfs": [-80, -70, -60, -50, -40, -30], **noise_segments([-80, -70, -60, -50, -40, -30])}
    if args.json:
        print(json.dumps(report, indent=1, default=float))
        return
    for name in ("people", "flite", "espeak-ng"):
        for g, r in report[name].items():  # type: ignore[union-attr]
            acc = f"  right {100 * r['sentence_acc']:.1f}%" if streams[name][1] is not None else ""
            print(f"{name:9s} gain {g:>5}: found {r['found']}/{r['commands']}  extra {r['extra_segments']}  "
                  f"ends {r['boundary_err_ms_median']:.0f} ms{acc}")  # fmt: skip
    for key, r in report["first"].items():  # type: ignore[union-attr]
        print(f"first     {key}: found {r['found']}/{r['commands']}  extra {r['extra_segments']}  "
              f"ends {r['boundary_err_ms_median']:.0f} ms")  # fmt: skip
    for kind, counts in report["noise"].items():  # type: ignore[union-attr]
        print(f"noise     {kind}: {counts}")


if __name__ == "__main__":
    main()
