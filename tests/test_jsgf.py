"""The recipe grammar as JSGF: it accepts exactly the recipe's commands, and PocketSphinx
(the peer the benchmark compares against) loads it and decodes a spoken command with it."""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from itertools import product
from pathlib import Path

import pytest
from conftest import enumerate_sentences

from seqx.grammar.jsgf import grammar_to_jsgf
from seqx.grammar.load import load_grammar
from seqx.recipe import DEFAULT_RECIPE, load_recipe

REPO = Path(__file__).resolve().parents[1]


def _expand_jsgf(jsgf: str) -> set[str]:
    """Every sentence the grammar accepts, for the subset grammar_to_jsgf writes here (sequences,
    alternatives, rule references; the default grammar has no optional words)."""
    rules = dict(re.findall(r"^(?:public )?<(\w+)> = (.*);$", jsgf, flags=re.M))

    def expand(body: str) -> list[str]:
        options: list[str] = []
        for alternative in _split_top(body):
            parts = [expand(t[1:-1]) if t.startswith("(") else expand(rules[t[1:-1]]) if t.startswith("<") else [t]
                     for t in _items(alternative)]
            options += [" ".join(words) for words in product(*parts)]
        return options

    return set(expand(rules["command"]))


def _split_top(body: str) -> list[str]:
    depth, start, out = 0, 0, []
    for i, ch in enumerate(body):
        depth += ch == "("
        depth -= ch == ")"
        if ch == "|" and depth == 0:
            out.append(body[start:i])
            start = i + 1
    return [*out, body[start:]]


def _items(alternative: str) -> list[str]:
    return re.findall(r"\([^()]*\)|\S+", alternative)


def test_grammar_accepts_exactly_the_recipe_commands() -> None:
    grammar = load_grammar(load_recipe(DEFAULT_RECIPE))
    assert _expand_jsgf(grammar_to_jsgf(grammar)) == enumerate_sentences(grammar)


def test_pocketsphinx_decodes_a_command_with_the_grammar(
    espeak_wav: Callable[..., Path], tmp_path: Path
) -> None:
    pytest.importorskip("pocketsphinx")
    sys.path.insert(0, str(REPO / "bench"))
    from peer_pocketsphinx import pocketsphinx_decoder, run_pocketsphinx

    grammar = load_grammar(load_recipe(DEFAULT_RECIPE))
    decoder = pocketsphinx_decoder(grammar_to_jsgf(grammar), grammar.vocabulary())
    wav = espeak_wav(tmp_path / "command.wav", text="check the battery")  # 22.05 kHz: resampled on the way in
    hyps, _ = run_pocketsphinx(decoder, [str(wav)])
    assert hyps == ["check the battery"]
