"""The recipe grammar as JSGF: it accepts exactly the recipe's commands, and PocketSphinx
(the peer the benchmark compares against) loads it and decodes a spoken command with it."""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from itertools import product
from pathlib import Path

import pytest

from seqx.data.grammar import expand_grammar, vocabulary
from seqx.data.jsgf import grammar_to_jsgf
from seqx.recipe import DEFAULT_RECIPE, load_recipe

REPO = Path(__file__).resolve().parents[1]


def _expand_jsgf(jsgf: str) -> set[str]:
    """Every sentence the grammar accepts, for the subset grammar_to_jsgf writes (sequences and alternatives)."""
    rules = dict(re.findall(r"^(?:public )?<(\w+)> = (.*);$", jsgf, flags=re.M))

    def expand(body: str) -> list[str]:
        options: list[str] = []
        for alternative in body.split(" | "):
            parts = [expand(rules[t[1:-1]]) if t.startswith("<") else [t] for t in alternative.split()]
            options += [" ".join(words) for words in product(*parts)]
        return options

    return set(expand(rules["command"]))


def test_grammar_accepts_exactly_the_recipe_commands() -> None:
    synth = load_recipe(DEFAULT_RECIPE).data.synth
    assert _expand_jsgf(grammar_to_jsgf(synth.templates, synth.slots)) == set(
        expand_grammar(synth.templates, synth.slots)
    )


def test_pocketsphinx_decodes_a_command_with_the_grammar(
    espeak_wav: Callable[..., Path], tmp_path: Path
) -> None:
    pytest.importorskip("pocketsphinx")
    sys.path.insert(0, str(REPO / "bench"))
    from peer_pocketsphinx import pocketsphinx_decoder, run_pocketsphinx

    synth = load_recipe(DEFAULT_RECIPE).data.synth
    words = vocabulary(expand_grammar(synth.templates, synth.slots))
    decoder = pocketsphinx_decoder(grammar_to_jsgf(synth.templates, synth.slots), words)
    wav = espeak_wav(tmp_path / "command.wav", text="check the battery")  # 22.05 kHz: resampled on the way in
    hyps, _ = run_pocketsphinx(decoder, [str(wav)])
    assert hyps == ["check the battery"]
