"""Which words sound like which, by espeak-ng's American English phonemes.

An everyday English word that sounds like one of the grammar's words ("see" and the letter "c",
"you" and "u", "won" and "one", "ate" and "eight") is not speech outside the grammar: trained as an
out-of-grammar string with its own spelling, it teaches the model that the command's sound is not
the command (the KLettres letters, 2026-11-29: 40 and 42 of 52 right became 33 and 36 once single
everyday words were common among the strings, "be", "see", "why", "tea" among them).
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterable
from functools import lru_cache

ESPEAK = "espeak-ng"
VOICE = "en-us"
STRESS_MARKS = str.maketrans("", "", "',%=")  # "s'i:" and "s,i:" are one sound


def sound_alike(words: Iterable[str], targets: Iterable[str]) -> set[str]:
    """The `words` that espeak-ng says as it says one of `targets`. Empty when espeak-ng is not
    installed (no word is then known to sound like another)."""
    words, targets = sorted(set(words)), sorted(set(targets))
    said = _phonemes(tuple(words + targets))
    heard = {said[t] for t in targets if said.get(t)}
    return {w for w in words if said.get(w) in heard}


def alike_groups(choices: Iterable[Iterable[str]]) -> list[tuple[str, ...]]:
    """Within each choice of words, the groups of two or more that espeak-ng says alike ("right",
    "write"), each group once; none without espeak-ng. One espeak-ng run for every choice's words."""
    choices = [sorted(set(words)) for words in choices]
    said = _phonemes(tuple(sorted({w for words in choices for w in words})))
    found: set[tuple[str, ...]] = set()
    for words in choices:
        groups: dict[str, list[str]] = {}
        for word in words:
            if said.get(word):
                groups.setdefault(said[word], []).append(word)
        found.update(tuple(group) for group in groups.values() if len(group) > 1)
    return sorted(found)


@lru_cache(maxsize=8)
def _phonemes(words: tuple[str, ...]) -> dict[str, str]:
    """Each word's phonemes, stress marks removed. One espeak-ng process for all of them: a word
    a line, each its own clause (a full stop), so each answers on its own line; where the lines do
    not pair up one to one, a process per word."""
    if not words or shutil.which(ESPEAK) is None:
        return {}
    lines = _espeak("".join(f"{w}.\n" for w in words))
    if len(lines) != len(words):
        lines = [" ".join(_espeak(f"{w}.\n")) for w in words]
    return {w: p.strip().translate(STRESS_MARKS) for w, p in zip(words, lines, strict=True)}


def _espeak(text: str) -> list[str]:
    result = subprocess.run(
        [ESPEAK, "-v", VOICE, "-q", "-x", "--stdin"], input=text, capture_output=True, text=True, check=False
    )
    return [line for line in result.stdout.splitlines() if line.strip()]
