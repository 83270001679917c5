"""Fixtures shared by several test files. Keep this small: a fixture used by one file lives in it."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
# recipes/commands.yaml trains on four engines with flite heard only in test; tiny corpora use
# espeak-ng alone (piper loads a model per process, and a tiny model memorizes its one voice)
ESPEAK_ONLY = ["data.synth.engines=[espeak-ng]", "data.synth.test_engine=same"]


@pytest.fixture
def espeak_wav() -> Callable[..., Path]:
    """Write real speech: `espeak_wav(path, text="check the battery", voice="en-us")` (a 22.05 kHz wav)."""

    def make(path: Path, text: str = "check the battery", voice: str = "en-us") -> Path:
        wav = subprocess.run(["espeak-ng", "-v", voice, "--stdout", text], capture_output=True, check=True).stdout
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(wav)
        return path

    return make


def enumerate_sentences(grammar) -> set[str]:  # noqa: ANN001
    """Brute force, for small grammars only: every sentence, by expanding each template's tree.

    Independent of seqx's automata on purpose, so that counts and acceptors are checked against it.
    """
    from itertools import product

    from seqx.grammar.syntax import Alt, Opt, Seq, SlotRef, Word

    def expand(expr) -> list[tuple[str, ...]]:  # noqa: ANN001
        if isinstance(expr, Word):
            return [(expr.text,)]
        if isinstance(expr, SlotRef):
            return [v.words for v in grammar.slots[expr.name].values]
        if isinstance(expr, Opt):
            return [(), *expand(expr.item)]
        if isinstance(expr, Alt):
            return [s for option in expr.options for s in expand(option)]
        assert isinstance(expr, Seq)
        return [tuple(w for part in parts for w in part) for parts in product(*(expand(i) for i in expr.items))]

    return {" ".join(words) for t in grammar.templates for words in expand(t.expr)}
