"""Everyday words that sound like a grammar's words are kept out of its out-of-grammar strings."""

from __future__ import annotations

from seqx.data.sound_alike import sound_alike
from seqx.decode.negatives import other_words
from seqx.grammar.model import Grammar


def test_sound_alike_hears_espeak_ngs_homophones() -> None:
    """Letters and numbers against their homophones, by espeak-ng's phonemes; stress does not count,
    and different sounds ("dog", "bough" against "bow") are kept apart."""
    words = ["see", "sea", "you", "why", "won", "ate", "dog", "bough", "free"]
    assert sound_alike(words, ["c", "u", "y", "one", "eight", "bow"]) == {"see", "sea", "you", "why", "won", "ate"}
    assert sound_alike(words, []) == set() and sound_alike([], ["c"]) == set()


def test_a_grammar_of_letters_hears_no_letter_as_everyday_english() -> None:
    letters = Grammar.build({"letter": ["{letter}"]}, {"letter": [chr(c) for c in range(ord("a"), ord("z") + 1)]})
    pool = other_words(letters)
    assert len(pool) > 500
    assert not {"see", "sea", "be", "you", "why", "tea", "are", "eye"} & set(pool)
    assert {"dog", "house", "water"} <= set(pool)
