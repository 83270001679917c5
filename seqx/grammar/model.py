"""The Grammar: intents made of templates, slots made of values; counted, sampled, parsed.

Nothing here lists the sentences: a smart-home grammar has more than 10^8 of them.
The sentence count is a sum over paths of the minimal word DFA (one path per distinct
sentence), a sample is one random path through a template, and a parse matches one
sentence against the templates.

>>> g = Grammar.build({"lights": ["turn (on | off) [the] {room} lights"]},
...                   {"room": ["kitchen", "living room"]})
>>> g.count()
8
>>> parse = g.parse("turn off living room lights")
>>> parse.intent, parse.slots
('lights', {'room': 'living room'})
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from functools import cached_property
from itertools import groupby
from typing import Any

import numpy as np

from seqx.grammar.errors import GrammarError
from seqx.grammar.fsa import DFA, NFA, determinize, minimize
from seqx.grammar.syntax import (
    Alt,
    Expr,
    Opt,
    Seq,
    SlotRef,
    Word,
    can_say_nothing,
    choice_of,
    glued_name,
    literal_words,
    parse_template,
    render,
    reported_name,
    says_something,
    sequence_of,
    slot_refs,
)

Output = str | int | float | bool


@dataclass(frozen=True)
class SlotValue:
    words: tuple[str, ...]
    output: Output  # what a parse reports: the words themselves unless the grammar says otherwise


@dataclass(frozen=True)
class Slot:
    name: str
    values: tuple[SlotValue, ...]


@dataclass(frozen=True)
class Template:
    intent: str
    text: str
    expr: Expr
    weight: float = 1.0
    # slots the template reports without saying them (Home Assistant's `slots: {domain: light}`):
    # "turn on the fans in the kitchen" and "... the lights ..." answer HassTurnOn with their domain
    # (a list is kept as a tuple: Home Assistant's `device_class: [window, blind]`, any of them)
    fixed: tuple[tuple[str, Output | tuple[Output, ...]], ...] = ()


@dataclass
class Parse:
    """One understood sentence: its intent and slot values (a slot used twice: name, name_2; `name@x`
    reports as `name`)."""

    intent: str
    slots: dict[str, Output]
    text: str
    template: str

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Grammar:
    name: str
    templates: list[Template]
    slots: dict[str, Slot] = field(default_factory=dict)
    # what reading the file left out and why (HassIL's wildcard sentences): `seqx grammar --show` and
    # the data stage say them; not stored with a bundle
    notes: list[str] = field(default_factory=list, repr=False, compare=False)
    _balanced: dict[str, np.ndarray] = field(default_factory=dict, init=False, repr=False, compare=False)
    # `spoken` per spelling: `seqx grammar --show` asks for it three times, the data stage twice
    _spoken: dict[Callable[[str], str], Grammar] = field(default_factory=dict, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # a template that can say nothing (`[go] [now]`, JSGF's `go*`) keeps every sentence but the empty one
        self.templates = [
            t if not can_say_nothing(t.expr) else replace(t, text=render(e := says_something(t.expr)), expr=e)
            for t in self.templates
        ]
        self.templates = [self._unglued(t) for t in self.templates]
        for template in self.templates:
            for ref in slot_refs(template.expr):
                if ref not in self.slots:
                    raise GrammarError(f"{self.name}: intent {template.intent}: unknown slot '{{{ref}}}' "
                                       f"in '{template.text}'")
        for slot in self.slots.values():
            if not slot.values:
                raise GrammarError(f"{self.name}: slot '{slot.name}' has no values")
            for value in slot.values:
                if not value.words:
                    raise GrammarError(f"{self.name}: slot '{slot.name}' has an empty value")

    def _unglued(self, template: Template) -> Template:
        """The template with each slot that has letters written against it ("{drink}s", "{n}th") made a
        slot of its own (`drink@+s`: "lattes", "flat whites"; `n@+th`: "5th", said "fifth"), which answers
        as the slot (`drink=latte`). Kept with the grammar's slots, so a stored grammar (a bundle's, said
        as decoded) reads back as it was."""

        def unglued(expr: Expr) -> Expr:
            if isinstance(expr, SlotRef):
                if not expr.before and not expr.after:
                    return expr
                name = glued_name(expr)
                if name not in self.slots:
                    if expr.name not in self.slots:
                        raise GrammarError(f"{self.name}: intent {template.intent}: unknown slot "
                                           f"'{{{expr.name}}}' in '{template.text}'")  # fmt: skip
                    values = tuple(SlotValue(_glued(v.words, expr.before, expr.after), v.output)
                                   for v in self.slots[expr.name].values)  # fmt: skip
                    self.slots = {**self.slots, name: Slot(name, values)}
                return SlotRef(name)
            if isinstance(expr, Word):
                return expr
            if isinstance(expr, Opt):
                return Opt(unglued(expr.item))
            if isinstance(expr, Seq):
                return Seq(tuple(unglued(e) for e in expr.items))
            return Alt(tuple(unglued(e) for e in expr.options))

        expr = unglued(template.expr)
        return template if expr == template.expr else replace(template, expr=expr)

    @classmethod
    def build(
        cls,
        intents: Mapping[str, Sequence[str]],
        slots: Mapping[str, Sequence[str | tuple[str, Output]]] | None = None,
        name: str = "grammar",
    ) -> Grammar:
        """A grammar from plain Python: {intent: [template, ...]}, {slot: [words | (words, output), ...]}."""
        built = {n: Slot(n, tuple(_slot_value(v) for v in values)) for n, values in (slots or {}).items()}
        templates = [
            Template(intent, text, parse_template(text, f"{name}: intent {intent}"))
            for intent, texts in intents.items()
            for text in texts
        ]
        return cls(name, templates, built)

    # -- what it is --
    @property
    def intents(self) -> dict[str, list[Template]]:
        grouped: dict[str, list[Template]] = {}
        for template in self.templates:
            grouped.setdefault(template.intent, []).append(template)
        return grouped

    def used_slots(self) -> list[str]:
        return sorted({ref for t in self.templates for ref in slot_refs(t.expr)})

    def vocabulary(self) -> list[str]:
        """Every word some sentence can contain, sorted (a traversal, not an enumeration)."""
        words: set[str] = set()
        for template in self.templates:
            words |= literal_words(template.expr)
        for name in self.used_slots():
            for value in self.slots[name].values:
                words.update(value.words)
        return sorted(words)

    def subset(self, intents: Sequence[str]) -> Grammar:
        return Grammar(self.name, [t for t in self.templates if t.intent in set(intents)], self.slots)

    # -- the language --
    @cached_property
    def _dfa(self) -> DFA:
        nfa = NFA()
        for template in self.templates:
            nfa.final.add(self._build(nfa, template.expr, 0))
        return minimize(determinize(nfa))

    def word_dfa(self) -> DFA:
        """The minimal deterministic acceptor over words (labels are words; start 0)."""
        return self._dfa

    def _build(self, nfa: NFA, expr: Expr, start: int) -> int:
        if isinstance(expr, Word):
            return nfa.add_path(start, [expr.text])
        if isinstance(expr, Seq):
            for item in expr.items:
                start = self._build(nfa, item, start)
            return start
        end = nfa.add_state()
        if isinstance(expr, SlotRef):
            for value in self.slots[expr.name].values:
                nfa.add_path(start, value.words, end)
        elif isinstance(expr, Alt):
            for option in expr.options:
                nfa.add_arc(self._build(nfa, option, start), None, end)
        else:  # Opt
            nfa.add_arc(self._build(nfa, expr.item, start), None, end)
            nfa.add_arc(start, None, end)
        return end

    def count(self) -> int:
        """Distinct sentences, by dynamic programming over the word DFA."""
        return self._dfa.count()

    def accepts(self, text: str) -> bool:
        return self._dfa.accepts(text.split())

    def sentences_with(self, word: str, limit: int) -> list[str] | None:
        """Every sentence that says `word`, or None when more than `limit` do (never a full listing)."""
        found = self._dfa.sequences_with(word, limit)
        return None if found is None else sorted(" ".join(map(str, words)) for words in found)

    # -- drawing and understanding sentences --
    @cached_property
    def _weights(self) -> np.ndarray:
        weights = np.array([t.weight for t in self.templates], dtype=np.float64)
        return weights / weights.sum()

    def sample(self, rng: np.random.Generator, word_balance: float = 0.0) -> Parse:
        """One random sentence: a template by weight, then uniform choices (alternatives, optionals, values).

        `word_balance`: this share of slot-value draws follow `word_balanced_weights` instead of
        being uniform. 0 draws exactly as before (no extra random numbers are taken).
        """
        if not self.templates:
            raise GrammarError(f"{self.name}: the grammar has no templates")
        template = self.templates[int(rng.choice(len(self.templates), p=self._weights))]
        words: list[str] = []
        slots: dict[str, Output] = {}
        self._draw(template.expr, rng, words, slots, word_balance)
        return Parse(template.intent, _with_fixed(slots, template), " ".join(words), template.text)

    def _draw(
        self, expr: Expr, rng: np.random.Generator, words: list[str], slots: dict[str, Output], balance: float
    ) -> None:
        if isinstance(expr, Word):
            words.append(expr.text)
        elif isinstance(expr, Seq):
            for item in expr.items:
                self._draw(item, rng, words, slots, balance)
        elif isinstance(expr, Alt):
            self._draw(expr.options[int(rng.integers(len(expr.options)))], rng, words, slots, balance)
        elif isinstance(expr, Opt):
            if rng.random() < 0.5:
                self._draw(expr.item, rng, words, slots, balance)
        else:
            values = self.slots[expr.name].values
            if balance > 0 and rng.random() < balance:
                value = values[int(rng.choice(len(values), p=self.word_balanced_weights(expr.name)))]
            else:
                value = values[int(rng.integers(len(values)))]
            words.extend(value.words)
            slots[_slot_key(slots, reported_name(expr.name))] = value.output

    def word_balanced_weights(self, slot: str) -> np.ndarray:
        """Draw probabilities of a slot's values that give its words more equal shares.

        Uniform draws over "one" ... "sixty" say "forty" in ten values and "fourteen" in one, so a
        model trained on them hears "forty" ten times as often and answers it for "fourteen". Here
        a value weighs the mean of 1 / (values saying the word) over its words: a word's share no
        longer grows with the number of values it is part of. Slots of one-word values that are all
        different stay uniform.
        """
        if slot not in self._balanced:
            values = self.slots[slot].values
            saying: dict[str, int] = {}
            for value in values:
                for word in set(value.words):
                    saying[word] = saying.get(word, 0) + 1
            weights = np.array([np.mean([1.0 / saying[w] for w in v.words]) for v in values])
            self._balanced[slot] = weights / weights.sum()
        return self._balanced[slot]

    def parse(self, text: str) -> Parse | None:
        """The first template (in grammar order) that matches the sentence, with its slot values; None if none."""
        words = text.split()
        for template in self.templates:
            for end, filled in self._match(template.expr, words, 0, ()):
                if end == len(words):
                    slots: dict[str, Output] = {}
                    for name, output in filled:
                        slots[_slot_key(slots, name)] = output
                    return Parse(template.intent, _with_fixed(slots, template), " ".join(words), template.text)
        return None

    def _match(
        self, expr: Expr, words: list[str], pos: int, filled: tuple[tuple[str, Output], ...]
    ) -> Iterator[tuple[int, tuple[tuple[str, Output], ...]]]:
        if isinstance(expr, Word):
            if pos < len(words) and words[pos] == expr.text:
                yield pos + 1, filled
        elif isinstance(expr, SlotRef):
            for value in self.slots[expr.name].values:
                end = pos + len(value.words)
                if tuple(words[pos:end]) == value.words:
                    yield end, (*filled, (reported_name(expr.name), value.output))
        elif isinstance(expr, Seq):
            yield from self._match_seq(expr.items, 0, words, pos, filled)
        elif isinstance(expr, Alt):
            for option in expr.options:
                yield from self._match(option, words, pos, filled)
        else:
            yield from self._match(expr.item, words, pos, filled)
            yield pos, filled

    def _match_seq(self, items, i, words, pos, filled):  # noqa: ANN001, ANN202
        if i == len(items):
            yield pos, filled
            return
        for end, more in self._match(items[i], words, pos, filled):
            yield from self._match_seq(items, i + 1, words, end, more)

    # -- as decoding hears it --
    def spoken(self, normalize: Callable[[str], str]) -> Grammar:
        """`_respelled(normalize)`, made once for each spelling."""
        if normalize not in self._spoken:
            self._spoken[normalize] = self._respelled(normalize)
        return self._spoken[normalize]

    def _respelled(self, normalize: Callable[[str], str]) -> Grammar:
        """The grammar with its words as the tokenizer normalizes them (`normalize`), which is how a
        decoded text spells them: a grammar of "TURN ON", "Coke" or "Mr. Smith" parses "turn on",
        "coke" and "mr smith" (a word may become several, or none). Words side by side (a template's
        run of words, a slot value) are spelled together, as the sentence they are part of is: "I AM"
        is the verb, "{hour} AM" the time. Slot outputs stay as written. Self when no word changes,
        which is most grammars."""
        said: dict[str, tuple[str, ...]] = {}

        def words(text: str) -> tuple[str, ...]:
            if text not in said:
                said[text] = tuple(normalize(text).split())
            return said[text]

        def said_as(text: str) -> Expr | None:
            new = words(text)
            return None if not new else Word(new[0]) if len(new) == 1 else Seq(tuple(Word(w) for w in new))

        def respell(expr: Expr) -> Expr | None:
            if isinstance(expr, Word):
                return said_as(expr.text)
            if isinstance(expr, SlotRef):
                return expr
            if isinstance(expr, Opt):
                item = respell(expr.item)
                return None if item is None else Opt(item)
            if isinstance(expr, Seq):  # words side by side are spelled together, as a sentence is ("I AM")
                items: list[Expr | None] = []
                for plain, run in groupby(expr.items, key=lambda e: isinstance(e, Word)):
                    items += [said_as(" ".join(w.text for w in run))] if plain else [respell(e) for e in run]
                return sequence_of(items)
            return choice_of([respell(e) for e in expr.options])  # an alternative said as nothing: optional

        def value_said(value: SlotValue) -> list[SlotValue]:
            """A value said alone, and before a noun where that differs: "12 oz" is "twelve ounces"
            alone and "twelve ounce" in "a {size} latte", as a sentence is spelled (short_forms)."""
            text = " ".join(value.words)
            alone = words(text) or value.words
            before = words(f"{text} thing")[:-1]
            return [SlotValue(alone, value.output)] + ([SlotValue(before, value.output)] if before and before != alone else [])

        slots = {name: Slot(name, tuple(s for v in slot.values for s in value_said(v))) for name, slot in self.slots.items()}
        templates = []
        for t in self.templates:
            expr = respell(t.expr)
            templates.append(t if expr == t.expr or expr is None else replace(t, text=render(expr), expr=expr))
        if slots == self.slots and templates == self.templates:
            return self
        return Grammar(self.name, templates, slots)

    # -- storage: what a bundle keeps --
    def to_dict(self) -> dict[str, Any]:
        intents: dict[str, list[Any]] = {}
        for t in self.templates:
            intents.setdefault(t.intent, []).append(_plain_template(t))
        slots = {
            name: [_plain_value(v) for v in slot.values]
            for name, slot in self.slots.items()
        }
        return {"name": self.name, "intents": intents, "slots": slots}

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> Grammar:
        from seqx.grammar.load import grammar_from_dict

        return grammar_from_dict(raw, source=str(raw.get("name", "grammar")))

    def to_json(self) -> str:
        return json.dumps(self.to_dict())


def _plain_template(t: Template) -> str | dict[str, Any]:
    """How to_dict writes a template: its text, {text: weight}, or {text: {weight, slots}} with fixed slots."""
    if not t.fixed:
        return t.text if t.weight == 1.0 else {t.text: t.weight}
    fixed = {name: list(value) if isinstance(value, tuple) else value for name, value in t.fixed}
    return {t.text: {**({"weight": t.weight} if t.weight != 1.0 else {}), "slots": fixed}}


def fixed_slots(raw: Any, where: str) -> tuple[tuple[str, Output | tuple[Output, ...]], ...]:
    """A template's fixed slots from a file (`slots: {domain: light, name: all}`): names and plain values,
    or lists of them (`device_class: [window, blind]`: any of these, as Home Assistant means it)."""
    if raw is None:
        return ()
    if not isinstance(raw, Mapping):
        raise GrammarError(f"{where}: slots: expected a mapping of slot name -> value ({{domain: light}})")
    fixed = []
    for name, value in raw.items():
        if not isinstance(name, str) or not name.strip() or any(c in name for c in "{}()[]| "):
            raise GrammarError(f"{where}: slots: bad slot name {name!r}")
        scalar = str | int | float | bool
        if isinstance(value, list) and value and all(isinstance(v, scalar) for v in value):
            value = tuple(value)
        elif not isinstance(value, scalar):
            raise GrammarError(f"{where}: slots: {name}: expected a value (words, a number or true/false) or a "
                               f"list of them, got {value!r}")  # fmt: skip
        fixed.append((name, value))
    return tuple(fixed)


def output_text(value: Any) -> str:
    """A slot's output as printed: a list (a fixed slot's "any of", `device_class: [window, blind]`)
    as `window|blind`."""
    return "|".join(map(str, value)) if isinstance(value, list | tuple) else str(value)


def _with_fixed(slots: dict[str, Output], template: Template) -> dict[str, Output]:
    """The slots said, then those the template fixes (a slot said keeps what was said)."""
    for name, output in template.fixed:
        slots.setdefault(name, list(output) if isinstance(output, tuple) else output)  # type: ignore[arg-type]
    return slots


def _plain_value(value: SlotValue) -> str | dict[str, Output]:
    """How to_dict writes a value: its words, or {words: output} (also when the words hold a ':')."""
    words = " ".join(value.words)
    return words if value.output == words and ":" not in words else {words: value.output}


def _glued(words: tuple[str, ...], before: str, after: str) -> tuple[str, ...]:
    """A value's words with letters written against its slot: ("flat", "white") + "s" -> ("flat", "whites")."""
    return (before + words[0], *words[1:-1], words[-1] + after) if len(words) > 1 else (before + words[0] + after,)


def _slot_key(slots: dict[str, Output], name: str) -> str:
    if name not in slots:
        return name
    n = 2
    while f"{name}_{n}" in slots:
        n += 1
    return f"{name}_{n}"


def _slot_value(value: str | tuple[str, Output]) -> SlotValue:
    if isinstance(value, tuple):
        words, output = value
        return SlotValue(tuple(words.split()), output)
    return SlotValue(tuple(value.split()), " ".join(value.split()))


__all__ = ["Grammar", "Output", "Parse", "Slot", "SlotValue", "Template", "fixed_slots", "output_text", "render"]
