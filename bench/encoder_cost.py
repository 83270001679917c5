"""Where decoding time goes on a CPU: the encoder's front-end and blocks, per second of audio.

Usage:
    python bench/encoder_cost.py [RECIPE] [--threads 2] [--utts 32] [--seconds 2.2] [--channels 0 128 64]
                                  [--precision fp32 bf16]

Greedy decoding of the default model misses RTF 0.02 on the 2-core machine
(docs/benchmarks.md), so the question is how much of that the encoder alone
costs, before any search. This times the default model's encoder (the recipe's
full size, not the cpu profile) on one batch of feature frames the length of
typical commands, split into the conv2d front-end and the self-attention blocks,
for several `model.conv_channels`. Timing does not depend on the weights, so the
model is freshly initialized: no trained bundle is needed, and the figures say
what a retrained model with fewer channels would cost, not how accurate it is.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from types import SimpleNamespace

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from timing import best_of  # noqa: E402  (bench/timing.py, beside this script)

from seqx.model.transformer import ModelDimensions, Seq2SeqTransformer  # noqa: E402
from seqx.recipe import DEFAULT_RECIPE, load_recipe  # noqa: E402
from seqx.tokenize.stage import vocab_size as tokenizer_vocab_size  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("recipe", nargs="?", default=str(DEFAULT_RECIPE))
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--utts", type=int, default=32, help="utterances in the batch")
    parser.add_argument("--seconds", type=float, default=2.2, help="length of each utterance")
    parser.add_argument("--channels", type=int, nargs="+", default=[0, 128, 64], help="conv_channels (0 = d_model)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--precision", nargs="+", default=["fp32", "bf16"], choices=["fp32", "bf16"],
                        help="maths to time (bf16 through CPU autocast, as `decode.precision: bf16` runs it)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)

    recipe = load_recipe(args.recipe)
    frames = round(args.seconds / (recipe.features.hop_ms / 1000))
    n_feats = recipe.features.n_feats
    feats = torch.randn(args.utts, frames, n_feats)
    lens = torch.full((args.utts,), frames)
    audio_seconds = args.utts * args.seconds
    # the model's view of a tokenizer: its size and special ids (ids do not change the cost)
    vocab = SimpleNamespace(vocab_size=tokenizer_vocab_size(recipe), pad_id=0, bos_id=1, eos_id=2, blank_id=3)
    rows = []
    for channels in args.channels:
        model_settings = recipe.model.model_copy(update={"conv_channels": channels})
        dims = ModelDimensions.from_settings(model_settings, n_feats, vocab)
        encoder = Seq2SeqTransformer(dims).eval().encoder
        front_params = sum(p.numel() for p in encoder.frontend.parameters())
        for precision in args.precision:
            bf16 = precision == "bf16"
            with torch.inference_mode(), torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
                x, _ = encoder.frontend(feats, lens)  # also the warm-up
                front = best_of(args.repeats, lambda: encoder.frontend(feats, lens))
                whole = best_of(args.repeats, lambda: encoder(feats, lens))
            rows.append(
                {
                    "conv_channels": dims.conv_channels or dims.d_model,
                    "precision": precision,
                    "frontend_params": front_params,
                    "encoder_frames": int(x.shape[1]),
                    "frontend_rtf": front / audio_seconds,
                    "blocks_rtf": (whole - front) / audio_seconds,
                    "encoder_rtf": whole / audio_seconds,
                }
            )
    summary = {"threads": args.threads, "utts": args.utts, "seconds": args.seconds, "rows": rows}
    if args.json:
        print(json.dumps(summary, indent=1))
        return
    print(f"encoder of the default model, {args.utts} x {args.seconds} s, ", end="")
    print(f"{args.threads} threads, best of {args.repeats}")
    print(
        f"{'conv_channels':>13s} {'maths':>5s} {'front params':>12s} {'front RTF':>10s} "
        f"{'blocks RTF':>10s} {'encoder RTF':>11s}"
    )
    for r in rows:
        print(
            f"{r['conv_channels']:13d} {r['precision']:>5s} {r['frontend_params']:12,d} {r['frontend_rtf']:10.4f} "
            f"{r['blocks_rtf']:10.4f} {r['encoder_rtf']:11.4f}"
        )


if __name__ == "__main__":
    main()
