"""How steady is the choice of rejection thresholds, and would another rule choose better?

Usage:
    python bench/reject_signals.py recipes/commands.yaml --model exp/NAME/model --set name=NAME --out NAME.jsonl
    python bench/reject_rules.py NAME.jsonl [MORE.jsonl ...]

Reads reject_signals' per-item records (every check off: CTC gap and free/constrained word
distance of each valid and test item). For each rule it chooses (margin, distance) on valid three
times: on all of valid, and on valid's commands with either half of its out-of-grammar sentences
(two draws of negatives, as two runs of `seqx train` would make). Each choice is then scored on
test: command acceptance (right and accepted), false rejects, out-of-grammar false accepts. The
rules:
- pair: what `seqx train` does (seqx.decode.reject.choose_pair: fewest false rejects + false
  accepts, the most lenient distance of ties);
- bagged: the median margin and distance of `pair` over 40 bootstrap resamples of valid;
- floor 0.25: `pair` with distances under 0.25 not allowed (one word in four may differ);
- tolerance 0.01: the most lenient distance whose best margin is within 1 point of the best;
- wrong as error: valid commands answered with the wrong command are counted as items to reject
  (accepting one is an error, rejecting it is not), instead of as commands to accept.
"""

from __future__ import annotations

import json
import random
import statistics
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from reject_signals import rates, value  # noqa: E402

from seqx.decode.reject import _cuts, choose_margin  # noqa: E402

Pair = tuple[float, float] | None


def pair(rec: dict) -> Pair:
    gap = value(rec, "ctc_gap")
    return None if gap is None else (gap, 1.0 if rec["free_distance"] is None else rec["free_distance"])


def by_distance(recs: list[dict], floor: float = 0.0) -> list[tuple[float, float, float, float]]:
    """(margin, distance, FR, FA) for each distance cut, most lenient first, each with its best margin."""
    cmds = [pair(r) for r in recs if r["kind"] in ("right", "wrong")]
    negs = [pair(r) for r in recs if r["kind"] in ("oog", "noise")]
    cuts = {min(c, 1.0) for c in _cuts([p[1] for p in cmds + negs if p is not None]) if c >= floor} | {1.0}
    rows = []
    for cut in sorted(cuts, reverse=True):
        gc = [None if p is None or p[1] > cut else p[0] for p in cmds]
        gn = [None if p is None or p[1] > cut else p[0] for p in negs]
        margin = choose_margin(gc, gn)[0]
        fr = sum(g is None or g > margin for g in gc) / len(gc)
        fa = sum(g is not None and g <= margin for g in gn) / max(len(gn), 1)
        rows.append((margin, cut, fr, fa))
    return rows


def within(recs: list[dict], tolerance: float = 0.0, floor: float = 0.0) -> tuple[float, float]:
    rows = by_distance(recs, floor)
    best = min(fr + fa for _, _, fr, fa in rows)
    margin, distance, _, _ = next(r for r in rows if r[2] + r[3] <= best + tolerance + 1e-12)
    return margin, distance


def bagged(recs: list[dict], resamples: int = 40) -> tuple[float, float]:
    rng = random.Random(0)
    cmds = [r for r in recs if r["kind"] in ("right", "wrong")]
    negs = [r for r in recs if r["kind"] in ("oog", "noise")]
    choices = [within([rng.choice(cmds) for _ in cmds] + [rng.choice(negs) for _ in negs]) for _ in range(resamples)]
    return statistics.median(c[0] for c in choices), statistics.median(c[1] for c in choices)


def wrong_as_error(recs: list[dict]) -> tuple[float, float]:
    """`pair` with the wrong answers on the side to reject: for each distance cut the margin with
    the fewest (right rejected + wrong accepted) / commands + false accepts (the middle of ties),
    then the cut with the fewest errors (the most lenient of ties)."""
    groups = [[pair(r) for r in recs if r["kind"] in kinds] for kinds in (("right",), ("wrong",), ("oog", "noise"))]
    right, wrong, negs = groups
    best: tuple[float, float, float] | None = None
    for cut in sorted({min(c, 1.0) for c in _cuts([p[1] for g in groups for p in g if p is not None])} | {1.0},
                      reverse=True):  # fmt: skip
        gaps = [np.sort([p[0] for p in g if p is not None and p[1] <= cut]) for g in groups]
        finite = np.unique(np.concatenate(gaps))
        if finite.size == 0:
            continue
        margins = np.concatenate([[finite[0] - 0.01], (finite[1:] + finite[:-1]) / 2, [finite[-1] + 0.01]])
        kept = [np.searchsorted(g, margins, side="right") for g in gaps]  # accepted items at each margin
        errors = (len(right) - kept[0] + kept[1]) / max(len(right) + len(wrong), 1) + kept[2] / max(len(negs), 1)
        tied = margins[errors <= errors.min() + 1e-12]
        if best is None or errors.min() < best[0] - 1e-12:
            best = (float(errors.min()), max(float(tied[len(tied) // 2]), 0.0), cut)
    return (best[1], best[2]) if best is not None else (0.5, 1.0)


RULES: dict[str, Callable[[list[dict]], tuple[float, float]]] = {
    "pair": within,
    "bagged": bagged,
    "floor 0.25": lambda recs: within(recs, floor=0.25),
    "tolerance 0.01": lambda recs: within(recs, tolerance=0.01),
    "wrong as error": wrong_as_error,
}


def main() -> None:
    print("| records | rule | valid draw | margin | distance | test acceptance % | wrong accepted % | FR % | OOG FA % |")
    print("| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for path in sys.argv[1:]:
        recs = [json.loads(line) for line in Path(path).read_text().splitlines()]
        valid = [r for r in recs if r["split"] == "valid"]
        test = [r for r in recs if r["split"] == "test"]
        oog = [r for r in valid if r["kind"] == "oog"]
        rest = [r for r in valid if r["kind"] != "oog"]
        draws = {"all": valid, "OOG half A": rest + oog[0::2], "OOG half B": rest + oog[1::2]}
        for rule, choose in RULES.items():
            for draw, items in draws.items():
                margin, distance = choose(items)
                t = rates(test, lambda r, m=margin, d=distance: (p := pair(r)) is None or p[0] > m or p[1] > d)
                print(f"| {Path(path).stem} | {rule} | {draw} | {margin:.3f} | {distance:.3f} | "
                      f"{100 * t['command_acceptance']:.1f} | {100 * t['wrong_accepts']:.1f} | {100 * t['false_rejects']:.1f} | "
                      f"{100 * t['oog_false_accepts']:.1f} |")


if __name__ == "__main__":
    main()
