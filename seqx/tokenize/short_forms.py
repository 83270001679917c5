"""Short forms a grammar writes and a person says long: "7 AM", "20km", "the 80s", "1985", "99¢", "x.com",
and a menu's: "1½", a 12" pizza, "w/ cheese", "10pc".

Engines left to themselves say them otherwise than people do, and unlike each other: flite drops "AM"
after a number altogether ("seven AM" is "seven"), espeak-ng says "am" as the verb, "5 km" as "five
kay em", "80s" as "eighty ess" and "1990" as "nineteen hundred and ninety". A model taught those
sounds for those labels hears a person's "seven a m", "five kilometers", "the eighties" and "nineteen
ninety" as something else. `spell_short_forms` writes them as said, before `text.spell_out` spells
the digits, so engines and transcripts get the same words. Some numbers are not counts: a phone number
("555-1234": espeak-ng and flite say "five hundred fifty five, one thousand two hundred thirty four" or
"... to ...") and a code with a leading zero ("007", which as a count loses its zeros) are said digit by
digit, "No. 5" is "number five" (`spelled_numbers`).

Like every rule of `spell_out`, each reads within the words a grammar writes side by side, since a
grammar's words are spelled so (`Grammar.spoken`) and must come out as its sentences do: a lowercase
"am" after a slot ("{hour} am") is the verb here (nothing in "am" says it is a time), so a grammar
writes "AM", "a.m." or "7am"; "AM" beside "I" is the verb.

>>> spell_short_forms("wake me at 7 AM, play the 80s, 5km in 1985 for 99¢ at x.com")
'wake me at 7  a m , play the  eighties , 5 kilometers in  nineteen eighty five  for 99 cents at x dot com'
"""

from __future__ import annotations

import re

# said long wherever they stand alone or follow digits ("5 km", "5km"): none is an English word
_UNITS = {
    "km": "kilometer", "kg": "kilogram", "mg": "milligram", "ml": "milliliter", "cm": "centimeter",
    "lb": "pound", "lbs": "pound", "hrs": "hour", "mins": "minute", "secs": "second",
    "mph": "miles per hour", "kph": "kilometers per hour", "km/h": "kilometers per hour",
    "kwh": "kilowatt hour", "mb": "megabyte", "gb": "gigabyte", "tb": "terabyte",
    "ghz": "gigahertz", "mhz": "megahertz", "khz": "kilohertz",
}  # fmt: skip
# ... and these only after digits ("20min", "6 ft"), since alone they are words or names: "min"
# (minimum), "sec" ("wait a sec"), "hr" ("call HR"), "ft" ("feat."), "oz" (the Wizard of Oz), "mm"
_GLUED_UNITS = {"min": "minute", "sec": "second", "hr": "hour", "ft": "foot", "oz": "ounce", "mm": "millimeter",
                "pc": "piece", "pcs": "pieces", "l": "liter"}  # fmt: skip
_PLURALS = {"foot": "feet"}
_AS_NAMED = {"pc", "pcs"}  # a menu's "10pc nuggets" is "ten piece nuggets": the name as it is, whatever the count
# ½ and friends, as "1/2" is said (text.spell_out), and after a number as "and a half"
_FRACTIONS = {"½": ("one half", "a half"), "⅓": ("one third", "a third"), "⅔": ("two thirds", "two thirds"),
              "¼": ("one quarter", "a quarter"), "¾": ("three quarters", "three quarters")}  # fmt: skip
_UNIT = "|".join(re.escape(u) for u in sorted(_UNITS, key=len, reverse=True))
_GLUED_UNIT = "|".join(re.escape(u) for u in sorted([*_UNITS, *_GLUED_UNITS], key=len, reverse=True))
# ...or after a number and a space ("20 min", "12 oz", "6 ft"): a count before it says what it is; not "l"
UNITS_AFTER_A_NUMBER = frozenset(_GLUED_UNITS) - {"l"}
_AFTER_NUMBER = "|".join(re.escape(u) for u in sorted({*_UNITS, *UNITS_AFTER_A_NUMBER}, key=len, reverse=True))
_DOMAINS = "com|org|net|edu|gov|io|co|uk|us|ca|de|fr|ai|app|dev"


def names_a_measure(word: str) -> bool:
    """Whether a grammar's word is a unit ("oz", "12oz", "lb") or a fraction ("1/2") whose spoken form
    hangs on the words beside it ("a 12 oz latte" / "12 oz of milk"), as corpora say since 2026-12-02."""
    if word in ASCII_FRACTIONS:
        return True
    glued = re.fullmatch(rf"(\d+(?:[.,]\d+)*)?(?:{_GLUED_UNIT})", word, re.IGNORECASE)
    return bool(glued) and (glued.group(1) is not None or word.lower() != "l")  # the letter L is no measure


def _unit_name(unit: str) -> str:
    return _UNITS.get(unit.lower()) or _GLUED_UNITS[unit.lower()]


