"""A HassIL sentence template's text as seqx's template syntax: `<rule>` expanded, `(a; b)` permutations
in every order, and HassIL's spaces read as it reads them (`[ ]` an optional space, `[and]{list}` two
words, a bracket whose every choice begins with a space apart from the word before it).
seqx/grammar/hassil.py reads the files."""

from __future__ import annotations

import re
from collections.abc import Mapping
from enum import Enum
from itertools import permutations
from typing import Any

from seqx.grammar.errors import GrammarError
from seqx.grammar.hassil_lists import OPTIONAL_SPACE, UNSAID
from seqx.grammar.syntax import Alt, Expr, Opt, Seq, SlotRef, Word

RULE = re.compile(r"<([^<>\s]+)>")
# `[and]{minutes}`: HassIL matches "and 5" (spaces around a list are loose there), not one word "and5"
_BRACKET_THEN_LIST = re.compile(r"\]\{")
MAXRULE_DEPTH = 20
# `{minutes}( |-)minute[s]` (Home Assistant's timers): "5 minutes" or "5-minutes", one sound: words apart
_SPACE_OR_HYPHEN = re.compile(r"\(\s*-?\s*\|\s*-?\s*\)")


def seqx_text(sentence: str, rules: Mapping[str, Any], where: str) -> str:
    """A HassIL sentence (or rule) as seqx template text, `rules` its expansion rules."""
    text = _SPACE_OR_HYPHEN.sub(" ", OPTIONAL_SPACE.sub(" ", _expanded(sentence, rules, where)))
    return _permuted(_apart(_optional_if_empty(_BRACKET_THEN_LIST.sub("] {", text))), where)


def _optional_if_empty(text: str) -> str:
    """A group with an empty choice is optional, as HassIL matches it: `(on|)` is `[on]`, `light(s|)` is
    `light[s]` (seqx's syntax has no empty choice: it was an error)."""
    if "|" not in text:
        return text
    out, i = [], 0
    while i < len(text):
        end = _closing(text, i) if text[i] in "([" else -1
        if end < 0:  # not a group, or unbalanced (parse_template names it)
            out.append(text[i])
            i += 1
            continue
        choices = _split_top(_optional_if_empty(text[i + 1 : end]), "|")
        said = [choice for choice in choices if choice.strip()]
        if said and len(said) < len(choices):
            out.append("[" + "|".join(said) + "]")
        else:
            out.append(text[i] + "|".join(choices) + text[end])
        i = end + 1
    return "".join(out)


def _expanded(text: str, rules: Mapping[str, Any], where: str, depth: int = 0) -> str:
    """`<rule>` replaced by its template in brackets, rules within rules too."""
    if depth > MAXRULE_DEPTH:
        raise GrammarError(f"{where}: expansion rules refer to each other in a circle ('{text}')")

    def rule(m: re.Match) -> str:
        if m.group(1) not in rules:
            raise GrammarError(f"{where}: unknown expansion rule <{m.group(1)}> (add it under expansion_rules:)")
        return f"({_expanded(str(rules[m.group(1)]), rules, where, depth + 1)})"

    return RULE.sub(rule, text)


def _apart(text: str) -> str:
    """A bracket written against a word whose every choice begins with a space is words apart from it:
    `{brightness}[( %)| percent]` says "50 percent", as HassIL reads the spaces (seqx's reading glued the
    group to the word, "50percent"). A choice that touches the bracket (`light[s]`) is still one word."""
    out = []
    for i, c in enumerate(text):
        if c in "([" and i and not text[i - 1].isspace() and text[i - 1] not in "([|" and _starts_apart(text, i):
            out.append(" ")
        out.append(c)
    return "".join(out)


def _starts_apart(text: str, start: int) -> bool:
    """Whether each choice of the bracket opened at `start` begins with a space (or a bracket that does)."""
    end = _closing(text, start)
    if end < 0:  # unbalanced: parse_template names it
        return False
    offset = start + 1
    for choice in _split_top(text[start + 1 : end], "|"):
        if not (choice[:1].isspace() or (choice[:1] in "([" and _starts_apart(text, offset))):
            return False
        offset += len(choice) + 1
    return True


