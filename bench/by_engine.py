"""Test-split scores per engine: how a model does on voices of an engine it heard vs one it never heard.

Usage:
    python bench/by_engine.py NAME [NAME ...] [--tags TAG ...] [--exp exp] [--json]

Reads what `seqx evaluate` left (exp/NAME/eval/test[-TAG].tsv: each utterance's reference, hypothesis
and word errors) and the split's manifest (exp/NAME/data/test.jsonl: each utterance's speaker,
`engine:voice`), and pools WER and sentence accuracy per engine. With `data.synth.test_engine:
flite` the flite rows are "a new kind of voice" and the espeak rows "a new voice". One row per
model and engine; the augmentation comparison in docs/benchmarks.md is made with it. `--tags`:
one corpus scored by several models (`seqx evaluate --set name=NAME --model M --tag TAG`).
"""

from __future__ import annotations

import argparse
import csv
import json
from pathlib import Path


def by_engine(exp_dir: Path, tag: str = "") -> dict[str, dict[str, float]]:
    """{engine: {utts, words, wer, sentence_acc}} for one experiment's scored test split."""
    speakers = {}
    for line in (exp_dir / "data" / "test.jsonl").read_text().splitlines():
        row = json.loads(line)
        speakers[row["id"]] = row["speaker"].split(":")[0]
    pooled: dict[str, list[int]] = {}
    with (exp_dir / "eval" / f"test{'-' + tag if tag else ''}.tsv").open() as handle:
        for row in csv.DictReader(handle, delimiter="\t"):
            engine = speakers[row["id"]]
            words = len(row["reference"].split())
            errors = int(row["errors"])
            right = int(row["hypothesis"].strip() == row["reference"].strip())
            for key in (engine, "all"):
                counts = pooled.setdefault(key, [0, 0, 0, 0])
                counts[0] += 1
                counts[1] += words
                counts[2] += errors
                counts[3] += right
    return {
        engine: {"utts": n, "words": w, "wer": round(100 * e / max(w, 1), 2), "sentence_acc": round(100 * r / n, 1)}
        for engine, (n, w, e, r) in sorted(pooled.items())
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="+")
    parser.add_argument("--tags", nargs="*", default=[""])
    parser.add_argument("--exp", default="exp")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    table = {
        f"{name} {tag}".strip(): by_engine(Path(args.exp) / name, tag) for name in args.names for tag in args.tags
    }
    if args.json:
        print(json.dumps(table, indent=1))
        return
    print("| model | engine | utts | WER % | sentence acc % |")
    print("| --- | --- | ---: | ---: | ---: |")
    for name, engines in table.items():
        for engine, s in engines.items():
            print(f"| {name} | {engine} | {s['utts']} | {s['wer']:.2f} | {s['sentence_acc']:.1f} |")


if __name__ == "__main__":
    main()
