"""bench/human.py's sets: the references, the grammars and the raw-to-wav step (no training here)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import soundfile as sf

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

human = pytest.importorskip("human")

from seqx.data.grammar import expand_grammar  # noqa: E402


def test_sets_cover_their_references(tmp_path: Path) -> None:
    sets = human.human_sets()
    if not all(Path(p).is_file() for s in sets.values() for p, _ in s.files):
        pytest.skip("pocketsphinx-testdata / alsa-utils recordings not installed")
    cards = sets["cards"]
    assert [r for _, r in cards.files] == [
        "ten of clubs", "four queen of clubs", "seven of clubs", "five five",
        "eight of spades four of clubs seven of hearts"]  # fmt: skip
    for s in sets.values():
        commands = set(expand_grammar(s.templates, s.slots))
        # every reference but the three-card one (drawn from a 12-card subset) is a sentence of the templates
        inside = [r for _, r in s.files if r and len(r.split()) < 9]
        assert all(r in commands for r in inside), s.name
    assert len(expand_grammar(cards.templates, cards.slots)) == 56 + 784 + 196 + 3136 + 1728
    wav = human.as_wav(sets["goforward"].files[0][0], tmp_path)
    info = sf.info(wav)
    assert info.samplerate == 16000 and 1.0 < info.duration < 10.0
