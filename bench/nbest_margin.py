"""Does the grammar's n-best tell a wrong answer from a right one? (issues #14, #17)

Usage:
    python bench/nbest_margin.py recipes/commands.yaml --set exp_dir=EXP [--set ...] --out NAME.jsonl
    python bench/nbest_margin.py --load NAME.jsonl --margin 0.5 --distance 0.08   # the bundle's thresholds

Decodes valid and test (commands, their nothing-said files, and the negative sets `seqx train` and
`seqx evaluate` make) constrained to the model's grammar with every rejection check off and an
8-best, and records per item: right / wrong command, oog or noise, the CTC gap, the free/constrained
distance, and the n-best margin: the best answer's score minus that of the best answer that is a
*different command* (another intent or slot value; a second wording of the same command does not
count). Then prints, per split, how well each signal separates right from wrong answers (AUC), and
what adding "reject when the n-best margin is under T" to the given thresholds does on each split.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from seqx.data.manifest import read_manifest  # noqa: E402
from seqx.decode.bundle import load_bundle  # noqa: E402
from seqx.decode.negatives import build_negatives  # noqa: E402
from seqx.decode.reject import VALID_OOG, without_rejection  # noqa: E402
from seqx.decode.transcribe import Constraint, transcribe_files  # noqa: E402
from seqx.recipe import load_recipe  # noqa: E402

MARGINS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5)


def records(recipe_path: str, overrides: list[str]) -> list[dict]:
    recipe = load_recipe(recipe_path, overrides)
    bundle = load_bundle(recipe.bundle_dir)
    grammar = bundle.grammar
    settings = without_rejection(bundle.decode).merged(nbest=8)
    constraint = Constraint.of_grammar(bundle, grammar, settings)
    rows = []
    for split in ("valid", "test"):
        utts = read_manifest(recipe.data_dir / f"{split}.jsonl")
        test = split == "test"
        negs = build_negatives(recipe, grammar, split, recipe.eval_dir / ("negatives" if test else "negatives-valid"),
                               n_oog=120 if test else VALID_OOG, noise_repeats=2 if test else 1)  # fmt: skip
        results = transcribe_files(bundle, [u.audio for u in utts] + [n.audio for n in negs], settings,
                                   constraint=constraint)  # fmt: skip
        items = [("command" if u.text else "noise", u.text) for u in utts] + [(n.kind, n.said) for n in negs]
        for (kind, said), r in zip(items, results, strict=True):
            if kind == "command":
                want, got = grammar.parse(said), grammar.parse(r.text) if r.text else None
                kind = "right" if want and got and (want.intent, want.slots) == (got.intent, got.slots) else "wrong"
            commands = []
            for h in r.nbest:
                p = grammar.parse(str(h["text"]))
                commands.append((None if p is None else (p.intent, json.dumps(p.slots, sort_keys=True)), h["score"]))
            other = next((s for c, s in commands[1:] if c != commands[0][0]), None) if commands else None
            rows.append({"split": split, "kind": kind, "understood": r.understood, "ctc_gap": r.ctc_gap,
                         "free_distance": r.free_distance,
                         "nbest_margin": None if other is None else commands[0][1] - other})  # fmt: skip
    return rows


def auc(higher: list[float], lower: list[float]) -> float:
    """P(an item of `higher` scores above one of `lower`), ties half."""
    return sum((a > b) + 0.5 * (a == b) for a in higher for b in lower) / max(len(higher) * len(lower), 1)


def report(rows: list[dict], margin: float, distance: float) -> None:
    for split in ("valid", "test"):
        rs = [r for r in rows if r["split"] == split]
        right = [r for r in rs if r["kind"] == "right"]
        wrong = [r for r in rs if r["kind"] == "wrong"]
        nb_r = [r["nbest_margin"] for r in right if r["nbest_margin"] is not None]
        nb_w = [r["nbest_margin"] for r in wrong if r["nbest_margin"] is not None]
        gap_r = [-r["ctc_gap"] for r in right if r["ctc_gap"] is not None]
        gap_w = [-r["ctc_gap"] for r in wrong if r["ctc_gap"] is not None]
        print(f"{split}: {len(right)} right, {len(wrong)} wrong; median n-best margin right "
              f"{statistics.median(nb_r):.3f}, wrong {statistics.median(nb_w):.3f}; AUC right over wrong: "
              f"n-best margin {auc(nb_r, nb_w):.3f}, CTC gap {auc(gap_r, gap_w):.3f}")  # fmt: skip
        cmds = right + wrong
        oog = [r for r in rs if r["kind"] == "oog"]
        print("| split | n-best margin under | command acceptance % | wrong % | FR % | OOG FA % |")
        print("| --- | ---: | ---: | ---: | ---: | ---: |")
        for t in MARGINS:
            def kept(r: dict, t: float = t) -> bool:
                gap, dist, nb = r["ctc_gap"], r["free_distance"] or 0.0, r["nbest_margin"]
                return r["understood"] and gap is not None and gap <= margin and dist <= distance and (
                    t == 0 or (nb is not None and nb >= t))

            acc = sum(r["kind"] == "right" and kept(r) for r in cmds) / len(cmds)
            wr = sum(r["kind"] == "wrong" and kept(r) for r in cmds) / len(cmds)
            fa = sum(kept(r) for r in oog) / max(len(oog), 1)
            print(f"| {split} | {t:g} | {100 * acc:.1f} | {100 * wr:.1f} | {100 * (1 - acc - wr):.1f} | {100 * fa:.1f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("recipe", nargs="?")
    parser.add_argument("--set", action="append", default=[], dest="overrides")
    parser.add_argument("--out", help="write the per-item records here (JSONL)")
    parser.add_argument("--load", help="read records written by --out instead of decoding")
    parser.add_argument("--margin", type=float, default=0.5, help="the CTC-gap threshold to apply with it")
    parser.add_argument("--distance", type=float, default=1.0, help="the free-distance threshold to apply with it")
    args = parser.parse_args()
    if args.load:
        rows = [json.loads(line) for line in Path(args.load).read_text().splitlines() if line.strip()]
    else:
        rows = records(args.recipe, args.overrides)
        if args.out:
            Path(args.out).write_text("".join(json.dumps(r) + "\n" for r in rows))
    report(rows, args.margin, args.distance)


if __name__ == "__main__":
    main()
