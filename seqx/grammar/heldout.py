"""Commands held out of training, chosen by a hash of the sentence: no list needed.

`is_heldout(sentence, share, seed)` is a fixed property of the sentence text, so a
10^8-sentence grammar holds out about `share` of its commands without enumerating them,
the choice is the same in every process and every run, and evaluation can tell a held-out
command from a seen one with the same call. Drawing a held-out (or a seen) command is a
draw from the grammar repeated until the hash agrees: 1/share tries on average.

>>> is_heldout("check the battery", 0.1, seed=0) == is_heldout("check the battery", 0.1, seed=0)
True
"""

from __future__ import annotations

import hashlib

import numpy as np

from seqx.grammar.model import Grammar, Parse

MAX_TRIES = 2000  # draws before concluding the grammar has no sentence of the wanted kind


def heldout_score(sentence: str, seed: int = 0) -> float:
    """A uniform number in [0, 1) fixed by the sentence (whitespace-normalized) and the seed."""
    text = f"{seed}\0{' '.join(sentence.split())}".encode()
    return int.from_bytes(hashlib.blake2b(text, digest_size=8).digest(), "big") / 2.0**64


def is_heldout(sentence: str, share: float, seed: int = 0) -> bool:
    return share > 0 and heldout_score(sentence, seed) < share


def draw(grammar: Grammar, rng: np.random.Generator, share: float, seed: int, heldout: bool) -> Parse | None:
    """A sampled sentence that is (heldout=True) or is not held out; None after MAX_TRIES misses."""
    for _ in range(MAX_TRIES):
        parse = grammar.sample(rng)
        if is_heldout(parse.text, share, seed) == heldout:
            return parse
    return None
