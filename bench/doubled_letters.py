"""Commands with the words a tokenizer spells with one piece twice in a row, said by the test voices.

Usage:
    python bench/doubled_letters.py RECIPE --exp EXP_DIR --model BUNDLE [--model BUNDLE ...]
        [--out /tmp/doubled] [--sentences 20000] [--json]

The words: those of the recipe's grammar that the *first* bundle's tokenizer spells with a piece
twice in a row (`e g g s`; train it without `tokenizer.merge_repeats`). A grammar says them rarely,
so the test split holds too few to measure: this renders new files, one for each of the test
split's in-grammar utterances of EXP_DIR's corpus (same voice, rate, pitch, noise and lead-in as
`seqx data` planned it), each saying a grammar sentence that holds one of the words, and decodes
them with every bundle as `seqx transcribe` does (its grammar, its checks). Reports commands right
(intent and slots), turned away, wrong; how often the words were heard (free and constrained
decoding) and, as the control, every other word. Nothing is trained.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import soundfile as sf
from tables import markdown_table  # bench/tables.py, beside this script

from seqx.data.synth import corpus_plans, render
from seqx.decode.bundle import load_bundle
from seqx.grammar.load import load_grammar
from seqx.grammar.model import Grammar
from seqx.recipe import Recipe, load_recipe
from seqx.tokenize.tokenizer import repeats_a_piece


def doubled_words(bundle_dir: Path, vocabulary: list[str]) -> list[str]:
    tokenizer = load_bundle(bundle_dir).tokenizer
    return [w for w in vocabulary if repeats_a_piece(tokenizer.pieces(w))]


def render_files(recipe: Recipe, grammar: Grammar, words: set[str], out: Path, draws: int) -> list[dict]:
    rng = np.random.default_rng(0)
    parses = {p.text: p for p in (grammar.sample(rng) for _ in range(draws)) if words & set(p.text.split())}
    pool = [parses[t] for t in sorted(parses)]
    np.random.default_rng(1).shuffle(pool)
    plans, *_ = corpus_plans(recipe.data, 2)
    voices = [p for p in plans if p.split == "test" and p.text and grammar.parse(p.text) is not None]
    out.mkdir(parents=True, exist_ok=True)
    refs = []
    for i, plan in enumerate(voices):
        parse = pool[i % len(pool)]
        said = replace(plan, text=parse.text, spoken="", augment=None, clip_start=0.0)
        path = out / f"{plan.id}.wav"
        sf.write(path, render(said, recipe.data.sample_rate), recipe.data.sample_rate)
        refs.append({"path": str(path), "text": parse.text, "intent": parse.intent, "slots": parse.slots})
    return refs


def score(bundle_dir: Path, refs: list[dict], words: set[str]) -> dict[str, int]:
    cmd = [sys.executable, "-m", "seqx", "transcribe", "--model", str(bundle_dir), "--json", *[r["path"] for r in refs]]
    results = {r["path"]: r for r in json.loads(subprocess.run(cmd, capture_output=True, text=True, check=True).stdout)}
    counts = dict.fromkeys(
        ("right", "turned away", "wrong", "words", "heard free", "heard", "others", "others heard free"), 0
    )
    for ref in refs:
        got = results[ref["path"]]
        right = got["understood"] and got["intent"] == ref["intent"] and got["slots"] == ref["slots"]
        counts["right" if right else "wrong" if got["understood"] else "turned away"] += 1
        free, constrained = got["free_text"].split(), got["text"].split()
        for word in ref["text"].split():
            if word in words:
                counts["words"] += 1
                counts["heard free"] += word in free
                counts["heard"] += word in constrained
            else:
                counts["others"] += 1
                counts["others heard free"] += word in free
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("recipe")
    parser.add_argument("--exp", type=Path, required=True, help="the exp_dir whose corpus gives the test voices")
    parser.add_argument("--model", type=Path, action="append", required=True)
    parser.add_argument("--out", type=Path, default=Path("/tmp/doubled"))
    parser.add_argument("--sentences", type=int, default=20000, help="grammar sentences drawn to find the words in")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    recipe = load_recipe(args.recipe, [f"exp_dir={args.exp}"]).for_device("cpu")  # the corpus the cpu profile made
    grammar = load_grammar(recipe)
    words = doubled_words(args.model[0], grammar.vocabulary())
    if not words:
        raise SystemExit(f"{args.model[0]}: its tokenizer spells no word of the grammar with a piece twice in a row")
    refs = render_files(recipe, grammar, set(words), args.out, args.sentences)
    scores = {str(m): score(m, refs, set(words)) for m in args.model}
    if args.json:
        print(json.dumps({"words": words, "files": len(refs), "models": scores}, indent=1))
        return
    print(f"{len(refs)} files; words: {', '.join(words)}\n")

    def share(n: int, d: int) -> str:
        return f"{n} ({100 * n / max(d, 1):.1f}%)"

    rows = [
        [m, share(s["right"], len(refs)), s["turned away"], s["wrong"], share(s["heard free"], s["words"]),
         share(s["heard"], s["words"]), f"{100 * s['others heard free'] / max(s['others'], 1):.1f}%"]
        for m, s in scores.items()
    ]  # fmt: skip
    columns = ["bundle", "commands right", "turned away", "wrong", "the words heard, free", "the words heard, constrained",
               "other words heard, free"]  # fmt: skip
    print(markdown_table(columns, rows, right=range(1, 7)))


if __name__ == "__main__":
    main()
