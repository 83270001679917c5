"""A plain phrase list (Vosk's way): one command a line, `#` starts a comment.

Each line is a template of its own, so plain words work and so do `(a | b)` and
`[optional]`; all lines make one intent named after the file. Vosk's own form, the JSON list a
KaldiRecognizer takes (`["turn on the light", "turn off the light", "[unk]"]`), is a phrase list
too (a `.json` file); its "[unk]" (anything else) is what seqx's rejection does, so it is dropped.
"""

from __future__ import annotations

from pathlib import Path

from seqx.grammar.errors import GrammarError
from seqx.grammar.model import Grammar, Template
from seqx.grammar.syntax import parse_template, slot_refs


def phrases_to_grammar(text: str, source: str = "<phrases>", intent: str | None = None) -> Grammar:
    name = "phrases" if source.startswith("<") else Path(source).stem
    intent = intent or name
    templates = []
    for number, line in enumerate(text.splitlines(), 1):
        phrase = line.split("#", 1)[0].strip()
        if not phrase:
            continue
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
