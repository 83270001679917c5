"""Exported model vs torch: first-result latency, beam-8 real-time factor, size on disk, peak memory, accuracy.

Usage:
    OMP_NUM_THREADS=1 python bench/export.py --model exp/commands/model --manifest exp/commands/data/test.jsonl \
        [--limit 200] [--repeats 5] [--out /tmp/seqx-export-bench] [--json]

It exports the bundle twice (fp32 and --int8) under --out, then runs every configuration in a
process of its own, so each peak resident memory (ru_maxrss) is that configuration's alone:

  torch fp32 / torch bf16   seqx.decode.transcribe.transcribe_files, decode.precision fp32 / bf16
  onnx fp32 / onnx int8     seqx.runtime.transcribe_files

each over the same files with beam 8 and everything else as the bundle decodes: its grammar,
the free beam beside it, the Silero no-speech gate, CTC-gap and distance rejection (the runtime
does all of it as the torch path does). `--free`: free decoding with no free beam and no Silero
gate on both (decode.grammar none, free_beam 0, vad_threshold 0), the comparison of the first
measurements, made before the runtime had the gates.
Timed after one warm-up file: RTF = decode seconds / audio seconds, both wall and CPU (user + system of the
process: on a shared machine the wall clock also counts waiting for a core). With
OMP_NUM_THREADS=1 both torch and onnxruntime use one thread, so CPU time is the honest comparison. Time to first result: the wall time from
starting `python -m seqx.runtime MODEL FILE` (and `seqx transcribe --model MODEL FILE`, and the
torch CLI on the bundle) to its printed text, for the file nearest 2 s, median of --repeats.
`-X importtime` and an in-process breakdown say what the first result's time is spent on.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
FREE = {"vad_threshold": 0.0, "free_beam": 0}  # with grammar none: --free, the search alone
# what seqx export puts beside the model's two graphs (embedding_model.onnx: older exports)
FEATURE_GRAPHS = ("melspectrogram.onnx", "embedding_stream.onnx", "embedding_model.onnx", "silero_vad.onnx")


def worker(kind: str, model: str, files: list[str], free: bool) -> dict:
    """One configuration, in its own process: texts, decode seconds, audio seconds, peak RSS."""
    if kind.startswith("torch"):
        import torch

        torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
        from seqx.decode.bundle import load_bundle
        from seqx.decode.transcribe import transcribe_files

        bundle = load_bundle(model, device="cpu")
        precision = "bf16" if kind == "torch-bf16" else "fp32"
        settings = bundle.decode.merged(beam=8, precision=precision, grammar="none" if free else None)
        settings = settings.model_copy(update=FREE) if free else settings
        run = lambda paths: transcribe_files(bundle, paths, settings)  # noqa: E731
    else:
        from seqx.runtime import load_exported, settings_for, transcribe_files

        exported = load_exported(model)
        settings = settings_for(exported, beam=8, **({"grammar": "none", **FREE} if free else {}))
        run = lambda paths: transcribe_files(exported, paths, settings)  # noqa: E731
    run(files[:1])  # warm-up: first-call allocations and kernel choices are not the steady state
    start, cpu = time.perf_counter(), time.process_time()
    results = run(files)
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    audio = sum(r.duration for r in results)
    return {
        "kind": kind, "texts": [r.text for r in results], "seconds": seconds, "audio": audio,
        "rtf": seconds / audio, "rtf_cpu": cpu / audio,
        "max_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }  # fmt: skip


def first_result(argv: list[str], repeats: int) -> tuple[float, float, str]:
    """Median wall seconds from process start to the first line on stdout, median CPU seconds
    (user + system) of the whole process (on a shared machine wall time includes waiting for a
    core; CPU time does not), and the line."""
    times, cpu, line = [], [], ""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    for _ in range(repeats):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env, cwd=REPO)
        assert proc.stdout is not None
        line = proc.stdout.readline().strip()
        times.append(time.perf_counter() - start)
        proc.wait()
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return statistics.median(times), statistics.median(cpu), line


def breakdown(model: str, wav: str) -> dict[str, float]:
    """Where the runtime's first result goes, in CPU seconds (user + system; on a shared machine the
    wall clock also counts waiting for a core), measured in a fresh process."""
    code = f"""
