"""Test-split scores per engine: how a model does on voices of an engine it heard vs one it never heard.

Usage:
    python bench/by_engine.py NAME [NAME ...] [--tags TAG ...] [--exp exp] [--json]

Reads what `seqx evaluate` left (exp/NAME/eval/test-TAG.tsv: each utterance's reference, hypothesis
and word errors; TAG is `free` and `constrained`, the two runs evaluate makes, or "" for a
test.tsv of older versions) and the split's manifest (exp/NAME/data/test.jsonl: each utterance's
speaker, `engine:voice`), and pools WER and sentence accuracy per engine. With
`data.synth.test_engine: flite` (recipes/commands.yaml's default) the flite rows are "a new kind
of voice" and the other engines' rows "a new voice". One row per model, run and engine; a run
evaluate did not make (no grammar: no `constrained`) is left out.
"""

from __future__ import annotations

import argparse
import csv
import json
from pathlib import Path

from tables import markdown_table  # bench/tables.py, beside this script


def _details(exp_dir: Path, tag: str) -> Path:
    return exp_dir / "eval" / f"test{'-' + tag if tag else ''}.tsv"


def by_engine(exp_dir: Path, tag: str = "free") -> dict[str, dict[str, float]]:
    """{engine: {utts, words, wer, sentence_acc}} for one experiment's scored test split."""
    speakers = {}
    for line in (exp_dir / "data" / "test.jsonl").read_text().splitlines():
        row = json.loads(line)
        speakers[row["id"]] = row["speaker"].split(":")[0]
    pooled: dict[str, list[int]] = {}
    with _details(exp_dir, tag).open() as handle:
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
    parser.add_argument("--tags", nargs="*", default=["free", "constrained"])
    parser.add_argument("--exp", default="exp")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    runs = [(name, tag) for name in args.names for tag in args.tags if _details(Path(args.exp) / name, tag).is_file()]
    if not runs:
        raise SystemExit(f"no {_details(Path(args.exp) / args.names[0], args.tags[0])}: run `seqx evaluate` first")
    table = {f"{name} {tag}".strip(): by_engine(Path(args.exp) / name, tag) for name, tag in runs}
    if args.json:
        print(json.dumps(table, indent=1))
        return
    rows = [[name, engine, s["utts"], f"{s['wer']:.2f}", f"{s['sentence_acc']:.1f}"]
            for name, engines in table.items() for engine, s in engines.items()]  # fmt: skip
    print(markdown_table(["model", "engine", "utts", "WER %", "sentence acc %"], rows, right={2, 3, 4}))


if __name__ == "__main__":
    main()