# words after a measure that leave it a quantity ("6 ft tall", "20 min left", "2 lb of beef", "5 km away");
# any other word after it is the thing measured, and the measure names its size: "a 12 oz latte" is "a
# twelve ounce latte", "a 20 min timer" "a twenty minute timer", as people say them
_QUANTITY_AFTER = frozenset(
    "of and or but nor ago later left remaining long old away tall wide high deep thick heavy per each a an the "
    "please now then to for from in on at by with without into onto more less total off until till before after "
    "it is are was were will max maximum only exactly early late too than apart ahead behind back out up down "
    "over under i you we he she they me us thanks thank every this that these those my your our his her their "
    "its if so as plus minus times straight worth tops".split()
)


def _unit_words(unit: str, count: str | None, next_word: str | None = None) -> str:
    """The unit's name, plural unless it follows the number 1 ("1km" is one kilometer) or names the size
    of what follows it ("12 oz latte" is a twelve ounce latte, `_QUANTITY_AFTER`)."""
    name = _unit_name(unit)
    if count == "1" or unit.lower() in _AS_NAMED or name.endswith("per hour"):
        return name
    if count is not None and next_word is not None and next_word.lower() not in _QUANTITY_AFTER:
        return name
    return _PLURALS.get(name, name + "s")


def year_words(n: int) -> str:
    """How a year from 1100 to 1999 is said: "nineteen eighty five", "nineteen oh five", "fifteen hundred"."""
    from seqx.tokenize.text import number_words

    century, rest = divmod(n, 100)
    if rest == 0:
        return f"{number_words(century)} hundred"
    return f"{number_words(century)} {'oh ' if rest < 10 else ''}{number_words(rest)}"


def _decade(m: re.Match) -> str:
    """ "80s" / "'80s" -> "eighties", "1980s" -> "nineteen eighties", "2000s" -> "two thousands"."""
    from seqx.tokenize.text import number_words

    n = int(m.group(1))
    said = year_words(n) if 1100 <= n < 2000 else number_words(n)
    *head, last = said.split()
    last = last[:-1] + "ies" if last.endswith("y") else last + "s"
    return " " + " ".join([*head, last]) + " "


def _half_day(m: re.Match) -> str:
    """ "AM", "a.m.", "pm" -> " a m ": the letters' names."""
    return f" {next(g for g in m.groups() if g).lower()} m "


def _glued_unit(m: re.Match) -> str:
    return f"{m.group(1)} {_unit_words(m.group(2), m.group(1), m.group(3))}"


def _unit_alone(m: re.Match) -> str:
    """A unit with no number before it: plural ("lbs", "kg"), but one after "per" or "a" ("$5 a lb")."""
    one = re.search(r"(?:^|\s)(?:per|a|an)\s+$", m.string[: m.start()], re.IGNORECASE)
    return _unit_words(m.group(1), "1" if one else None)


def _fraction(m: re.Match) -> str:
    """ "½" -> "one half", "1½" -> "1 and a half"."""
    whole, (alone, after) = m.group(1), _FRACTIONS[m.group(2)]
    return f"{whole} and {after} " if whole else f" {alone} "


# a fraction alone before a unit names a size, as a menu's "½ lb burger" is said: "half pound"
_FRACTION_SIZES = {"½": "half", "⅓": "third", "⅔": "two thirds", "¼": "quarter", "¾": "three quarter"}


def _fraction_size(m: re.Match) -> str:
    return f" {_FRACTION_SIZES[m.group(1)]} {_unit_name(m.group(2))} "


ASCII_FRACTIONS = {"1/2": "½", "1/3": "⅓", "2/3": "⅔", "1/4": "¼", "3/4": "¾"}
_NEXT_WORD = r"(?=\s+([A-Za-z]+))?"  # the word after a measure, when one follows (`_unit_words`)


def _ascii_fraction_size(m: re.Match) -> str:
    """ "1/2 lb" is said as "½ lb" is, "half pound" (not "one half pounds"); "5/8 in" is left alone."""
    glyph = ASCII_FRACTIONS.get(m.group(1))
    return f" {_FRACTION_SIZES[glyph]} {_unit_name(m.group(2))} " if glyph else m.group()


def _whole_and_fraction(m: re.Match) -> str:
    """ "1 1/2 hours" is said as "1½ hours" is, "one and a half hours" (not "one one half hours")."""
    glyph = ASCII_FRACTIONS.get(m.group(2))
    return f"{m.group(1)}{glyph}" if glyph else m.group()


def _digits(group: str) -> str:
    """ "0420" -> "zero four two zero": a phone number's or a code's digits, one by one."""
    from seqx.tokenize.text import number_words

    return " ".join(number_words(int(d)) for d in group)


def _phone(m: re.Match) -> str:
    """A phone number's groups, digit by digit; a toll-free "800" is "eight hundred"."""
    *codes, last = [g for g in m.groups() if g]
    said = [_hundreds(g) if len(g) == 3 and g.endswith("00") else _digits(g) for g in codes]
    return f" {' '.join([*said, _digits(last)])} "


def _hundreds(group: str) -> str:
    from seqx.tokenize.text import number_words

    return number_words(int(group))


