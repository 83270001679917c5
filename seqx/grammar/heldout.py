"""Commands held out of training, chosen by a hash of the sentence: no list needed.

`is_heldout(sentence, share, seed)` is a fixed property of the sentence text, so a
10^8-sentence grammar holds out about `share` of its commands without enumerating them,
the choice is the same in every process and every run, and evaluation can tell a held-out
command from a seen one with the same call. Drawing a held-out (or a seen) command is a
draw from the grammar repeated until the hash agrees: 1/share tries on average.

One exception keeps every word learnable: when the hash would hold out every sentence that
says some word ("log out" is the only sentence with "out" in recipes/commands.yaml), those
sentences stay in training (`kept_words`). A held-out command tests new combinations of
known words; a word no training sentence says is one no model can learn, for the test split
and for every user of the recipe alike.

>>> is_heldout("check the battery", 0.1, seed=0) == is_heldout("check the battery", 0.1, seed=0)
True
>>> is_heldout("log out", 1.0, seed=0, kept=frozenset({"out"}))
False
"""

from __future__ import annotations

import hashlib

import numpy as np

from seqx.grammar.model import Grammar, Parse

MAX_TRIES = 2000  # draws before concluding the grammar has no sentence of the wanted kind
# Words said by more sentences than this are not checked: a 10% hold-out takes all of 64
# sentences with a chance of 10^-64.
CHECKED_SENTENCES = 64


def heldout_score(sentence: str, seed: int = 0) -> float:
    """A uniform number in [0, 1) fixed by the sentence (whitespace-normalized) and the seed."""
    text = f"{seed}\0{' '.join(sentence.split())}".encode()
    return int.from_bytes(hashlib.blake2b(text, digest_size=8).digest(), "big") / 2.0**64


def is_heldout(sentence: str, share: float, seed: int = 0, kept: frozenset[str] = frozenset()) -> bool:
    """Held out by its hash, unless it says one of the `kept` words (see `kept_words`)."""
    if share <= 0 or heldout_score(sentence, seed) >= share:
        return False
    return not kept.intersection(sentence.split())


def kept_words(grammar: Grammar, share: float, seed: int) -> frozenset[str]:
    """Words whose every sentence the hash would hold out: their sentences stay in training."""
    if share <= 0:
        return frozenset()
    kept = set()
    for word in grammar.vocabulary():
        said = grammar.sentences_with(word, CHECKED_SENTENCES)
        if said and all(heldout_score(s, seed) < share for s in said):
            kept.add(word)
    return frozenset(kept)


def draw(
    grammar: Grammar,
    rng: np.random.Generator,
    share: float,
    seed: int,
    heldout: bool,
    kept: frozenset[str] | None = None,
    word_balance: float = 0.0,
) -> Parse | None:
    """A sampled sentence that is (heldout=True) or is not held out; None after MAX_TRIES misses.

    `kept`: `kept_words(grammar, share, seed)`, computed once by a caller that draws many.
    `word_balance`: as `Grammar.sample`.
    """
    kept = kept_words(grammar, share, seed) if kept is None else kept
    for _ in range(MAX_TRIES):
        parse = grammar.sample(rng, word_balance)
        if is_heldout(parse.text, share, seed, kept) == heldout:
            return parse
    return None
