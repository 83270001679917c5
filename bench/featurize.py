"""Throughput of the featurize stage, in times faster than real time, beside librosa's own MFCC loop.

Usage:
    .venv/bin/python bench/featurize.py                  # 300 espeak-ng commands, 1 and 2 workers
    .venv/bin/python bench/featurize.py --files 1000 --workers 1 2 4 --json
    .venv/bin/python bench/featurize.py --kind mfcc      # MFCC instead of log-Mel
    .venv/bin/python bench/featurize.py --kind speech_embedding   # openwakeword's embedding (the default recipe's)

The audio is real speech made by espeak-ng, made once and reused from --cache,
in two copies: as espeak-ng writes it (22.05 kHz, so the stage resamples every
file to 16 kHz) and at 16 kHz (what `seqx data` writes, so nothing to resample).
The stage is timed whole, with `force=True`: read + resample + features +
float16 store + CMVN, pool start-up included. The librosa loop (librosa.load at
16 kHz + librosa.feature.mfcc, same window, hop and n_mels) runs over the same
files in the same process, after one warm-up call so numba's compile time is
not counted against it. Besides wall time it reports CPU time (this process and
its reaped workers), which other users of a shared machine inflate far less.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import soundfile as sf
import soxr

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from seqx.featurize.stage import run_featurize_stage  # noqa: E402
from seqx.grammar.load import load_grammar  # noqa: E402
from seqx.librosa_import import import_librosa  # noqa: E402
from seqx.recipe import load_recipe, recipe_from_dict  # noqa: E402
from seqx.workers import forkserver_cpu_seconds  # noqa: E402

VOICES = ["en-us", "en-gb", "en-us+f3", "en-gb-scotland", "en-us+m3", "en-029"]


def make_audio(folder: Path, n: int) -> list[tuple[Path, str]]:
    """n espeak-ng commands from the default recipe's grammar, made once (4 espeak-ng processes at a time)."""
    grammar = load_grammar(load_recipe("recipes/commands.yaml"))
    rng = np.random.default_rng(0)
    commands = [grammar.sample(rng).text for _ in range(n)]  # drawn, as the corpus is
    folder.mkdir(parents=True, exist_ok=True)
    jobs = [(folder / f"c{i:05d}.wav", commands[i], VOICES[i % len(VOICES)]) for i in range(n)]

    def one(job: tuple[Path, str, str]) -> None:
        path, text, voice = job
        if not path.is_file() or path.stat().st_size == 0:
            wav = subprocess.run(["espeak-ng", "-v", voice, "--stdout", text], capture_output=True, check=True).stdout
            path.write_bytes(wav)

    with ThreadPoolExecutor(4) as pool:
        list(pool.map(one, jobs))
    return [(path, text) for path, text, _ in jobs]


def at_rate(files: list[tuple[Path, str]], folder: Path, rate: int) -> list[tuple[Path, str]]:
    """The same commands resampled once to `rate` (what `seqx data` writes: 16-bit PCM at data.sample_rate)."""
    folder.mkdir(parents=True, exist_ok=True)
    out = []
    for path, text in files:
        target = folder / path.name
        if not target.is_file():
            wave, native = sf.read(path, dtype="float32")
            sf.write(target, soxr.resample(wave, native, rate) if native != rate else wave, rate, subtype="PCM_16")
        out.append((target, text))
    return out


