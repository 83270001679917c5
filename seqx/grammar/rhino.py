"""Picovoice Rhino's context YAML (the Console's export): a Rhino user's commands, as they wrote them.

    context:
      expressions:
        turnLights:
          - "[switch, turn] $state:state (all) (the) [light, lights]"
          - "@polite [change, set] (the) $location:room (to) $color:color"
      slots:
        state: ["on", "off"]
        location: [kitchen, living room]
        color: [blue, red]
      macros:
        polite: ["please", "could you"]

`[a, b]` is one of the choices, `(a)` and `(a, b)` optional, `$type:name` a value of the slot type
`type` reported as `name` (seqx's `{name@type}`), `@macro` one of the macro's phrases. Each
expression becomes a seqx template (`(switch | turn) {state} [all] [the] (light | lights)`), so a
context trains, decodes and reports as Rhino's inference does: the intent and its slots.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from seqx.grammar.errors import GrammarError, yaml_mapping
from seqx.grammar.model import Grammar, Slot, SlotValue, Template
from seqx.grammar.syntax import parse_template

_SLOT = re.compile(r"\$([A-Za-z_][\w.-]*):([A-Za-z_][\w.-]*)")
_MACRO = re.compile(r"@([A-Za-z_][\w.-]*)")
_BRACKETS = {"[": " ( ", "]": " ) ", "(": " [ ", ")": " ] ", ",": " | "}


def is_rhino(raw: Mapping[str, Any]) -> bool:
    context = raw.get("context")
    return set(raw) == {"context"} and isinstance(context, Mapping) and "expressions" in context


def rhino_to_grammar(raw: Mapping[str, Any], source: str, name: str) -> Grammar:
    context = raw["context"]
    expressions = yaml_mapping(context.get("expressions"), f"{source}: context: expressions")
    types = yaml_mapping(context.get("slots"), f"{source}: context: slots")
    macros = yaml_mapping(context.get("macros"), f"{source}: context: macros")
    slots: dict[str, Slot] = {}
    templates = []
    for intent, lines in expressions.items():
        if not isinstance(lines, list) or not lines:
            raise GrammarError(f"{source}: context: expressions: {intent}: expected a list of expressions")
        for line in lines:
            where = f"{source}: context: expressions: {intent}: '{line}'"
            text = _seqx_syntax(str(line), types, macros, slots, where)
            templates.append(Template(str(intent), text, parse_template(text, where)))
    return Grammar(name, templates, slots)


def _seqx_syntax(line: str, types: Mapping[str, Any], macros: Mapping[str, Any], slots: dict[str, Slot],
                 where: str) -> str:  # fmt: skip
    """The expression in seqx's template syntax; each slot type used made a slot."""

    def macro(m: re.Match) -> str:
        phrases = macros.get(m.group(1))
        if not isinstance(phrases, list) or not phrases:
            raise GrammarError(f"{where}: unknown macro @{m.group(1)} (add it under macros: with its phrases)")
        return "[" + ", ".join(str(p) for p in phrases) + "]"

    def slot(kind: str, reported: str) -> str:
        values = types.get(kind)
        if not isinstance(values, list) or not values:
            raise GrammarError(f"{where}: unknown slot type ${kind} (add it under slots: with its values)")
        key = reported if reported == kind else f"{reported}@{kind}"
        slots.setdefault(key, Slot(key, tuple(_value(v, kind) for v in values)))
        return "{" + key + "}"

    text = _MACRO.sub(macro, line)
    parts = _SLOT.split(text)  # plain, type, name, plain, ...: brackets are swapped in the plain parts only
    said = []
    for i in range(0, len(parts), 3):
        said.append("".join(_BRACKETS.get(c, c) for c in parts[i]))
        if i + 2 < len(parts):
            said.append(slot(parts[i + 1], parts[i + 2]))
    return " ".join("".join(said).split())


def _value(value: Any, kind: str) -> SlotValue:
    words = tuple(str(value).split())
    if not words:
        raise GrammarError(f"slots: {kind}: a value says nothing")
    return SlotValue(words, " ".join(words))
