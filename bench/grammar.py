"""Grammar compile cost and automaton sizes: the default recipe's grammar and the smart-home one.

Usage:
    python bench/grammar.py [RECIPE ...] [--draws 2000] [--json]

For each recipe: the sentence count (by dynamic programming, never listed), the minimal
word DFA (states, arcs, build time), the token automaton over a sentencepiece tokenizer
trained as `seqx tokenize` trains it (transcripts drawn from the grammar + its vocabulary,
the recipe's tokenizer settings): states, arcs, dense table size, compile time; and how
fast sentences are drawn and parsed. Single process, one thread.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from seqx.grammar.load import load_grammar  # noqa: E402
from seqx.grammar.tokens import compile_tokens  # noqa: E402
from seqx.recipe import load_recipe  # noqa: E402
from seqx.tokenize.stage import resolved_settings  # noqa: E402
from seqx.tokenize.tokenizer import train_tokenizer  # noqa: E402

RECIPES = ["recipes/commands.yaml", "recipes/smarthome.yaml"]


def measure(path: str, draws: int) -> dict[str, object]:
    recipe = load_recipe(path)
    started = time.perf_counter()
    grammar = load_grammar(recipe, path)
    parse_s = time.perf_counter() - started
    started = time.perf_counter()
    dfa = grammar.word_dfa()
    dfa_s = time.perf_counter() - started
    started = time.perf_counter()
    count = grammar.count()
    count_s = time.perf_counter() - started
    rng = np.random.default_rng(0)
    started = time.perf_counter()
    drawn = [grammar.sample(rng).text for _ in range(draws)]
    sample_s = time.perf_counter() - started
    started = time.perf_counter()
    assert all(grammar.parse(text) is not None for text in drawn)
    parse_each_s = (time.perf_counter() - started) / draws
    with tempfile.TemporaryDirectory() as tmp:
        settings = resolved_settings(recipe, grammar.vocabulary())
        tokenizer = train_tokenizer(drawn + grammar.vocabulary(), tmp, settings)
        started = time.perf_counter()
        automaton = compile_tokens(grammar, tokenizer)
        tokens_s = time.perf_counter() - started
        assert all(automaton.accepts(tokenizer.encode(text)) for text in drawn[:500])
    return {
        "recipe": path,
        "sentences": count,
        "intents": len(grammar.intents),
        "templates": len(grammar.templates),
        "vocabulary": len(grammar.vocabulary()),
        "parse_recipe_ms": round(parse_s * 1e3, 2),
        "word_dfa_states": dfa.num_states,
        "word_dfa_arcs": dfa.num_arcs,
        "word_dfa_ms": round(dfa_s * 1e3, 2),
        "count_ms": round(count_s * 1e3, 3),
        "tokenizer_vocab": tokenizer.vocab_size,
        "token_states": automaton.num_states,
        "token_arcs": automaton.num_arcs,
        "token_table_mb": round(automaton.next_state.numel() * 8 / 2**20, 3),
        "token_compile_ms": round(tokens_s * 1e3, 2),
        "sample_per_s": round(draws / sample_s),
        "parse_us": round(parse_each_s * 1e6, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("recipes", nargs="*", default=RECIPES)
    parser.add_argument("--draws", type=int, default=2000, help="sentences drawn (tokenizer text, sample, parse)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    torch.set_num_threads(1)
    rows = [measure(path, args.draws) for path in args.recipes]
    if args.json:
        print(json.dumps(rows, indent=1))
        return
    keys = list(rows[0])
    width = max(len(k) for k in keys)
    for key in keys:
        print(f"{key:<{width}}  " + "  ".join(f"{row[key]!s:>24}" for row in rows))


if __name__ == "__main__":
    main()
