"""How many of a corpus's commands the search has room to say: their tokens against the cap on output length.

Usage:
    python bench/output_room.py EXP_NAME_DIR [EXP_NAME_DIR ...] [--ratio R] [--cap N] [--json]

A search closes a hypothesis when it holds `decode.max_len_ratio` tokens per encoder frame + 2
(or `decode.max_len`), before its end-of-sentence token: a sentence must be shorter than that.
A constrained search that reaches the cap has no sentence to give and answers nothing, so a
command whose pieces outnumber its room is "not understood" however well the model heard it.
This reads what `seqx featurize` and `seqx tokenize` left in EXP/NAME (feats/SPLIT/index.json:
each utterance's text and frames; tokenizer/) and counts, per split,
the commands the cap cuts, and how full CTC's own room is ((pieces + repeats) / frames: CTC
needs a blank between two equal pieces, and cannot say more than that in the frames it has).
Frames are the stored features' (the speech embedding's 80 ms frames; 10 ms fbank frames are
4 to the encoder's 1 behind `conv2d`: `--frames-per-step 4`).
"""

from __future__ import annotations

import argparse
import json
from itertools import pairwise
from pathlib import Path

import numpy as np
from tables import markdown_table  # bench/tables.py, beside this script

from seqx.recipe import DecodeSettings
from seqx.runtime.search import max_output_len
from seqx.tokenize.tokenizer import Tokenizer


def room(exp: Path, ratio: float, cap: int, frames_per_step: int = 1) -> dict[str, dict[str, object]]:
    """{split: {commands, cut, ctc_fill_p99, ctc_over, worst}} for one experiment folder."""
    tokenizer = Tokenizer.load(exp / "tokenizer")
    out: dict[str, dict[str, object]] = {}
    for split in ("train", "valid", "test"):
        index = exp / "feats" / split / "index.json"
        if not index.is_file():
            continue
        stored = json.loads(index.read_text())
        steps = np.ceil(np.asarray(stored["length"]) / frames_per_step).astype(np.int64)
        limits = max_output_len(steps, ratio, cap)  # the cap the search itself computes
        fills, cut, worst = [], 0, []
        for text, step_count, limit in zip(stored["texts"], steps.tolist(), limits.tolist()):
            if not text:
                continue
            pieces = tokenizer.encode(text)
            repeats = sum(a == b for a, b in pairwise(pieces))
            fills.append((len(pieces) + repeats) / step_count)
            cut += len(pieces) >= limit  # the search closes a hypothesis at the cap before its eos
            worst.append((len(pieces) - limit, text))
        fills.sort()
        out[split] = {
            "commands": len(fills),
            "cut": cut,
            "ctc_fill_p99": round(fills[int(0.99 * (len(fills) - 1))], 3) if fills else None,
            "ctc_over": sum(f > 1 for f in fills),  # more than CTC can align in the frames
            "worst": max(worst)[1] if worst else None,
        }
    return out


def main() -> None:
    defaults = DecodeSettings()
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("exps", nargs="+", type=Path, help="experiment folders (exp/NAME)")
    parser.add_argument("--ratio", type=float, default=defaults.max_len_ratio, help="decode.max_len_ratio")
    parser.add_argument("--cap", type=int, default=defaults.max_len, help="decode.max_len")
    parser.add_argument("--frames-per-step", type=int, default=1, help="stored frames per encoder frame")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    results = {str(exp): room(exp, args.ratio, args.cap, args.frames_per_step) for exp in args.exps}
    if args.json:
        print(json.dumps(results, indent=2))
        return
    print(f"max_len_ratio {args.ratio:g}, max_len {args.cap}")
    columns = ["experiment", "split", "commands", "cut by the cap", "CTC fill, 99th percentile", "over CTC's room",
               "longest over its room"]  # fmt: skip
    rows = [[exp, split, *(r[k] for k in ("commands", "cut", "ctc_fill_p99", "ctc_over", "worst"))]
            for exp, splits in results.items() for split, r in splits.items()]  # fmt: skip
    print(markdown_table(columns, rows, right={2, 3, 4, 5}))


if __name__ == "__main__":
    main()