MAX_PERMUTED = 5  # items of one `(a; b; c)`: 5! = 120 orders


def _permuted(text: str, where: str) -> str:
    """HassIL's permutations, `(a; b; c)`: the items in every order, as alternatives of seqx's syntax
    (`((a) (b) | (b) (a))`). Groups inside are done first; a group without `;` is left as written. A
    sentence is a group of its own, as HassIL reads it: `a; b` at its top is a permutation too."""
    if ";" not in text:
        return text
    return _groups_permuted(f"({text})" if len(_split_top(text, ";")) > 1 else text, where)


def _groups_permuted(text: str, where: str) -> str:
    out, i = [], 0
    while i < len(text):
        if text[i] != "(":
            out.append(text[i])
            i += 1
            continue
        end = _closing(text, i)
        if end < 0:  # unbalanced: parse_template names it
            return text
        inner = _groups_permuted(text[i + 1 : end], where)
        items = _split_top(inner, ";")
        if len(items) > 1:
            if len(items) > MAX_PERMUTED:
                raise GrammarError(f"{where}: a permutation of more than {MAX_PERMUTED} items in '{text}'")
            inner = " | ".join(" ".join(f"({item.strip()})" for item in order) for order in permutations(items))
        out.append(f"({inner})")
        i = end + 1
    return "".join(out)


def _closing(text: str, start: int) -> int:
    """Where the bracket opened at `start` closes (-1: it does not)."""
    depth = 0
    for i in range(start, len(text)):
        depth += text[i] in "([{"
        depth -= text[i] in ")]}"
        if depth == 0:
            return i
    return -1


def _split_top(text: str, separator: str) -> list[str]:
    """`text` split at each `separator` outside brackets."""
    parts, depth, begun = [], 0, 0
    for i, c in enumerate(text):
        depth += c in "([{"
        depth -= c in ")]}"
        if c == separator and depth == 0:
            parts.append(text[begun:i])
            begun = i + 1
    return [*parts, text[begun:]]


class Gone(Enum):
    """What is left of a part without the lists it cannot say."""

    NOTHING = "nothing"  # it says nothing: an optional part, all of whose words are gone
    NEVER = "never"  # it cannot be said: a part every way of which needs a list that says nothing here


def unsaid_lists(expr: Expr) -> list[tuple[str, str]]:
    """The (why, list) of each `{unsaid@why@list}` an expression says, in order, once each."""
    found: list[tuple[str, str]] = []
    if isinstance(expr, SlotRef):
        return [tuple(expr.name.split("@")[1:3])] if expr.name.startswith(f"{UNSAID}@") else []  # type: ignore[list-item]
    if isinstance(expr, Word):
        return []
    children = expr.items if isinstance(expr, Seq) else expr.options if isinstance(expr, Alt) else (expr.item,)
    for child in children:
        found += [pair for pair in unsaid_lists(child) if pair not in found]
    return found


def without_unsaid(expr: Expr) -> Expr | Gone:
    """The sentence without the choices that say an unsaid list, as HassIL still matches the others:
    `(<name> | <area>) lights off` with no name to say is `<area> lights off`; `[named {timer_name}]` goes."""
    if isinstance(expr, Word):
        return expr
    if isinstance(expr, SlotRef):
        return Gone.NEVER if expr.name.startswith(f"{UNSAID}@") else expr
    if isinstance(expr, Opt):
        inner = without_unsaid(expr.item)
        return Gone.NOTHING if isinstance(inner, Gone) else Opt(inner)
    if isinstance(expr, Alt):
        options = [without_unsaid(option) for option in expr.options]
        kept = [option for option in options if not isinstance(option, Gone)]
        if not kept:
            return Gone.NOTHING if Gone.NOTHING in options else Gone.NEVER
        body = kept[0] if len(kept) == 1 else Alt(tuple(kept))
        return Opt(body) if Gone.NOTHING in options else body
    items = [without_unsaid(item) for item in expr.items]
    if Gone.NEVER in items:
        return Gone.NEVER
    kept = [item for item in items if not isinstance(item, Gone)]
    return Gone.NOTHING if not kept else kept[0] if len(kept) == 1 else Seq(tuple(kept))
