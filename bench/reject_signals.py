"""Which signal tells a command from out-of-grammar speech: measured on a split and its negatives.

Usage:
    python bench/reject_signals.py recipes/commands.yaml --model exp/commands/model \
        [--set KEY=VALUE ...] [--splits valid,test] [--n-oog 120 (test)] [--out signals.jsonl] [--json]

Decodes each split (its commands and nothing-said files) and its negative set (out-of-grammar
sentences spoken by the split's voices, noise) constrained by the model's grammar, with every
rejection check off and a free beam beside it, and writes one record per item: kind (right /
wrong command, oog, noise), the CTC gap, the joint-score gap to the free best (`free_gap`),
whether the free best is in the grammar, its word edit distance to the constrained answer, the
attention confidence and the n-best margin (`nbest_margin`, read by bench/nbest_margin.py). Then it prints each signal's medians per kind and, for each rule, the
threshold chosen on the first split (valid: fewest false rejects + false accepts) and the false
accepts / false rejects it gives on every split. Nothing is written into the recipe's
experiment except the negatives folders (exp/NAME/eval/negatives*), which evaluate reuses.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from seqx.data.manifest import read_manifest  # noqa: E402
from seqx.data.synth import corpus_grammar  # noqa: E402
from seqx.decode.bundle import load_bundle  # noqa: E402
from seqx.decode.evaluate import same_command  # noqa: E402
from seqx.decode.negatives import build_negatives  # noqa: E402
from seqx.decode.reject import (  # noqa: E402
    choose_margin, choose_pair, valid_negatives, without_rejection, word_distance,
)
from seqx.decode.transcribe import Constraint, transcribe_files  # noqa: E402
from seqx.grammar.model import Grammar  # noqa: E402
from seqx.recipe import load_recipe  # noqa: E402

NBEST = 8  # answers kept per item, for the n-best margin (the recipe's beam is 8)
SIGNALS = ("ctc_gap", "free_gap", "free_distance", "ctc_distance", "low_confidence", "agreement")


def records(recipe_path: str, model: str, overrides: list[str], split: str, n_oog: int) -> list[dict]:
    recipe = load_recipe(recipe_path, overrides)
    bundle = load_bundle(model)
    grammar = bundle.grammar or corpus_grammar(recipe.data)  # an older bundle stores none
    constraint = Constraint(grammar, bundle.automaton(grammar))
    utts = read_manifest(recipe.data_dir / f"{split}.jsonl")
    # valid: the very set `seqx train` chose the thresholds on (a different count would remake its
    # folder under the bundle); test: evaluate's repeats, with --n-oog sentences
    if split == "valid":
        negatives = valid_negatives(recipe, grammar)
    else:
        folder = recipe.eval_dir / ("negatives" if split == "test" else f"negatives-{split}")
        repeats = 2 if split == "test" else 1
        negatives = build_negatives(recipe, grammar, split, folder, n_oog=n_oog, noise_repeats=repeats)
    # every check off, the distance check too (its text would be blanked); an 8-best for `nbest_margin`
    settings = without_rejection(bundle.decode).merged(nbest=NBEST)
    paths = [u.audio for u in utts] + [n.audio for n in negatives]
    results = transcribe_files(bundle, paths, settings, constraint=constraint)
    out = []
    items = [(u.text, "command" if u.text else "noise", "") for u in utts]
    items += [(n.said, n.kind, n.detail) for n in negatives]
    for (said, kind, detail), res in zip(items, results, strict=True):
        if kind == "command":
            want, got = grammar.parse(said), grammar.parse(res.text) if res.text else None
            kind = "right" if same_command(want, got) else "wrong"
        free = res.free_text
        out.append({
            "split": split, "kind": kind, "detail": detail, "said": said, "text": res.text, "free_text": free,
            "reason": res.reason, "ctc_gap": res.ctc_gap, "free_gap": res.free_gap,
            "free_in_grammar": bool(free) and grammar.accepts(free),
            "free_distance": word_distance(free, res.text) if free is not None and res.text else None,
            "ctc_text": res.ctc_text, "ctc_in_grammar": bool(res.ctc_text) and grammar.accepts(res.ctc_text),
            "ctc_distance": word_distance(res.ctc_text, res.text) if res.ctc_text is not None and res.text else None,
            "confidence": res.confidence, "nbest_margin": nbest_margin(grammar, res.nbest),
            "duration": res.duration,  # the file's seconds: about how many 80 ms frames the CTC gap is per
        })  # fmt: skip
    return out


def nbest_margin(grammar: Grammar, nbest: list[dict]) -> float | None:
    """The best answer's score minus that of the best answer in the n-best that is a different
    command (another intent or slot value; another wording of the same command does not count);
    None when the n-best holds no other command."""
    def command(text: str) -> tuple[str, str] | None:
        parse = grammar.parse(text)
        return None if parse is None else (parse.intent, json.dumps(parse.slots, sort_keys=True))

    if not nbest:
        return None
    best = command(str(nbest[0]["text"]))
    other = next((float(h["score"]) for h in nbest[1:] if command(str(h["text"])) != best), None)
    return None if other is None else float(nbest[0]["score"]) - other


def value(rec: dict, signal: str) -> float | None:
    """The record's score for a rule (higher = more likely not a command); None = rejected before."""
    if rec["reason"] is not None and rec["reason"] != "rejected":
        return None
    if signal == "low_confidence":
        return -rec["confidence"]
    if signal == "agreement":  # free disagreement: 0 when the free best is in the grammar
        return 0.0 if rec["free_in_grammar"] else rec["free_distance"]
    return rec[signal]


