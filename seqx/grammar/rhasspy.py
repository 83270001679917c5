"""Rhasspy's and voice2json's `sentences.ini`: a Rhasspy user's commands, as they wrote them.

`[Intent]` sections of template sentences; `name = ...` rules inside a section, used as `<name>` (or
`<Intent.name>` from another section); `(a | b)`, `[optional]`; tags `(red | green){color}` and
`(living room lamp){name:switch_1}` name a slot; substitutions `on:enable` and `(a | b):out` say
what the slot reports; `:please` is reported, never said; a tag of the sentence that says
nothing (`(:light){domain}`, `(:){domain:light}`) is a slot the sentence reports unsaid; `$colors` is the slot file
`slots/colors` beside the file (one value a line, the same syntax); `1..10` (`1..10,2`) a range
of numbers, said as words and reported as numbers; `\\[` escapes a sentence's first bracket. A
tagged part becomes a seqx slot of every way to say it (so it must be finite and not huge); what
is outside tags is said as written and reports nothing. Converters `!int`, `!float`, `!bool`,
`!lower` and `!upper` are applied to what a tag reports (others, your own, are read and left out).
Errors name the file and line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from itertools import product
from pathlib import Path

from seqx.grammar.errors import GrammarError
from seqx.grammar.model import Grammar, Output, Slot, SlotValue, Template
from seqx.grammar.syntax import Alt, Expr, Opt, SlotRef, Word, choice_of, render, reported_name, sequence_of
from seqx.text_files import read_text_file
from seqx.tokenize.text import number_words

MAX_SLOT_VALUES = 10_000  # a tag over more ways to say it than this is not a slot a command needs

_TOKEN = re.compile(r"\{[^{}]*\}|<[^<>]*>|\$[\w.-]+(?:![\w!]+)?|:[^\s()\[\]|{}<>]*|[()\[\]|]|[^\s()\[\]|{}<>:]+(?::[^\s()\[\]|{}<>]*)?")
_RANGE = re.compile(r"^(-?\d+)\.\.(-?\d+)(?:,(\d+))?(?:![\w!]+)?$")
_RULE = re.compile(r"^([A-Za-z_][\w.-]*)\s*=\s*(.*)$")


@dataclass(frozen=True)
class _Said:
    """Words said, and what a slot that holds them reports instead (None: the words themselves)."""

    words: tuple[str, ...]
    out: tuple[str, ...] | None = None


@dataclass(frozen=True)
class _Group:
    kind: str  # "seq", "alt" or "opt"
    parts: tuple[object, ...]
    out: tuple[str, ...] | None = None  # `(a | b):out`


@dataclass(frozen=True)
class _Tag:
    item: object
    name: str
    value: str | None  # `{name:value}`


@dataclass(frozen=True)
class _Ref:
    name: str  # a rule, or `$file`


def rhasspy_to_grammar(text: str, source: str = "<sentences.ini>", folder: Path | None = None) -> Grammar:
    """`folder`: where `$name` finds `slots/name` (the file's own folder)."""
    sections: dict[str, list[tuple[str, int]]] = {}
    rules: dict[str, tuple[str, int]] = {}
    intent = None
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if re.fullmatch(r"\[[^\[\]]+\]", line):  # a section, as configparser reads it (a sentence escapes: `\[the] ...`)
            intent = line[1:-1].strip()
            sections.setdefault(intent, [])
            continue
        if intent is None:
            raise GrammarError(f"{source}:{number}: a sentence before any [Intent] section")
        line = line.removeprefix("\\")
        rule = _RULE.match(line)
        if rule:  # `<name>` in this section, `<Intent.name>` anywhere (a bare name elsewhere: the last one)
            rules[rule.group(1)] = rules[f"{intent}.{rule.group(1)}"] = (rule.group(2), number)
        else:
            sections[intent].append((line, number))
    if not any(sections.values()):
        raise GrammarError(f"{source}: no sentences (an [Intent] section and a sentence under it)")
    return _Builder(source, rules, Path(folder or ".")).grammar(Path(source).stem if not source.startswith("<") else "sentences", sections)


class _Builder:
    def __init__(self, source: str, rules: dict[str, tuple[str, int]], folder: Path) -> None:
        self.source, self.rules, self.folder = source, rules, folder
        self.slots: dict[str, Slot] = {}
        self.intent = ""
        self.parsed: dict[str, object] = {}  # rule bodies and slot files, parsed once

    def grammar(self, name: str, sections: dict[str, list[tuple[str, int]]]) -> Grammar:
        templates = []
        for intent, lines in sections.items():
            self.intent = intent  # `<name>` is this section's rule first
            for line, number in lines:
                where = f"{self.source}:{number}"
                node = _parse(line, where)
                parts = list(node.parts) if isinstance(node, _Group) and node.kind == "seq" else [node]
                fixed = [self.fixed(p, where) for p in parts]
                expr = sequence_of([self.expr(p, where, ()) for p, f in zip(parts, fixed, strict=True) if f is None])
                if expr is None:
                    raise GrammarError(f"{where}: the sentence says nothing")
                templates.append(Template(intent, render(expr), expr, fixed=tuple(f for f in fixed if f is not None)))
        return Grammar(name, templates, self.slots)

    def fixed(self, node: object, where: str) -> tuple[str, Output] | None:
        """A tag of the sentence that says nothing and reports a value (`(:light){domain}`, `(:){domain:light}`):
        a slot the sentence reports without saying it. None for any other part."""
        if not isinstance(node, _Tag):
            return None
        said = self.values(node.item, where, ())
        if any(s.words for s in said):
            return None
        outs = {node.value or " ".join(s.out or ()) for s in said} - {""}
        if len(outs) != 1:
            raise GrammarError(f"{where}: tag {{{node.name}}} says nothing and reports "
                               f"{'nothing' if not outs else 'one of several values'}")  # fmt: skip
        out = outs.pop()
        return node.name.split("!")[0], _converted(out, node.name, where)

    def expr(self, node: object, where: str, stack: tuple[str, ...]) -> Expr | None:
        """The part as seqx says it; tags become slots."""
        if isinstance(node, _Said):
            return _words(node.words)
        if isinstance(node, _Tag):
            return self.slot(node.name, self.values(node.item, where, stack), node.value, where)
        if isinstance(node, _Ref):
            if node.name.startswith("$"):
                return self.slot(node.name[1:], self.values(node, where, stack), None, where)
            return self.expr(self.rule(node, where, stack), where, (*stack, node.name))
        if isinstance(node, str):  # a range of numbers, untagged: said as words
            return Alt(tuple(_words(tuple(w.split())) for w, _ in _range(node)))
        assert isinstance(node, _Group)
        parts = [self.expr(p, where, stack) for p in node.parts]
        if node.kind == "seq":
            return sequence_of(parts)
        return choice_of(parts if node.kind == "alt" else [*parts, None])  # `[...]`: or nothing

    def values(self, node: object, where: str, stack: tuple[str, ...]) -> list[_Said]:
        """Every way to say the part, each with what it reports."""
        if isinstance(node, _Said):
            return [node]
        if isinstance(node, _Tag):
            return [_Said(v.words, (node.value,) if node.value else v.out) for v in self.values(node.item, where, stack)]
        if isinstance(node, str):
            return [_Said(tuple(w.split()), (str(n),)) for w, n in _range(node)]
        if isinstance(node, _Ref):
            if node.name.startswith("$"):
                return self.slot_file(node.name[1:].split("!")[0], where, stack)
            return self.values(self.rule(node, where, stack), where, (*stack, node.name))
        assert isinstance(node, _Group)
        options: list[_Said]
        if node.kind == "seq":
            options = [_Said((), ())]
            for part in node.parts:
                options = [_join(a, b) for a, b in product(options, self.values(part, where, stack))]
                if len(options) > MAX_SLOT_VALUES:
                    raise GrammarError(f"{where}: a tagged part has more than {MAX_SLOT_VALUES:,} ways to be said")
        else:
            options = [v for p in node.parts for v in self.values(p, where, stack)]
            options += [_Said((), ())] if node.kind == "opt" else []
        return [_Said(v.words, node.out) for v in options] if node.out is not None else options

    def rule(self, ref: _Ref, where: str, stack: tuple[str, ...]) -> object:
        name = f"{self.intent}.{ref.name}" if f"{self.intent}.{ref.name}" in self.rules else ref.name
        if name not in self.rules:
            raise GrammarError(f"{where}: <{ref.name}> is no rule of the file")
        if ref.name in stack:
            raise GrammarError(f"{where}: rule <{ref.name}> uses itself")
        if name not in self.parsed:  # a rule used in many places is read once
            body, number = self.rules[name]
            self.parsed[name] = _parse(body, f"{self.source}:{number}")
        return self.parsed[name]

    def slot_file(self, name: str, where: str, stack: tuple[str, ...]) -> list[_Said]:
        path = self.folder / "slots" / name
        if not path.is_file():
            raise GrammarError(f"{where}: ${name}: no slot file {path}")
        if f"${name}" not in self.parsed:  # read once however often it is used
            lines = [(raw.strip(), n) for n, raw in enumerate(read_text_file(path).splitlines(), 1)]
            self.parsed[f"${name}"] = [(_parse(line, f"{path}:{n}"), f"{path}:{n}")
                                       for line, n in lines if line and not line.startswith("#")]
        return [v for node, at in self.parsed[f"${name}"] for v in self.values(node, at, stack)]

    def slot(self, tag: str, said: list[_Said], value: str | None, where: str) -> SlotRef | None:
        """`tag`: the slot's name, with any converters (`degrees!int`)."""
        name = tag.split("!")[0]
        found: dict[tuple[str, ...], Output] = {}
        for s in said:
            if s.words:
                out = value if value else " ".join(s.out if s.out is not None else s.words)
                found.setdefault(s.words, _converted(out, tag, where))
        if not found:
            if any(s.out or value for s in said):  # a fixed value where only some sentences say it
                raise GrammarError(f"{where}: tag {{{name}}} says nothing and reports a value inside a group: "
                                   f"a slot reported unsaid is a part of the sentence itself ('... (:light){{domain}}')")  # fmt: skip
            return None
        values = tuple(SlotValue(w, o) for w, o in found.items())
        # the same tag elsewhere with other words (a light's name here, a room's there) is a list of its own,
        # heard only where it is written, as Rhasspy hears it, and still reported as the tag: `name@Intent`
        same = [s.name for s in self.slots.values() if reported_name(s.name) == name and set(s.values) == set(values)]
        key = same[0] if same else name if name not in self.slots else _free(self.slots, f"{name}@{self.intent}")
        self.slots[key] = self.slots.get(key) or Slot(key, values)
        return SlotRef(key) if len(said) == len([s for s in said if s.words]) else Opt(SlotRef(key))


_CONVERTERS = {
    "int": lambda v: int(float(v)), "float": float, "lower": str.lower, "upper": str.upper,
    "bool": lambda v: v.strip().lower() in ("true", "yes", "on", "1"),
}  # fmt: skip


def _converted(out: str, tag: str, where: str) -> Output:
    """What a slot reports: its text through the tag's converters (`{temp!int}`, `{name!upper}`), as
    Rhasspy's are named; without any, a whole number is a number and the rest text. A converter of
    your own (a script Rhasspy would run) is left out: the text is reported."""
    value: Output = int(out) if re.fullmatch(r"-?\d+", out) else out
    for name in tag.split("!")[1:]:
        convert = _CONVERTERS.get(name.strip().lower())
        if convert is None:
            continue
        try:
            value = convert(str(value))
        except ValueError:
            raise GrammarError(f"{where}: {{{tag}}}: {out!r} is not {name}") from None
    return value


def _free(taken: dict[str, Slot], name: str) -> str:
    """`name`, or `name.2`, `name.3` ...: the first that no slot has (SLOT_NAME's characters only)."""
    name = re.sub(r"[^A-Za-z0-9_.@-]", "_", name)
    n = 1
    while (found := name if n == 1 else f"{name}.{n}") in taken:
        n += 1
    return found


def _words(words: tuple[str, ...]) -> Expr | None:
    return sequence_of([Word(w) for w in words])


def _join(a: _Said, b: _Said) -> _Said:
    return _Said(a.words + b.words, (a.out if a.out is not None else a.words) + (b.out if b.out is not None else b.words))


def _range(text: str) -> list[tuple[str, int]]:
    lo, hi, step = _RANGE.match(text).groups()  # type: ignore[union-attr]
    numbers = range(int(lo), int(hi) + 1, int(step or 1))
    return [(("minus " if n < 0 else "") + number_words(abs(n)), n) for n in numbers]


def _parse(text: str, where: str) -> object:
    """A sentence or rule body as a tree of _Said, _Group, _Tag, _Ref and range strings."""
    tokens = _TOKEN.findall(text)
    pos = 0

    def alternatives(closer: str | None) -> object:
        nonlocal pos
        options = [sequence(closer)]
        while pos < len(tokens) and tokens[pos] == "|":
            pos += 1
            options.append(sequence(closer))
        if closer is not None:
            if pos >= len(tokens) or tokens[pos] != closer:
                raise GrammarError(f"{where}: unbalanced brackets: no '{closer}' in '{text}'")
            pos += 1
        elif pos < len(tokens):
            raise GrammarError(f"{where}: unbalanced '{tokens[pos]}' in '{text}'")
        return options[0] if len(options) == 1 else _Group("alt", tuple(options))

    def sequence(closer: str | None) -> object:
        nonlocal pos
        items: list[object] = []
        while pos < len(tokens) and tokens[pos] not in ("|", ")", "]"):
            tok = tokens[pos]
            pos += 1
            if tok in ("(", "["):
                inner = alternatives(")" if tok == "(" else "]")
                group = inner if tok == "(" else _Group("opt", (inner,))
                if pos < len(tokens) and tokens[pos].startswith(":"):  # `(a | b):out`
                    out = (tokens[pos][1:],) if tokens[pos][1:] else ()
                    group = _Group(group.kind, group.parts, out) if isinstance(group, _Group) else _Group("seq", (group,), out)
                    pos += 1
                items.append(group)
            elif tok.startswith("{"):
                if not items:
                    raise GrammarError(f"{where}: tag {tok} follows nothing in '{text}'")
                name, _, value = tok[1:-1].partition(":")
                items[-1] = _Tag(items[-1], name.strip(), value.strip() or None)
            elif tok.startswith("<"):
                items.append(_Ref(tok[1:-1].strip()))
            elif tok.startswith("$"):
                items.append(_Ref(tok))
            elif _RANGE.match(tok):
                items.append(tok)
            else:
                said, colon, out = tok.partition(":")
                items.append(_Said((said,) if said else (), (out,) if out else () if colon else None))
        if not items:
            raise GrammarError(f"{where}: empty alternative in '{text}'")
        return items[0] if len(items) == 1 else _Group("seq", tuple(items))

    return alternatives(None)
