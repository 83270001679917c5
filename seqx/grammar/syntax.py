"""The template syntax: `(a | b)` alternatives, `[optional words]`, `{slot}` references.

A template parses into a small expression tree; `render` writes it back, so a grammar
(a JSGF import included) can be stored as template text and read again.

>>> render(parse_template("(turn | switch) on [the] {room} lights"))
'(turn | switch) on [the] {room} lights'
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from seqx.grammar.errors import GrammarError


@dataclass(frozen=True)
class Word:
    text: str


@dataclass(frozen=True)
class SlotRef:
    name: str
    # letters written against the slot, as one word with each value: "{drink}s" (lattes), "{n}th" (5th,
    # said "fifth"), "{person}'s" (the grammar's Grammar makes them a slot of their own: glued_name)
    before: str = ""
    after: str = ""


@dataclass(frozen=True)
class Seq:
    items: tuple[Expr, ...]


@dataclass(frozen=True)
class Alt:
    options: tuple[Expr, ...]


@dataclass(frozen=True)
class Opt:
    item: Expr


Expr = Word | SlotRef | Seq | Alt | Opt

_TOKEN = re.compile(r"\{[^{}]*\}|[()\[\]|{}]|[^\s()\[\]|{}]+")
_CLOSER = {"(": ")", "[": "]"}
# a slot's own name; after an "@", a list of it heard in one place (Rhasspy's tags) or glued letters
SLOT_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]*(@[^\s{}()\[\]|@]+)*$")


def reported_name(slot: str) -> str:
    """The name a parse reports a slot under: `device@lights` and `device@tv` are two lists, each
    heard only where it is used, that both answer as `device` (Rhasspy's tag used in two intents);
    `drink@+s`, the slot "{drink}s" says (glued_name), answers as `drink`."""
    return slot.split("@", 1)[0]


def glued_name(ref: SlotRef) -> str:
    """The name of the slot a slot with letters glued to it says: "{drink}s" -> `drink@+s`."""
    return f"{ref.name}@{ref.before}+{ref.after}"


def written_slot(slot: str) -> str:
    """The slot a grammar writes, for a slot made of one with letters glued to it: `drink@+s` -> `drink`."""
    head, _, glued = slot.rpartition("@")
    return head if head and "+" in glued else slot


def parse_template(text: str, where: str = "template") -> Expr:
    """The expression of one template; a GrammarError `WHERE: problem in 'TEXT'` otherwise."""
    tokens = [(m.group(), m.start(), m.end()) for m in _TOKEN.finditer(text)]
    parser = _Parser(tokens, lambda problem: GrammarError(f"{where}: {problem} in '{text}'"))
    if not tokens:
        raise parser.error("empty template")
    expr = parser.alternatives(closer=None)
    return expr


def glued(left: Expr, right: Expr) -> Expr:
    """Two parts written with nothing between them, said as one word where they meet: `light[s]` is
    "light" or "lights", `turn(s | ed)` "turns" or "turned", `{drink}s` each value with an "s"
    ("lattes", `SlotRef.after`), `(latte | mocha)s` "lattes" or "mochas" (HassIL writes grammars so).
    Written apart they were words of their own ("light s", said "light ess"). Two slots, or a slot and
    punctuation alone ("{hour}:{minute}", "{drink},"), stay apart."""
    if isinstance(left, Alt):
        return Alt(tuple(glued(option, right) for option in left.options))
    if isinstance(right, Alt):
        return Alt(tuple(glued(left, option) for option in right.options))
    if isinstance(left, Opt):
        return Alt((right, glued(left.item, right)))
    if isinstance(right, Opt):
        return Alt((left, glued(left, right.item)))
    if isinstance(left, Seq):
        return _flat(Seq((*left.items[:-1], glued(left.items[-1], right))))
    if isinstance(right, Seq):
        return _flat(Seq((glued(left, right.items[0]), *right.items[1:])))
    if isinstance(left, Word) and isinstance(right, Word):
        return Word(left.text + right.text)
    if isinstance(left, SlotRef) and isinstance(right, Word) and re.search(r"\w", right.text):
        return SlotRef(left.name, left.before, left.after + right.text)
    if isinstance(left, Word) and isinstance(right, SlotRef) and re.search(r"\w", left.text):
        return SlotRef(right.name, left.text + right.before, right.after)
    return Seq((left, right))


def _flat(seq: Seq) -> Expr:
    items = [part for item in seq.items for part in (item.items if isinstance(item, Seq) else (item,))]
    return items[0] if len(items) == 1 else Seq(tuple(items))


class _Parser:
    def __init__(self, tokens: list[tuple[str, int, int]], error) -> None:  # noqa: ANN001
        self.tokens, self.pos, self.error = [t for t, _, _ in tokens], 0, error
        self.starts, self.ends = [s for _, s, _ in tokens], [e for _, _, e in tokens]

    def alternatives(self, closer: str | None) -> Expr:
        options = [self.sequence(closer)]
        while self.pos < len(self.tokens) and self.tokens[self.pos] == "|":
            self.pos += 1
            options.append(self.sequence(closer))
        if closer is not None:
            if self.pos >= len(self.tokens):
                opener = "(" if closer == ")" else "["
                raise self.error(f"unbalanced '{opener}': no closing '{closer}'")
            if self.tokens[self.pos] != closer:
                raise self.error(f"unbalanced brackets: '{self.tokens[self.pos]}' where '{closer}' closes")
            self.pos += 1
        elif self.pos < len(self.tokens):
            raise self.error(f"unbalanced '{self.tokens[self.pos]}': nothing opened it")
        return options[0] if len(options) == 1 else Alt(tuple(options))

    def sequence(self, closer: str | None) -> Expr:
        items: list[Expr] = []
        end = -1  # where the item before ended: an item that starts there is written against it...
        tight = False  # ...and, a bracket, whether its words touch the bracket ("[s]", not "[ percent]")
        while self.pos < len(self.tokens) and self.tokens[self.pos] not in ("|", ")", "]"):
            first = self.pos
            item = self.item()
            last = self.pos - 1
            bracket = self.tokens[first] in _CLOSER
            if items and self.starts[first] == end and tight and (not bracket or self.starts[first + 1] == self.ends[first]):
                item = glued(items.pop(), item)
                items += item.items if isinstance(item, Seq) else [item]
            else:
                items.append(item)
            end, tight = self.ends[last], not bracket or self.ends[last - 1] == self.starts[last]
        if not items:
            raise self.error("empty alternative" if closer != "]" else "empty optional '[]'")
        return items[0] if len(items) == 1 else Seq(tuple(items))

    def item(self) -> Expr:
        token = self.tokens[self.pos]
        self.pos += 1
        if token in _CLOSER:
            inner = self.alternatives(_CLOSER[token])
            return Opt(inner) if token == "[" else inner
        if token in ("{", "}"):
            raise self.error(f"unbalanced '{token}'")
        if token.startswith("{"):
            name = token[1:-1].strip()
            if not SLOT_NAME.match(name):
                raise self.error(f"bad slot name '{{{name}}}'")
            return SlotRef(name)
        return Word(token)


def render(expr: Expr, top: bool = True) -> str:
    """Template text for an expression (parses back to the same expression)."""
    if isinstance(expr, Word):
        return expr.text
    if isinstance(expr, SlotRef):
        return expr.before + "{" + expr.name + "}" + expr.after
    if isinstance(expr, Opt):
        return "[" + render(expr.item, top=True) + "]"
    if isinstance(expr, Seq):
        return " ".join(render(i, top=False) for i in expr.items)
    body = " | ".join(render(o, top=not isinstance(o, Alt)) for o in expr.options)
    return body if top else "(" + body + ")"


def slot_refs(expr: Expr) -> list[str]:
    """The slots an expression names, in order, repeats kept."""
    if isinstance(expr, SlotRef):
        return [expr.name]
    if isinstance(expr, Word):
        return []
    children = expr.items if isinstance(expr, Seq) else expr.options if isinstance(expr, Alt) else (expr.item,)
    return [name for child in children for name in slot_refs(child)]


def literal_words(expr: Expr) -> set[str]:
    """The words written in the expression itself (not those of its slots)."""
    if isinstance(expr, Word):
        return {expr.text}
    if isinstance(expr, SlotRef):
        return set()
    children = expr.items if isinstance(expr, Seq) else expr.options if isinstance(expr, Alt) else (expr.item,)
    return set().union(*(literal_words(c) for c in children))


def sequence_of(parts: list[Expr | None]) -> Expr | None:
    """The parts in a row, those that say nothing (None) left out; None when all do."""
    kept = [p for p in parts if p is not None]
    return None if not kept else kept[0] if len(kept) == 1 else Seq(tuple(kept))


def choice_of(options: list[Expr | None]) -> Expr | None:
    """One of the options; an option that says nothing (None) makes the choice optional."""
    said = [o for o in options if o is not None]
    if not said:
        return None
    body = said[0] if len(said) == 1 else Alt(tuple(said))
    return Opt(body) if len(said) < len(options) else body


def can_say_nothing(expr: Expr) -> bool:
    """Whether every part of the expression may be left out (`[go] [now]`)."""
    if isinstance(expr, Word | SlotRef):
        return False
    if isinstance(expr, Opt):
        return True
    if isinstance(expr, Seq):
        return all(can_say_nothing(i) for i in expr.items)
    return any(can_say_nothing(o) for o in expr.options)


def says_something(expr: Expr) -> Expr:
    """The same sentences but the empty one: a command that says nothing would answer silence and
    noise with a command. `[go] [now]` -> `go [now] | now` (split where the first word said is)."""
    if not can_say_nothing(expr):
        return expr
    if isinstance(expr, Opt):
        return says_something(expr.item)
    if isinstance(expr, Alt):
        return Alt(tuple(says_something(o) for o in expr.options))
    assert isinstance(expr, Seq)
    firsts = [(says_something(item), *expr.items[i + 1 :]) for i, item in enumerate(expr.items)]
    return Alt(tuple(f[0] if len(f) == 1 else Seq(f) for f in firsts))