def summary(by_split: dict[str, list[dict]]) -> dict:
    medians = {}
    for split, recs in by_split.items():
        for kind in ("right", "wrong", "oog", "noise"):
            group = [r for r in recs if r["kind"] == kind]
            row = {"n": len(group), "free_in_grammar": sum(r["free_in_grammar"] for r in group) / max(len(group), 1)}
            for signal in ("ctc_gap", "free_gap", "free_distance", "ctc_distance", "confidence"):
                vals = [r[signal] for r in group if r[signal] is not None and math.isfinite(r[signal])]
                row[signal] = round(statistics.median(vals), 4) if vals else None
            medians[f"{split}/{kind}"] = row
    first = next(iter(by_split))
    rules = {}
    for signal in SIGNALS:
        def split_values(recs: list[dict], signal: str = signal) -> tuple[list, list]:
            cmds = [value(r, signal) for r in recs if r["kind"] in ("right", "wrong")]
            negs = [value(r, signal) for r in recs if r["kind"] in ("oog", "noise")]
            return cmds, negs

        margin, *_ = choose_margin(*split_values(by_split[first]))
        rules[signal] = {"margin": round(margin, 4)}
        for split, recs in by_split.items():
            rules[signal][split] = rates(recs, lambda r, s=signal, m=margin: (v := value(r, s)) is None or v > m)
    for distance in ("free_distance", "ctc_distance"):
        def pair(r: dict, distance: str = distance) -> tuple[float, float] | None:
            gap, dist = value(r, "ctc_gap"), r[distance]
            return None if gap is None else (gap, 1.0 if dist is None else dist)

        recs = by_split[first]
        gap_m, dist_m, *_ = choose_pair([pair(r) for r in recs if r["kind"] in ("right", "wrong")],
                                        [pair(r) for r in recs if r["kind"] in ("oog", "noise")])  # fmt: skip
        name = f"ctc_gap+{distance}"
        rules[name] = {"margin": f"{gap_m:.3f}/{dist_m:.3f}"}
        for split, recs in by_split.items():
            rules[name][split] = rates(
                recs, lambda r, g=gap_m, d=dist_m, p=pair: (q := p(r)) is None or q[0] > g or q[1] > d
            )
    return {"medians": medians, "rules": rules}


def rates(recs: list[dict], rejected) -> dict:  # noqa: ANN001
    cmds = [r for r in recs if r["kind"] in ("right", "wrong")]
    oog = [r for r in recs if r["kind"] == "oog"]
    noise = [r for r in recs if r["kind"] == "noise"]
    accepted_right = sum(r["kind"] == "right" and not rejected(r) for r in cmds)
    return {
        "false_rejects": round(sum(rejected(r) for r in cmds) / max(len(cmds), 1), 4),
        "oog_false_accepts": round(sum(not rejected(r) for r in oog) / max(len(oog), 1), 4),
        "noise_false_accepts": round(sum(not rejected(r) for r in noise) / max(len(noise), 1), 4),
        "command_acceptance": round(accepted_right / max(len(cmds), 1), 4),
        "wrong_accepts": round(sum(r["kind"] == "wrong" and not rejected(r) for r in cmds) / max(len(cmds), 1), 4),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("recipe")
    parser.add_argument("--model", required=True)
    parser.add_argument("--set", action="append", default=[], dest="overrides")
    parser.add_argument("--splits", default="valid,test")
    parser.add_argument("--n-oog", type=int, default=120)
    parser.add_argument("--out", help="write the per-item records here (JSONL)")
    parser.add_argument("--load", help="read per-item records from this JSONL instead of decoding")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if args.load:
        recs = [json.loads(line) for line in Path(args.load).read_text().splitlines() if line.strip()]
    else:
        recs = [r for split in args.splits.split(",") for r in records(args.recipe, args.model, args.overrides,
                                                                          split, args.n_oog)]  # fmt: skip
    if args.out:
        Path(args.out).write_text("".join(json.dumps(r) + "\n" for r in recs))
    by_split: dict[str, list[dict]] = {}
    for r in recs:
        by_split.setdefault(r["split"], []).append(r)
    result = summary(by_split)
    if args.json:
        print(json.dumps(result, indent=1))
        return
    print("median per kind: n, free best in grammar, ctc_gap, free_gap, free_distance, ctc_distance, confidence")
    for key, row in result["medians"].items():
        print(f"  {key:14s} {row['n']:4d} {row['free_in_grammar']:.2f} {row['ctc_gap']} {row['free_gap']} "
              f"{row['free_distance']} {row['ctc_distance']} {row['confidence']}")  # fmt: skip
    print("rule: margin chosen on the first split -> per split FR, FA oog, FA noise, command acceptance")
    for signal, row in result["rules"].items():
        cells = "  ".join(f"{s}: FR {v['false_rejects']:.3f} FA {v['oog_false_accepts']:.3f}/"
                          f"{v['noise_false_accepts']:.3f} CA {v['command_acceptance']:.3f}"
                          for s, v in row.items() if s != "margin")  # fmt: skip
        print(f"  {signal:15s} margin {row['margin']:<8} {cells}")


if __name__ == "__main__":
    main()
