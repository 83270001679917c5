"""The one text normalization used by data, tokenizer, training and evaluation.

If training and scoring normalized differently, WER would count formatting, not
recognition. So there is one function, and the bundle stores its settings.

>>> from seqx.recipe import TokenizerSettings
>>> normalize_text("Set a timer for 15 minutes!", TokenizerSettings())
'set a timer for fifteen minutes'
"""

from __future__ import annotations

import re

from seqx.recipe import TokenizerSettings

_ONES = (
    "zero one two three four five six seven eight nine ten "
    "eleven twelve thirteen fourteen fifteen sixteen seventeen eighteen nineteen"
).split()
_TENS = "_ _ twenty thirty forty fifty sixty seventy eighty ninety".split()
_PUNCT = re.compile(r"[^\w\s']|_")
NORMALIZATION = ("lowercase", "punctuation", "numbers")  # the TokenizerSettings that normalize_text reads


def number_words(n: int) -> str:
    """English words for 0 <= n < 1,000,000 (how a speaker says a count)."""
    if n < 20:
        return _ONES[n]
    if n < 100:
        return _TENS[n // 10] + ("" if n % 10 == 0 else " " + _ONES[n % 10])
    if n < 1000:
        rest = n % 100
        return _ONES[n // 100] + " hundred" + ("" if rest == 0 else " " + number_words(rest))
    if n < 1_000_000:
        rest = n % 1000
        return number_words(n // 1000) + " thousand" + ("" if rest == 0 else " " + number_words(rest))
    return " ".join(_ONES[int(d)] for d in str(n))


def normalize_text(text: str, settings: TokenizerSettings) -> str:
    if settings.numbers == "words":
        text = re.sub(r"\d+", lambda m: f" {number_words(int(m.group()))} ", text)
    if settings.lowercase:
        text = text.lower()
    if settings.punctuation == "strip":
        text = _PUNCT.sub(" ", text)
        text = re.sub(r"(?<!\w)'|'(?!\w)", " ", text)  # quotes go, apostrophes inside words stay
    return " ".join(text.split())
