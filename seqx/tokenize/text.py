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
from seqx.tokenize.short_forms import spell_short_forms

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


_ORDINAL_ONES = {
    "one": "first", "two": "second", "three": "third", "five": "fifth", "eight": "eighth", "nine": "ninth",
    "twelve": "twelfth",
}  # fmt: skip
_CURRENCIES = {"$": ("dollar", "cent"), "£": ("pound", "penny"), "€": ("euro", "cent")}
_FRACTIONS = {"1/2": "one half", "1/3": "one third", "2/3": "two thirds", "1/4": "one quarter", "3/4": "three quarters"}
_DEGREES = {"f": " degrees fahrenheit ", "c": " degrees celsius ", "": " degrees "}
_SYMBOLS = {"&": " and ", "+": " plus ", "@": " at "}


def ordinal_words(n: int) -> str:
    """English ordinal for n >= 1 ("twenty first"): its last word made ordinal."""
    *head, last = number_words(n).split()
    if last in _ORDINAL_ONES:
        last = _ORDINAL_ONES[last]
    else:
        last = last[:-1] + "ieth" if last.endswith("y") else last + "th"
    return " ".join([*head, last])


def _plural(n: int, unit: str) -> str:
    if n == 1:
        return unit
    return "pence" if unit == "penny" else unit + "s"


def _money(m: re.Match) -> str:
    main, sub = _CURRENCIES[m.group(1)]
    whole = int(m.group(2).replace(",", ""))
    said = f"{number_words(whole)} {_plural(whole, main)}"
    if m.group(3) and int(m.group(3)):
        said += f" {number_words(int(m.group(3)))} {_plural(int(m.group(3)), sub)}"
    return f" {said} "


def _clock(m: re.Match) -> str:
    minutes = int(m.group(2))
    said = "o'clock" if minutes == 0 else ("oh " if minutes < 10 else "") + number_words(minutes)
    return f" {number_words(int(m.group(1)))} {said} "


def _decimal(m: re.Match) -> str:
    whole = f"{number_words(int(m.group(1).replace(',', '')))} " if m.group(1) else ""
    return f" {whole}point {' '.join(number_words(int(d)) for d in m.group(2))} "


def spell_out(text: str) -> str:
    """Numbers and the symbols that go with them as the words a speaker says ("$5.99" -> "five dollars
    ninety nine cents", "2.5%" -> "two point five percent", "21st" -> "twenty first", "7:05" -> "seven
    oh five", "72°F" -> "seventy two degrees fahrenheit", "C++" -> "C plus plus", "7 AM" -> "seven a m", "5km" ->
    "five kilometers", "1985" -> "nineteen eighty five": short_forms); everything else as
    written. The engines are given this text and the transcript is made from it, so what a voice says
    and what the model is taught to write agree: given "$5" or "1/2" as written, espeak-ng says
    "dollar five" and "one slash two" where flite says "five dollars" and "a half"."""
    text = re.sub(r"[\u2018\u2019\u02bc]", "'", text)  # typographic apostrophes: "I’d" is "I'd"
    text = spell_short_forms(text)  # "7 AM", "5km", "the 80s", "1985" as said, digits left for below
    # each rule reads within a word: a grammar's words are spelled one by one and must come out as its
    # sentences do ("20 °C" is "twenty" then "degrees celsius")
    text = re.sub(r"%", " percent ", text)
    text = re.sub(r"°([fc](?![a-z]))?", lambda m: _DEGREES[(m.group(1) or "").lower()], text, flags=re.IGNORECASE)
    text = re.sub(r"([$£€])(\d{1,3}(?:,\d{3})+|\d+)(?:\.(\d\d))?(?!\d)", _money, text)
    text = re.sub(r"(?<![\d:])(\d{1,2}):(\d\d)(?![\d:])", _clock, text)
    text = re.sub(r"(?<![\d/])(\d/\d)(?![\d/])", lambda m: f" {_FRACTIONS.get(m.group(1), m.group(1))} ", text)
    text = re.sub(r"(?<=\d),(?=\d{3}(?!\d))", "", text)  # 1,000 is one thousand
    text = re.sub(r"(\d*)\.(\d+)", _decimal, text)
    text = re.sub(r"(\d+)(?:st|nd|rd|th)\b", lambda m: f" {ordinal_words(int(m.group(1)))} ", text, flags=re.IGNORECASE)
    text = re.sub(r"(?<=\d)-(?=\d)", " to ", text)  # 5-10 minutes
    text = re.sub(r"(?<=\d)/(?=\d)", " ", text)  # 24/7
    text = re.sub(r"(?:^|(?<=\s))-(?=\d)", "minus ", text)
    text = re.sub(r"#(?=\d)", "number ", text)
    text = re.sub(r"[&+@]", lambda m: _SYMBOLS[m.group()], text)
    text = re.sub(r"\d+", lambda m: f" {number_words(int(m.group()))} ", text)
    return re.sub(r"\s+(?=[,.;:!?])", "", " ".join(text.split()))  # "101, please": no space before the comma


def normalize_text(text: str, settings: TokenizerSettings) -> str:
    if settings.numbers == "words":
        text = spell_out(text)
    if settings.lowercase:
        text = text.lower()
    if settings.punctuation == "strip":
        text = _PUNCT.sub(" ", text)
        text = re.sub(r"(?<!\w)'|'(?!\w)", " ", text)  # quotes go, apostrophes inside words stay
    return " ".join(text.split())
