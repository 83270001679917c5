"""One bundle with intent/slot heads, decoded grammar-constrained at several decode.slot_weight values.

Usage:
    python bench/slot_heads.py RECIPE [--set KEY=VALUE ...] [--model DIR] [--split test]
                               [--weights 0,0.1,0.3,1] [--json]

The same model and the same negative set at every weight (weight 0 = the constrained beam alone),
so the figures isolate the heads' vote from what training with them did to the model. Per
weight, twice: with the rejection thresholds chosen again on the valid split for that weight
(seqx/decode/reject.py calibrate, as training does for the bundle's weight; test is never looked
at to choose them), and with every rejection check off ("open": the ranking alone). Each gives
sentence accuracy, command acceptance, false rejects, out-of-grammar and noise false accepts,
per-slot accuracy and the real-time factor (`seqx evaluate`'s constrained figures; the free
run, which the weight does not touch, is left out). A bundle without heads: weight 0 only.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from seqx.decode.bundle import load_bundle  # noqa: E402
from seqx.decode.evaluate import evaluate  # noqa: E402
from seqx.decode.negatives import build_negatives  # noqa: E402
from seqx.decode.reject import calibrate, without_rejection  # noqa: E402
from seqx.decode.transcribe import Constraint  # noqa: E402
from seqx.recipe import load_recipe  # noqa: E402


def heads_alone(recipe, bundle, split: str) -> dict:  # noqa: ANN001
    """What the heads say by themselves (each head's most likely class) against the grammar's parse
    of each command's transcript: per slot key (and intent) the share right, and the share of
    commands with every head right ("none" included for the slots the command does not use)."""
    import torch

    from seqx.data.manifest import read_manifest
    from seqx.decode.transcribe import featurize
    from seqx.featurize.audio import load_audio

    layout, grammar = bundle.heads, bundle.grammar
    right: dict[str, list[bool]] = {}
    whole = []
    for utt in read_manifest(recipe.data_dir / f"{split}.jsonl"):
        want = grammar.parse(bundle.tokenizer.normalize(utt.text)) if utt.text else None
        if want is None:
            continue
        feats = featurize(bundle, load_audio(utt.audio, bundle.sample_rate))[None]
        with torch.inference_mode():
            memory, lens = bundle.model.encode(feats, torch.tensor([feats.shape[1]]))
            logprobs = bundle.model.slot_logprobs(memory, lens)[0].numpy()
        said = layout.decode(logprobs)
        right.setdefault("intent", []).append(said["intent"] == want.intent)
        for key, value in want.slots.items():
            right.setdefault(key, []).append(said.get(key) == value)
        ends = layout.offsets()
        best = [int(logprobs[a:b].argmax()) for a, b in zip(ends[:-1], ends[1:])]  # each head's class
        whole.append(best == layout.classes(want))
    return {"slot_weight": None, "rejection": "heads alone", "commands": len(whole),
            "acceptance": sum(whole) / max(len(whole), 1),
            "slot_accuracy": {k: sum(v) / len(v) for k, v in sorted(right.items())}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("recipe", type=Path)
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--model", type=Path, default=None, help="bundle (default: the recipe's)")
    parser.add_argument("--split", default="test")
    parser.add_argument("--weights", default="0,0.1,0.3,1")
    parser.add_argument("--oog", type=int, default=120)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    recipe = load_recipe(args.recipe, args.set).for_device("cpu")
    bundle = load_bundle(args.model or recipe.bundle_dir)
    weights = [float(w) for w in args.weights.split(",")]
    if bundle.heads is None and any(weights):
        raise SystemExit(f"{args.model or recipe.bundle_dir}: this bundle has no intent/slot heads (--weights 0)")
    grammar = bundle.grammar
    folder = recipe.eval_dir / ("negatives" if args.split == "test" else f"negatives-{args.split}")
    negatives = build_negatives(recipe, grammar, args.split, folder, n_oog=args.oog)
    rows = []
    if bundle.heads is not None:
        rows.append(heads_alone(recipe, bundle, args.split))
        if not args.json:
            print(f"heads alone: {({k: round(100 * v, 1) for k, v in rows[-1]['slot_accuracy'].items()})}, "
                  f"all right {100 * rows[-1]['acceptance']:.2f}%", flush=True)
    for weight in weights:
        # what calibrate decodes valid with; both thresholds chosen again, as training does with `auto`
        bundle.decode = bundle.decode.merged(slot_weight=weight, reject_distance="auto")
        found = calibrate(recipe, bundle, grammar)
        checked = bundle.decode.merged(reject_margin=found.margin, reject_distance=found.distance)
        opened = without_rejection(bundle.decode)  # every check off, the confidence floor too
        for mode, settings in (("calibrated", checked), ("open", opened)):
            start = time.process_time()
            report = evaluate(recipe, bundle, settings, args.split, tag=f"slot{weight:g}-{mode}",
                              constraint=Constraint.of(bundle, settings), negatives=negatives, parser=grammar)
            cpu = time.process_time() - start
            c, n = report.commands, report.negatives
            rows.append({
                "slot_weight": weight, "rejection": mode, "reject_margin": settings.reject_margin,
                "reject_distance": settings.reject_distance, "sentence_accuracy": report.overall.sentence_accuracy,
                "wer": report.overall.wer, "acceptance": c.acceptance, "false_rejects": c.false_rejects,
                "oog_false_accepts": n.oog_false_accepts, "noise_false_accepts": n.noise_false_accepts,
                "slot_accuracy": c.slot_accuracy, "rtf": report.rtf, "cpu_seconds": cpu, "commands": c.commands,
                "oog": n.oog, "noise": n.noise,
            })  # fmt: skip
            if not args.json:
                r = rows[-1]
                print(f"w={weight:g} {mode} (margin {r['reject_margin']}, distance {r['reject_distance']}): "
                      f"sentence {100 * r['sentence_accuracy']:.2f}%, acceptance {100 * r['acceptance']:.2f}%, "
                      f"FR {100 * r['false_rejects']:.2f}%, OOG FA {100 * r['oog_false_accepts']:.2f}%, "
                      f"noise FA {100 * r['noise_false_accepts']:.2f}%, RTF {r['rtf']:.3f}, "
                      f"slots {({k: round(100 * v, 1) for k, v in r['slot_accuracy'].items()})}", flush=True)
    if args.json:
        print(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