import time, json
c = time.process_time
t0 = c()
import numpy, onnxruntime, sentencepiece, soundfile
t1 = c()
from seqx.featurize.samples import read_samples
from seqx.runtime import load_exported, transcribe_waves
t2 = c()
m = load_exported({model!r})
t3 = c()
wave = read_samples({wav!r}, m.sample_rate)
t4 = c()
feats = m.features(wave)
t5 = c()
result = transcribe_waves(m, [wave])[0]
t6 = c()
feats = m.features(wave)
t7 = c()
print(json.dumps({{"import numpy+onnxruntime+sentencepiece+soundfile": t1 - t0, "import seqx.runtime": t2 - t1,
                  "load_exported (encoder + step sessions, tokenizer, grammar)": t3 - t2, "read the file": t4 - t3,
                  "features, first call (+ the 2 feature-graph sessions)": t5 - t4,
                  "the decision, first call: Silero gate (+ its session), features, search + free beam, verdict, parse": t6 - t5}}))
print(json.dumps({{"features, second call": t7 - t6}}))
"""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True).stdout
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    total = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    lines = out.strip().splitlines()
    parts, second = json.loads(lines[0]), json.loads(lines[1])
    parts["interpreter start + exit"] = total - sum(parts.values()) - sum(second.values())
    parts.update(second)  # not part of the first result: how much of the first call was set-up
    return parts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="exp/commands/model")
    parser.add_argument("--manifest", default="exp/commands/data/test.jsonl")
    parser.add_argument("--limit", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--out", default="/tmp/seqx-export-bench")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--free", action="store_true", help="free decoding, no free beam, no Silero gate (both paths)")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--files", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(worker(args.worker, args.model, json.loads(Path(args.files).read_text()), args.free)))
        return

    from seqx.data.manifest import read_manifest
    from seqx.decode.metrics import score_pairs
    from seqx.recipe import TokenizerSettings
    from seqx.tokenize.text import normalize_text

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    export_seconds = {}
    for name, flags in (("onnx", []), ("onnx-int8", ["--int8"])):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "seqx", "export", "--model", args.model, "--out", str(out / name), *flags],
                       check=True, capture_output=True, env={**os.environ, "PYTHONPATH": str(REPO)})  # fmt: skip
        export_seconds[name] = time.perf_counter() - start
    utts = read_manifest(args.manifest)[: args.limit]
    files = [u.audio for u in utts]
    (out / "files.json").write_text(json.dumps(files))
    config = json.loads((Path(args.model) / "config.json").read_text())
    tok = TokenizerSettings.model_validate(config["tokenizer"])
    refs = [normalize_text(u.text, tok) for u in utts]

    rows: list[dict] = []
    reference_texts: list[str] = []
    for kind, model in (("torch-fp32", args.model), ("torch-bf16", args.model), ("onnx-fp32", str(out / "onnx")),
                        ("onnx-int8", str(out / "onnx-int8"))):  # fmt: skip
        proc = subprocess.run(
            [sys.executable, __file__, "--worker", kind, "--model", model, "--files", str(out / "files.json"),
             *(["--free"] if args.free else [])],
            capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(REPO)},
        )  # fmt: skip
        if proc.returncode:
            raise SystemExit(f"{kind}: {proc.stderr.strip().splitlines()[-1]}")
        row = json.loads(proc.stdout.strip().splitlines()[-1])
        folder = Path(model)
        weights = [p for p in folder.iterdir() if p.suffix in (".onnx", ".safetensors")]
        weights = [p for p in weights if p.name not in FEATURE_GRAPHS]
        row["model_mb"] = sum(p.stat().st_size for p in weights) / 1e6  # the seqx model: encoder + decoder
        row["feature_graphs_mb"] = sum(p.stat().st_size for p in folder.iterdir() if p.name in FEATURE_GRAPHS) / 1e6
        row["folder_mb"] = sum(p.stat().st_size for p in folder.iterdir() if p.is_file()) / 1e6
        texts = row.pop("texts")
        reference_texts = reference_texts if rows else texts  # torch fp32's, the first row
        row["changed_vs_torch_fp32"] = sum(a != b for a, b in zip(texts, reference_texts, strict=True))
        scores = score_pairs(refs, texts)
        row["wer"], row["sentence_acc"] = scores.wer, scores.sentence_accuracy
        rows.append(row)
    base = {"fp32": rows[0], "onnx": rows[2]}
    for row in rows:
        row["speedup_vs_torch_fp32"] = base["fp32"]["rtf_cpu"] / row["rtf_cpu"]

    two_s = min(utts, key=lambda u: abs(u.duration - 2.0))
    ttfr = {
        "python -m seqx.runtime (onnx int8)": first_result([sys.executable, "-m", "seqx.runtime", str(out / "onnx-int8"), two_s.audio], args.repeats),
        "python -m seqx.runtime (onnx fp32)": first_result([sys.executable, "-m", "seqx.runtime", str(out / "onnx"), two_s.audio], args.repeats),
        "seqx transcribe --model onnx-int8": first_result([sys.executable, "-m", "seqx", "transcribe", "--model", str(out / "onnx-int8"), two_s.audio], args.repeats),
        "seqx transcribe --model BUNDLE (torch)": first_result([sys.executable, "-m", "seqx", "transcribe", "--model", args.model, "--device", "cpu", two_s.audio], args.repeats),
    }  # fmt: skip
    report = {
        "model": args.model, "files": len(files), "audio_seconds": rows[0]["audio"], "threads": os.environ.get("OMP_NUM_THREADS", "all"),
        "decoding": "free (--free)" if args.free else "as the bundle decodes (grammar, free beam, Silero, rejection)",
        "export_seconds": export_seconds, "rows": rows, "first_result_file": two_s.audio, "first_result_duration": two_s.duration,
        "first_result": {k: {"seconds": v[0], "cpu_seconds": v[1], "text": v[2]} for k, v in ttfr.items()},
        "first_result_breakdown": breakdown(str(out / "onnx-int8"), two_s.audio),
    }  # fmt: skip
    (out / "report.json").write_text(json.dumps(report, indent=1))
    if args.json:
        print(json.dumps(report, indent=1))
        return
    print(f"{args.model}: {len(files)} files, {rows[0]['audio']:.0f} s of audio, beam 8, OMP_NUM_THREADS={report['threads']}")
    print("| path | RTF (wall) | RTF (CPU) | vs torch fp32 (CPU) | model MB | feature + VAD graphs MB | folder MB | peak RSS MB | WER % | sentence acc % | texts changed |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for r in rows:
        print(f"| {r['kind']} | {r['rtf']:.4f} | {r['rtf_cpu']:.4f} | {r['speedup_vs_torch_fp32']:.2f}x | {r['model_mb']:.2f} | "
              f"{r['feature_graphs_mb']:.2f} | {r['folder_mb']:.2f} | {r['max_rss_mb']:.0f} | {100 * r['wer']:.2f} | "
              f"{100 * r['sentence_acc']:.1f} | {r['changed_vs_torch_fp32']} |")  # fmt: skip
    print(f"\ntime to first result, {two_s.duration:.2f} s file, median of {args.repeats}:")
    for name, (seconds, cpu, text) in ttfr.items():
        print(f"  {seconds:.3f} s wall, {cpu:.3f} s CPU  {name}  -> {text!r}")
    print("runtime first result, by part (CPU seconds):")
    for name, seconds in report["first_result_breakdown"].items():
        print(f"  {seconds:.3f} s  {name}")


if __name__ == "__main__":
    main()
