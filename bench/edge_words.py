"""How often the first, middle and last words of a reference are right, from an evaluation's TSV.

Usage:
    python bench/edge_words.py exp/NAME/eval/valid.tsv [more.tsv ...] [--min-words 3]

A word is right when the alignment (jiwer) matches it. Front-ends with long windows (the
speech embedding: 760 ms) need padding to reach the edges of a command; this shows whether
they do, against the middle words of the same utterances.
"""

from __future__ import annotations

import argparse
import csv

import jiwer


def edge_accuracy(path: str, min_words: int = 3) -> dict[str, float]:
    first = last = middle = n = n_middle = 0
    with open(path, newline="") as handle:
        for row in csv.DictReader(handle, delimiter="\t"):
            ref, hyp = row["reference"].split(), row["hypothesis"].split()
            if len(ref) < min_words:
                continue
            right = [False] * len(ref)
            for chunk in jiwer.process_words(" ".join(ref), " ".join(hyp) or "-").alignments[0]:
                if chunk.type == "equal":
                    right[chunk.ref_start_idx : chunk.ref_end_idx] = [True] * (chunk.ref_end_idx - chunk.ref_start_idx)
            n += 1
            first, last = first + right[0], last + right[-1]
            middle, n_middle = middle + sum(right[1:-1]), n_middle + len(ref) - 2
    return {"utterances": n, "first": first / max(n, 1), "middle": middle / max(n_middle, 1), "last": last / max(n, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tsv", nargs="+")
    parser.add_argument("--min-words", type=int, default=3)
    args = parser.parse_args()
    print(f"{'file':50s} {'utts':>5s} {'first %':>8s} {'middle %':>9s} {'last %':>7s}")
    for path in args.tsv:
        r = edge_accuracy(path, args.min_words)
        print(
            f"{path:50s} {r['utterances']:5d} {100 * r['first']:8.1f} {100 * r['middle']:9.1f} {100 * r['last']:7.1f}"
        )


if __name__ == "__main__":
    main()