def write_manifests(data_dir: Path, files: list[tuple[Path, str]]) -> None:
    """Every file in train (the split the stage also takes CMVN over); valid/test get one file each."""
    data_dir.mkdir(parents=True, exist_ok=True)
    rows = [{"id": p.stem, "audio": str(p), "text": t, "duration": 0.0, "speaker": "s"} for p, t in files]
    for split, part in (("train", rows), ("valid", rows[:1]), ("test", rows[:1])):
        (data_dir / f"{split}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in part))


def cpu_seconds() -> float:
    """CPU time of this process, of its reaped children and of the fork server's (seqx.workers:
    the pool's workers are its children, not ours): what contention cannot inflate."""
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime + forkserver_cpu_seconds()


def time_stage(root: Path, files: list[tuple[Path, str]], kind: str, workers: int) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one forced run of the whole stage."""
    frontend = "linear" if kind.startswith("speech_embedding") else "conv2d"  # 80 ms frames: no conv2d
    recipe = recipe_from_dict(
        {"name": "bench", "exp_dir": str(root), "features": {"kind": kind, "workers": workers},
         "model": {"frontend": frontend}}
    )  # fmt: skip
    write_manifests(recipe.data_dir, files)
    start, cpu = time.perf_counter(), cpu_seconds()
    run_featurize_stage(recipe, force=True)
    return time.perf_counter() - start, cpu_seconds() - cpu


def time_librosa(files: list[tuple[Path, str]]) -> tuple[float, float]:
    librosa = import_librosa()

    def mfcc(path: Path) -> None:
        y, _ = librosa.load(path, sr=16000)
        librosa.feature.mfcc(y=y, sr=16000, n_mfcc=40, n_fft=512, hop_length=160, win_length=400, n_mels=80)

    mfcc(files[0][0])  # warm-up: numba compiles on first use
    start, cpu = time.perf_counter(), cpu_seconds()
    for path, _ in files:
        mfcc(path)
    return time.perf_counter() - start, cpu_seconds() - cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=300)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    kinds = ["fbank", "mfcc", "speech_embedding", "speech_embedding+fbank"]
    parser.add_argument("--kind", choices=kinds, default="fbank")
    parser.add_argument("--repeat", type=int, default=3, help="best of N runs per setting (the box is shared)")
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "seqx-bench-featurize")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    native = make_audio(args.cache / "wavs", args.files)
    sets = {"22.05k": native, "16k": at_rate(native, args.cache / "wavs16k", 16000)}
    load_before = os.getloadavg()[0]
    rows = []
    for name, files in sets.items():
        audio_s = sum(sf.info(str(p)).duration for p, _ in files)
        stage_audio_s = audio_s + 2 * sf.info(str(files[0][0])).duration  # valid and test hold one file each
        runs: list[tuple[str, float, int, float, float]] = []  # what, audio seconds, utterances, wall, cpu
        with tempfile.TemporaryDirectory() as tmp:
            for workers in args.workers:
                wall, cpu = min(time_stage(Path(tmp), files, args.kind, workers) for _ in range(args.repeat))
                what = f"{name}: seqx featurize ({args.kind}), {workers} worker{'s' if workers > 1 else ''}"
                runs.append((what, stage_audio_s, len(files) + 2, wall, cpu))
        wall, cpu = min(time_librosa(files) for _ in range(args.repeat))
        runs.append((f"{name}: librosa.load + librosa.feature.mfcc loop", audio_s, len(files), wall, cpu))
        librosa_xrt = audio_s / wall
        rows += [
            {"what": what, "seconds": wall, "xrt": sec / wall, "vs_librosa": sec / wall / librosa_xrt,
             "cpu_seconds": cpu, "xrt_per_cpu": sec / cpu, "utterances_per_s": n / wall}
            for what, sec, n, wall, cpu in runs
        ]  # fmt: skip
    load = {"before": load_before, "after": os.getloadavg()[0], "cores": os.cpu_count()}
    result = {"files": len(native), "audio_seconds": audio_s, "load_average": load, "rows": rows}
    if args.json:
        print(json.dumps(result, indent=1))
        return
    print(f"{len(native)} files, {audio_s:.0f} s of audio (espeak-ng at 22.05 kHz, resampled; and at 16 kHz), "
          f"best of {args.repeat}; "
          f"load average {load['before']:.1f} -> {load['after']:.1f} on {load['cores']} cores")  # fmt: skip
    heads = f"{'wall s':>7} {'x real time':>12} {'vs librosa':>11} {'CPU s':>7} {'x RT per CPU':>13} {'utt/s':>7}"
    print(f"{'':52} {heads}")
    for r in rows:
        figures = f"{r['seconds']:7.3f} {r['xrt']:12,.0f} {r['vs_librosa']:10.1f}x"
        per_cpu = f"{r['cpu_seconds']:7.3f} {r['xrt_per_cpu']:13,.0f} {r['utterances_per_s']:7,.1f}"
        print(f"{r['what']:52} {figures} {per_cpu}")


if __name__ == "__main__":
    main()