_PHONE = (
    r"(?<![\w.,$£€#:/-])(?:(1)[-. ])?(?:\((\d{3})\) ?|(\d{3})[-.])(\d{3})[-.](\d{4})(?![\w-])"  # (555) 123-4567
    r"|(?<![\w.,$£€#:/-])([2-9]\d\d)-(\d\d(?:[1-9]\d|\d[1-9]))(?![\w-])"  # 555-1234, not a range 500-1000
)


def spelled_numbers(text: str) -> str:
    """Numbers said digit by digit or named: phone numbers, "1-800-FLOWERS", "No. 5", codes with a
    leading zero ("007", "PIN 0420": "zero zero seven"); a count would lose the zeros."""
    text = re.sub(_PHONE, _phone, text)
    text = re.sub(r"(?<![\w.,-])(1)-(\d00)-(?=[A-Za-z])", lambda m: f" one {_hundreds(m.group(2))} ", text)
    text = re.sub(r"(?<![\w.])No\.\s?(?=\d)", "number ", text, flags=re.IGNORECASE)  # "Symphony No. 5"
    return re.sub(r"(?<![\w.,:$£€#/-])0\d+(?![\w.,:/-]|\.\d)", lambda m: f" {_digits(m.group())} ", text)


def spell_short_forms(text: str) -> str:
    """`text` with times of day, units, decades, years of 1100-1999, cents, web addresses, fractions,
    inches and "w/" as said; its digits are left to `spell_out`."""
    # 7am, 7:30pm, 7 AM, 7 a.m., PM: the letters' names; "am" alone stays the verb ("I am"), and so does
    # "AM" beside "I" ("I AM HERE", "AM I LATE": a transcript in capitals, as read-speech corpora write them)
    text = re.sub(r"(?<=\d)([ap])\.?m\.?(?![\w.])", _half_day, text, flags=re.IGNORECASE)
    alone = r"(?:([AP])M|([ap])\.m\.|([AP])\.M\.|(p)m)"  # "AM", "a.m.", "A.M.", "PM", "pm"
    text = re.sub(rf"(?<![\w.])(?<!\b[Ii] ){alone}(?![\w.])(?! [Ii]\b)", _half_day, text)
    text = spelled_numbers(text)  # "555-1234", "(555) 123-4567", "1-800-FLOWERS", "No. 5", "007"
    text = re.sub(r"(?<=\d)-(?=\d)", " to ", text)  # 1985-1990 (said before the years become words)
    text = re.sub(r"(?<![\w'.,$£€#])'?([1-9]0|1[1-9]\d0|20\d0)'?s(?!\w)", _decade, text)
    year = r"(?<![\w.,$£€#:/])(1[1-9]\d\d)(?![\w%°:/,]|\.\d)"  # not money, a decimal, a time or a 1,985
    text = re.sub(year, lambda m: f" {year_words(int(m.group(1)))} ", text)
    text = re.sub(r"(?<![\w/.,])(\d+) ([1-3]/[2-4])(?![\w/])", _whole_and_fraction, text)  # "1 1/2": "1½"
    text = re.sub(r"(?<![\w/])(?:½|1/2)(?=\s+an?\b)", "half", text)  # "1/2 an hour": "half an hour"
    text = re.sub(rf"(?<![\d\w])([½⅓⅔¼¾]) ?({_GLUED_UNIT})(?![\w/])", _fraction_size, text, flags=re.IGNORECASE)
    text = re.sub(rf"(?<![\d/])([1-3]/[2-4]) ?({_GLUED_UNIT})(?![\w/])", _ascii_fraction_size, text, flags=re.IGNORECASE)
    text = re.sub(rf"(\d+(?:[.,]\d+)*) ?({_AFTER_NUMBER})(?![\w/]){_NEXT_WORD}", _glued_unit, text, flags=re.IGNORECASE)
    text = re.sub(rf"(\d+(?:[.,]\d+)*)({_GLUED_UNIT})(?![\w/]){_NEXT_WORD}", _glued_unit, text, flags=re.IGNORECASE)
    text = re.sub(rf"(?<![\w/])({_UNIT})(?![\w/])", _unit_alone, text, flags=re.IGNORECASE)
    text = re.sub(r"(\d+)¢", lambda m: f"{m.group(1)} cent{'' if m.group(1) == '1' else 's'}", text)
    text = re.sub(r"(\d*)([½⅓⅔¼¾])", _fraction, text)
    text = re.sub(r'(?<!["\w.])(\d+(?:\.\d+)?)"(?![\w"])', r"\1 inch", text)  # a 12" pizza; "7" is a quoted 7
    text = re.sub(r"(?<![\w/])w/o(?![\w/])", "without", text, flags=re.IGNORECASE)  # a menu's "w/o onions"
    text = re.sub(r"(?<![\w/])w/(?=\w|\s|$)", "with ", text, flags=re.IGNORECASE)  # "burger w/ cheese", "w/cheese"
    return re.sub(rf"(?<=\w)\.({_DOMAINS})(?!\w)", r" dot \1", text, flags=re.IGNORECASE)
