"""Decoding speed: real-time factor of greedy and beam search, cached vs uncached, batched vs one at a time.

Usage:
    python bench/decode.py [RECIPE] [--model DIR] [--files N] [--device cpu] [--set KEY=VALUE]
                           [--repeats 3] [--breakdown] [--json]

It decodes the first N files of the recipe's test split with the trained bundle
(default: the one `seqx train RECIPE` wrote) in several ways, all in one run so
that the ratios compare like with like on a noisy machine:

    greedy            batched, cached
    beam 4            batched, cached
    beam 8            batched, cached          <- the configuration users run
    beam 8 fp32/bf16  batched, cached, each precision forced
    beam 8            one at a time, uncached   <- the naive baseline
    beam 8            batched, uncached
    beam 8            one at a time, cached

RTF = (reading + featurizing + searching seconds) / audio seconds, the fastest of
--repeats runs of each configuration. Targets
(issue 5): beam 8 batched+cached >= 5x faster than uncached one at a time, and
RTF <= 0.02 on the 2-core CPU machine. Each configuration also reports its WER
so that a fast but wrong search would show. `decode.precision: auto` runs bf16
where the CPU has it natively (AVX512-BF16 or AMX); the fp32 and bf16 rows show
what that choice is worth on this machine.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from timing import best_of, fastest  # noqa: E402  (bench/timing.py, beside this script)

from seqx.data.manifest import read_manifest  # noqa: E402
from seqx.decode.bundle import load_bundle  # noqa: E402
from seqx.decode.metrics import score_pairs  # noqa: E402
from seqx.decode.search import beam_search, max_output_len  # noqa: E402
from seqx.decode.transcribe import (  # noqa: E402
    autocast_for,
    featurize,
    resolve_precision,
    transcribe_files,
)
from seqx.featurize.audio import load_audio  # noqa: E402
from seqx.recipe import DEFAULT_RECIPE, DecodeSettings, load_recipe  # noqa: E402
from seqx.tokenize.text import normalize_text  # noqa: E402

CONFIGS = [  # (name, beam, batched, cached, precision; None = the bundle's, `auto` unless the recipe says)
    ("greedy", 1, True, True, None),
    ("beam 4", 4, True, True, None),
    ("beam 8", 8, True, True, None),
    ("beam 8 fp32", 8, True, True, "fp32"),
    ("beam 8 bf16", 8, True, True, "bf16"),
    ("beam 8 batched uncached", 8, True, False, None),
    ("beam 8 one-at-a-time cached", 8, False, True, None),
    ("beam 8 one-at-a-time uncached", 8, False, False, None),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("recipe", nargs="?", default=str(DEFAULT_RECIPE))
    parser.add_argument("--model", type=Path, default=None)
    parser.add_argument("--files", type=int, default=64)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0 = leave as is)")
    parser.add_argument("--repeats", type=int, default=3, help="runs per configuration; the fastest counts")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="recipe override, e.g. name=x")
    parser.add_argument("--breakdown", action="store_true", help="also time reading, encoder and search apart")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)

    recipe = load_recipe(args.recipe, args.set)
    bundle = load_bundle(args.model or recipe.bundle_dir, device=args.device)
    utts = read_manifest(recipe.data_dir / "test.jsonl")[: args.files]
    paths = [u.audio for u in utts]
    refs = [normalize_text(u.text, bundle.tokenizer.settings) for u in utts]
    audio_seconds = sum(u.duration for u in utts)

    transcribe_files(bundle, paths[:4], bundle.decode)  # warm-up: allocator, kernels, file cache
    rows = []
    for name, beam, batched, cached, precision in CONFIGS:
        changes = {"beam": beam, "nbest": 1, "batch_size": 32 if batched else 1}
        settings = DecodeSettings.model_validate(
            {**bundle.decode.model_dump(), **changes, "precision": precision or bundle.decode.precision}
        )
        seconds, results = fastest(args.repeats, lambda: transcribe_files(bundle, paths, settings, use_cache=cached))
        wer = score_pairs(refs, [r.text for r in results]).wer
        used = resolve_precision(torch.device(args.device), settings.precision)
        rows.append({"config": name, "precision": used, "seconds": seconds, "rtf": seconds / audio_seconds, "wer": wer})
    baseline = next(r for r in rows if r["config"] == "beam 8 one-at-a-time uncached")["seconds"]
    for row in rows:
        row["speedup_vs_naive"] = baseline / row["seconds"]

    summary: dict[str, object] = {
        "files": len(paths),
        "audio_seconds": audio_seconds,
        "device": args.device,
        "threads": torch.get_num_threads(),
        "repeats": args.repeats,
        "model": str(args.model or recipe.bundle_dir),
        "rows": rows,
    }
    if args.breakdown:
        summary["breakdown_rtf"] = {k: v / audio_seconds for k, v in breakdown(bundle, paths, args.repeats).items()}
    if args.json:
        print(json.dumps(summary, indent=1))
        return
    print(
        f"{len(paths)} files, {audio_seconds:.1f} s of audio, device {args.device}, "
        f"{torch.get_num_threads()} threads, best of {args.repeats}"
    )
    print(f"{'config':32s} {'maths':>5s} {'seconds':>8s} {'RTF':>8s} {'x naive':>8s} {'WER %':>7s}")
    for row in rows:
        print(
            f"{row['config']:32s} {row['precision']:>5s} {row['seconds']:8.2f} {row['rtf']:8.4f} "
            f"{row['speedup_vs_naive']:8.1f} {100 * row['wer']:7.2f}"
        )
    if args.breakdown:
        parts = summary["breakdown_rtf"]
        assert isinstance(parts, dict)
        print(f"beam 8 ({bundle.decode.precision}) in parts, RTF: " + ", ".join(f"{k} {v:.4f}" for k, v in parts.items()))


def breakdown(bundle, paths: list[str], repeats: int) -> dict[str, float]:  # type: ignore[no-untyped-def]
    """Seconds of the users' configuration (beam 8, batches of 32, cached) spent in each part."""
    settings = bundle.decode.model_copy(update={"beam": 8, "nbest": 1, "batch_size": 32})
    device = bundle.device

    def read() -> list[torch.Tensor]:
        return [featurize(bundle, load_audio(p, bundle.sample_rate)) for p in paths]

    feats = sorted(read(), key=lambda f: f.shape[0])
    batches = []
    for first in range(0, len(feats), settings.batch_size):
        chunk = feats[first : first + settings.batch_size]
        lengths = torch.tensor([f.shape[0] for f in chunk], device=device)
        batches.append((torch.nn.utils.rnn.pad_sequence(chunk, batch_first=True).to(device), lengths))
    with torch.inference_mode(), autocast_for(device, settings.precision):
        encoded = [bundle.model.encode(x, n) for x, n in batches]

    def encode() -> None:
        with torch.inference_mode(), autocast_for(device, settings.precision):
            for x, n in batches:
                bundle.model.encode(x, n)

    def search(ctc_weight: float) -> None:
        with torch.inference_mode(), autocast_for(device, settings.precision):
            for memory, mem_lens in encoded:
                max_len = max_output_len(mem_lens, settings)
                beam_search(bundle.model, memory, mem_lens, beam=8, ctc_weight=ctc_weight,
                            length_penalty=settings.length_penalty, max_len=max_len)

    ctc = settings.ctc_weight if bundle.dims.ctc else 0.0
    return {
        "read+features": best_of(repeats, read),
        "encoder": best_of(repeats, encode),
        f"search (ctc {ctc:g})": best_of(repeats, lambda: search(ctc)),
        "search (no ctc)": best_of(repeats, lambda: search(0.0)),
    }


if __name__ == "__main__":
    main()
