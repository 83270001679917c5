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
    error = lambda problem: GrammarError(f"{where}: {problem} in '{text}'")  # noqa: E731
    tokens = _tokens_of(text, error)
    parser = _Parser(tokens, error)
    if not tokens:
        raise parser.error("empty template")
    expr = parser.alternatives(closer=None)
    return expr


def _tokens_of(text: str, error) -> list[str | SlotRef]:  # noqa: ANN001
    """The template's tokens, a slot and the letters written against it ("{drink}s", "un{lock}") as one
    SlotRef: each value is then said as one word with them ("lattes"), where the letters apart would be
    a word of their own ("latte s", said "latte ess")."""
    tokens: list[str | SlotRef] = []
    run: list[str] = []  # tokens with nothing between them
    end = -1
    for match in _TOKEN.finditer(text):
        token = match.group()
        if match.start() == end and (_said(run[-1]) and token in "([" or run[-1] in ")]" and _said(token)):
            raise error(f"'{run[-1]}{token}': letters written against brackets are not a word with what the "
                        f"brackets hold; write the forms apart, as in '({{drink}} | {{drink}}s)'")
        if match.start() != end or token in "()[]|" or (run and run[-1] in "()[]|"):
            tokens += _run(run, error)
            run = []
        run.append(token)
        end = match.end()
    return tokens + _run(run, error)


def _said(token: str) -> bool:
    """A token that is or holds a word: a slot, or letters and digits (not brackets or punctuation)."""
    return token.startswith("{") or bool(re.search(r"\w", token))


def _run(run: list[str], error) -> list[str | SlotRef]:  # noqa: ANN001
    """Tokens written together: one slot and letters against it are one SlotRef; anything else (two
    slots, "{hour}:{minute}"; punctuation alone, "{drink},") stays apart, as it always was."""
    slots = [i for i, token in enumerate(run) if token.startswith("{") and token.endswith("}") and len(token) > 1]
    if len(run) < 2 or len(slots) != 1 or not any(re.search(r"\w", t) for i, t in enumerate(run) if i != slots[0]):
        return list(run)
    name = run[slots[0]][1:-1].strip()
    if not SLOT_NAME.match(name):
        raise error(f"bad slot name '{{{name}}}'")
    before, after = "".join(run[: slots[0]]), "".join(run[slots[0] + 1 :])
    return [SlotRef(name, before, after)]


class _Parser:
    def __init__(self, tokens: list[str | SlotRef], error) -> None:  # noqa: ANN001
        self.tokens, self.pos, self.error = tokens, 0, error

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
        while self.pos < len(self.tokens) and self.tokens[self.pos] not in ("|", ")", "]"):
            items.append(self.item())
        if not items:
            raise self.error("empty alternative" if closer != "]" else "empty optional '[]'")
        return items[0] if len(items) == 1 else Seq(tuple(items))

    def item(self) -> Expr:
        token = self.tokens[self.pos]
        self.pos += 1
        if isinstance(token, SlotRef):
            return token
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
