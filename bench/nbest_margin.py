"""Does the grammar's n-best tell a wrong answer from a right one? (issues #14, #17)

Usage:
    python bench/reject_signals.py recipes/commands.yaml --model EXP/commands/model --set exp_dir=EXP \
        [--set ...] --out NAME.jsonl
    python bench/nbest_margin.py NAME.jsonl --margin 0.5 --distance 0.08     # the bundle's thresholds

Reads reject_signals' per-item records (valid and test decoded constrained with every check off
and an 8-best): right / wrong command, oog or noise, the CTC gap, the free/constrained distance
and the n-best margin, the best answer's score minus that of the best answer that is a *different
command*. Prints, per split, how well the n-best margin and the CTC gap separate right from wrong
answers (AUC), and what adding "reject when the n-best margin is under T" to the given thresholds
does on each split.
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

MARGINS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5)


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
                return r["reason"] is None and gap is not None and gap <= margin and dist <= distance and (
                    t == 0 or (nb is not None and nb >= t))

            acc = sum(r["kind"] == "right" and kept(r) for r in cmds) / len(cmds)
            wr = sum(r["kind"] == "wrong" and kept(r) for r in cmds) / len(cmds)
            fa = sum(kept(r) for r in oog) / max(len(oog), 1)
            print(f"| {split} | {t:g} | {100 * acc:.1f} | {100 * wr:.1f} | {100 * (1 - acc - wr):.1f} | {100 * fa:.1f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("records", help="bench/reject_signals.py --out's JSONL")
    parser.add_argument("--margin", type=float, default=0.5, help="the CTC-gap threshold to apply with it")
    parser.add_argument("--distance", type=float, default=1.0, help="the free-distance threshold to apply with it")
    args = parser.parse_args()
    rows = [json.loads(line) for line in Path(args.records).read_text().splitlines() if line.strip()]
    report(rows, args.margin, args.distance)


if __name__ == "__main__":
    main()
