"""A plain phrase list (Vosk's way): one command a line, `#` starts a comment, a list's
"- ", "* " or "1. " before a command is not said.

Each line is a template of its own, so plain words work and so do `(a | b)` and
`[optional]`; all lines make one intent named after the file. Vosk's own form, the JSON list a
KaldiRecognizer takes (`["turn on the light", "turn off the light", "[unk]"]`), is a phrase list
too (a `.json` file); its "[unk]" (anything else) is what seqx's rejection does, so it is dropped.
"""

from __future__ import annotations

import re
from pathlib import Path

from seqx.grammar.errors import GrammarError
from seqx.grammar.model import Grammar, Template
from seqx.grammar.syntax import parse_template, slot_refs

# a list copied from notes or a README: "- turn on the light", "* stop", "1. play music", "2) pause";
# left in, "1." was said "one" before every command of the list and "-" or "*" failed to parse
_LIST_MARK = re.compile(r"^\s*(?:[-*\u2022]|\d{1,3}[.)])\s+")
# what a line says, for finding one said twice: case and sentence punctuation are not said
_NOT_SAID = re.compile(r"[.,!?;:\"]")


def _said(phrase: str) -> str:
    return " ".join(_NOT_SAID.sub(" ", phrase.lower()).split())


def phrases_to_grammar(text: str, source: str = "<phrases>", intent: str | None = None) -> Grammar:
    name = "phrases" if source.startswith("<") else Path(source).stem
    intent = intent or name
    templates = []
    seen: set[str] = set()
    for number, line in enumerate(text.splitlines(), 1):
        phrase = _LIST_MARK.sub("", line.split("#", 1)[0]).strip()
        said = _said(phrase)
        if not phrase or said in seen:
            continue  # "Turn on the lights." after "turn on the lights" would be drawn twice as often
        seen.add(said)
        expr = parse_template(phrase, f"{source}:{number}")
        if slot_refs(expr):
            raise GrammarError(f"{source}:{number}: a phrase list has no slots, got '{{{slot_refs(expr)[0]}}}'")
        templates.append(Template(intent, phrase, expr))
    if not templates:
        raise GrammarError(f"{source}: no phrases (one command a line)")
    return Grammar(name, templates, {})


def vosk_to_grammar(text: str, source: str = "<vosk>") -> Grammar:
    """A Vosk grammar: a JSON list of phrases; "[unk]" dropped (seqx answers "not understood" itself)."""
    import json

    try:
        phrases = json.loads(text)
    except json.JSONDecodeError as err:
        raise GrammarError(f"{source}:{err.lineno}: not JSON ({err.msg})") from None
    if not isinstance(phrases, list) or not all(isinstance(p, str) for p in phrases):
        raise GrammarError(f'{source}: a Vosk grammar is a JSON list of phrases, ["turn on the light", ...]')
    return phrases_to_grammar("\n".join(p for p in phrases if p.strip() != "[unk]"), source)
