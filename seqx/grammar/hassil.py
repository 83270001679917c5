"""Home Assistant's intent sentences (HassIL, the YAML of github.com/home-assistant/intents): an Assist
user's commands, as they wrote them.

    language: en
    intents:
      HassTurnOn:
        data:
          - sentences: ["<turn> on [the] {light_name:name}", "switch on light[s] in [the] {area}"]
            slots: {domain: light}             # fixed slots: reported with the sentence's own
    lists:
      light_name: {values: [lamp, {in: "ceiling light", out: light.ceiling}]}
      area: {values: [kitchen, living room]}
      brightness: {range: {from: 0, to: 100, step: 10}}   # also multiplier:, fractions: halves | tenths
    expansion_rules:
      turn: "(turn | switch)"

The templates are seqx's own syntax but for two things: `{list:slot}` (a list reported under another
name: seqx's `{slot@list}`), `<rule>` (an expansion rule, the intent's own `expansion_rules` before
the file's) and `(a; b)` (a permutation: the items in every order), which are rewritten; brackets
against letters (`light[s]`) are one word, as in seqx.
A list value's `in` may be a template (`(max | maximum)`: each way it says is a value with that `out`).
A list Home Assistant fills at run time (`{name}`, `{area}` with no `lists:` entry) has no values to
train on: an error says to give it `values:`. A sentence saying a `wildcard` list (without values) is
left out (only its choices that say it, when it has others), and the grammar's `notes` say so; `[ ]` is
an optional space, `[and]{list}` two words (seqx/grammar/hassil_syntax.py reads HassIL's spaces).
`skip_words` ("please", "can you") may come before a sentence (one or two) or after it (in a fifth
and a tenth as many training sentences as it alone). A data block's fixed `slots:` are reported with
what its sentences say (a slot said keeps what was said): "turn on the fans in the kitchen" is
HassTurnOn {area: kitchen, domain: fan, name: all}, as Home Assistant answers it. `requires_context`
and `excludes_context` pick the list values a block's sentences say by each value's `context:` (as
Home Assistant matches an entity's domain); a block's own `lists:` and `expansion_rules:` come before
the file's; `response` is read and ignored. A folder is merged as HassIL merges a language's files.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from seqx.grammar.errors import GrammarError, yaml_mapping
from seqx.grammar.hassil_lists import TEMPLATE_SYNTAX, Context, copied_slots, lists_named
from seqx.grammar.hassil_syntax import RULE, Gone, seqx_text, unsaid_lists, without_unsaid
from seqx.grammar.model import Grammar, Slot, Template, fixed_slots
from seqx.grammar.syntax import parse_template, render

HASSIL_KEYS = {"language", "intents", "lists", "expansion_rules", "skip_words", "responses"}
# a data block's keys as HassIL reads them; `response`, `metadata` and `required_keywords` (a matcher's
# shortcut: every sentence of a block that has them says one) change nothing a command says
BLOCK_KEYS = ("sentences", "slots", "requires_context", "excludes_context", "expansion_rules", "lists", "response",
              "metadata", "required_keywords")  # fmt: skip


def is_hassil(raw: Mapping[str, Any]) -> bool:
    """A HassIL file: its intents hold `data:` blocks (seqx's hold lists of templates)."""
    intents = raw.get("intents")
    return (
        set(raw) <= HASSIL_KEYS
        and isinstance(intents, Mapping)
        and any(isinstance(spec, Mapping) and "data" in spec for spec in intents.values())
    )


def folder_files(folder: Path) -> list[Path]:
    """A folder grammar's files: YAML, and JSON as the home-assistant-intents package ships a language's
    sentences merged (`data/en.json`, `speech_to_phrase/en.json`), beside a file of your own lists."""
    return sorted(p for p in folder.rglob("*") if p.suffix.lower() in (".yaml", ".yml", ".json") and p.is_file())


def hassil_folder(folder: Path) -> Grammar:
    """A folder of HassIL files (the intents repo's `sentences/en/`, `_common.yaml` among them, and a file
    of your own lists), merged as HassIL merges them: intents' data blocks joined, lists and rules by name."""
    from seqx.grammar.load import yaml_or_nothing

    files = folder_files(folder)
    if not files:
        raise GrammarError(f"{folder}: a folder grammar is Home Assistant's intent sentences: no .yaml or .json files in it")
    merged: dict[str, Any] = {"intents": {}, "lists": {}, "expansion_rules": {}}
    origins = Origins({}, {})
    for path in files:
        raw = yaml_or_nothing(path)
        if isinstance(raw, Mapping) and "intents" not in raw and {"sentences", "data"} & set(raw):
            raise GrammarError(f"{path}: one intent's sentences without `intents:` (the intents repository's "
                               f"per-intent folders, {path.parent.name}/), which HassIL does not read: move it out "
                               f"of the folder")  # fmt: skip
        if not isinstance(raw, Mapping) or not set(raw) <= HASSIL_KEYS:
            raise GrammarError(f"{path}: not Home Assistant's intent sentences (language, intents, lists, "
                               f"expansion_rules, skip_words)")  # fmt: skip
        for intent, spec in yaml_mapping(raw.get("intents"), f"{path}: intents").items():
            blocks = _data_blocks(spec, f"{path}: intents: {intent}")
            merged["intents"].setdefault(intent, {"data": []})["data"] += blocks
            own = origins.blocks.setdefault(intent, [])
            own += [f"{path}: intents: {intent}: data {n}" for n in range(1, len(blocks) + 1)]
        # as HassIL merges a language's files: a list written in two files is one, its values joined
        for name, spec in yaml_mapping(raw.get("lists"), f"{path}: lists").items():
            merged["lists"][name] = _joined(merged["lists"].get(name), spec)
            origins.lists[name] = f"{origins.lists[name]}, {path}" if name in origins.lists else str(path)
        merged["expansion_rules"].update(yaml_mapping(raw.get("expansion_rules"), f"{path}: expansion_rules"))
        merged["skip_words"] = list(dict.fromkeys([*merged.get("skip_words", []), *_skip_words(raw, str(path))]))
    if not merged["intents"]:
        raise GrammarError(f"{folder}: no intents in its .yaml files")
    return hassil_to_grammar(merged, str(folder), folder.name, origins)


@dataclass(frozen=True)
class Origins:
    """Where a folder's parts were written, for its errors and notes: each intent's data blocks in
    order (`FILE: intents: X: data 2`), each list's file(s)."""

    blocks: dict[str, list[str]]
    lists: dict[str, str]


def _joined(old: Any, new: Any) -> Any:
    """`new` merged into `old` as HassIL merges its files: mappings key by key, lists one after the other,
    anything else replaced."""
    if isinstance(old, Mapping) and isinstance(new, Mapping):
        return {**old, **{key: _joined(old.get(key), value) for key, value in new.items()}}
    if isinstance(old, list) and isinstance(new, list):
        return [*old, *new]
    return new


def hassil_to_grammar(raw: Mapping[str, Any], source: str, name: str, origins: Origins | None = None) -> Grammar:
    rules = yaml_mapping(raw.get("expansion_rules"), f"{source}: expansion_rules")
    lists = {name: _rules_in_values(spec, rules, f"{source}: lists: {name}")
             for name, spec in yaml_mapping(raw.get("lists"), f"{source}: lists").items()}  # fmt: skip
    reading = _Reading(source, rules, lists, _skip_words(raw, source), origins)
    templates: list[Template] = []
    for intent, spec in yaml_mapping(raw.get("intents"), f"{source}: intents").items():
        for number, block in enumerate(_data_blocks(spec, f"{source}: intents: {intent}"), 1):
            templates += reading.block(str(intent), number, block)
    if not templates:
        if reading.left_out["wildcard"]:
            raise GrammarError(f"{source}: every sentence says a wildcard list ({', '.join(reading.left_out['wildcard'])}"
                               f"), which says anything: give it values:")  # fmt: skip
        raise GrammarError(f"{source}: no sentences")
    notes = reading.notes + _unsaid_notes(source, reading.left_out, reading.cut)
    said = {t.intent for t in templates}
    if gone := [str(intent) for intent in yaml_mapping(raw.get("intents"), source) if str(intent) not in said]:
        notes.append(f"{source}: no sentence of {', '.join(gone)} is left, so no command says "
                     f"{'them' if len(gone) > 1 else 'it'}")  # fmt: skip
    return Grammar(name, templates, reading.slots, notes=notes)


@dataclass
class _Reading:
    """One file's (or folder's) lists, rules and skip words, and what reading its data blocks has made: the
    slots, the notes, and the sentences left out, or cut to their other choices, for a list they cannot say
    (why: "wildcard", or "unfit": no value fits the context -> list -> sentences)."""

    source: str
    rules: Mapping[str, Any]
    lists: Mapping[str, Any]
    skip: list[Any]
    origins: Origins | None
    slots: dict[str, Slot] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    left_out: dict[str, dict[str, int]] = field(default_factory=lambda: {"wildcard": {}, "unfit": {}})
    cut: dict[str, dict[str, int]] = field(default_factory=lambda: {"wildcard": {}, "unfit": {}})

    def block(self, intent: str, number: int, block: Any) -> list[Template]:
        """The templates of an intent's data block `number`."""
        where = self.origins.blocks[intent][number - 1] if self.origins else f"{self.source}: intents: {intent}: data {number}"
        if not isinstance(block, Mapping) or not isinstance(block.get("sentences"), list):
            raise GrammarError(f"{where}: expected sentences: a list of templates")
        if unknown := [str(key) for key in block if key not in BLOCK_KEYS]:
            self.notes.append(f"{where}: {', '.join(unknown)}: not a key of a HassIL data block "
                              f"({', '.join(BLOCK_KEYS)}): ignored")  # fmt: skip
        rules = {**self.rules, **yaml_mapping(block.get("expansion_rules"), f"{where}: expansion_rules")}
        # the block's own lists (HassIL's data-block `lists:`) before the file's, each a slot of its own
        own_lists = {name: _rules_in_values(spec, rules, f"{where}: lists: {name}")
                     for name, spec in yaml_mapping(block.get("lists"), f"{where}: lists").items()}  # fmt: skip
        local = dict.fromkeys(own_lists, re.sub(r"[\s{}()\[\]|@]", "_", f"{intent}-{number}"))
        requires = yaml_mapping(block.get("requires_context"), f"{where}: requires_context")
        context = Context.of(requires, yaml_mapping(block.get("excludes_context"), f"{where}: excludes_context"))
        own = _reported_slots(block.get("slots"), where, self.notes)
        fixed = fixed_slots({**copied_slots(requires), **own} if isinstance(own, Mapping) else own, where)
        templates = []
        for sentence in block["sentences"]:
            try:
                named = lists_named(seqx_text(str(sentence), rules, where), {**self.lists, **own_lists}, self.slots,
                                    where, context, local)  # fmt: skip
            except GrammarError as e:  # a list's own fault: name the file (or block) that wrote it
                listed = re.match(r"lists: ([^:]+):", str(e))
                if not listed:
                    raise
                file = self.origins.lists.get(listed[1], self.source) if self.origins else self.source
                raise GrammarError(f"{where if listed[1] in own_lists else file}: {e}") from None
            if unsaid := unsaid_lists(expr := parse_template(named, f"{where}: '{sentence}'")):
                kept = without_unsaid(expr)
                for why, list_name in unsaid[:1] if isinstance(kept, Gone) else unsaid:
                    tally = (self.left_out if isinstance(kept, Gone) else self.cut)[why]
                    tally[list_name] = tally.get(list_name, 0) + 1
                if isinstance(kept, Gone):
                    continue
                named = render(kept)
            for said, weight in _with_skip_words(named, self.skip):
                templates.append(Template(intent, said, parse_template(said, f"{where}: '{sentence}'"), weight, fixed))
        return templates


_WILD = "a wildcard list (anything a person says); give it values: to keep"


def _unsaid_notes(source: str, left_out: Mapping[str, Mapping[str, int]], cut: Mapping[str, Mapping[str, int]]) -> list[str]:
    """What the notes say of the sentences left out, or kept without their choices, for a list they cannot say."""

    def sentences(n: int) -> str:
        return f"{n} sentence{'s' if n > 1 else ''}"

    def unfit(name: str, n: int) -> str:
        return f"no value of {{{name}}} has the context {'they require' if n > 1 else 'it requires'} (requires_context; a value's context:)"  # fmt: skip

    notes = [f"{source}: {sentences(n)} left out for saying {{{name}}}, {_WILD} {'them' if n > 1 else 'it'}"
             for name, n in left_out["wildcard"].items()]  # fmt: skip
    notes += [f"{source}: {sentences(n)} left out: {unfit(name, n)}" for name, n in left_out["unfit"].items()]
    notes += [f"{source}: {sentences(n)} kept without the choices that say {{{name}}}, {_WILD} them"
              for name, n in cut["wildcard"].items()]  # fmt: skip
    notes += [f"{source}: {sentences(n)} kept without the choices that say {{{name}}}: {unfit(name, n)}"
              for name, n in cut["unfit"].items()]  # fmt: skip
    return notes


def _rules_in_values(spec: Any, rules: Mapping[str, Any], where: str) -> Any:
    """A list whose values' `in` refer to expansion rules (`in: "[<the>] lamp"`) with the rules expanded, as HassIL
    matches them (they were the words "<the> lamp")."""
    values = spec.get("values") if isinstance(spec, Mapping) else None
    if not isinstance(values, list):
        return spec

    def expanded(said: Any) -> Any:
        return seqx_text(said, rules, where) if isinstance(said, str) and RULE.search(said) else said

    values = [{**v, "in": expanded(v.get("in"))} if isinstance(v, Mapping) else expanded(v) for v in values]
    return {**spec, "values": values}


def _reported_slots(raw: Any, where: str, notes: list[str]) -> Any:
    """A block's fixed `slots:` but those given as a mapping (`alternate_state: {idle: not playing}`), which
    only Home Assistant's response template reads: not a value a command reports, so left out, and said."""
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        return raw  # fixed_slots names what is wrong
    for slot in [slot for slot, value in raw.items() if isinstance(value, Mapping)]:
        notes.append(f"{where}: slots: {slot} is a mapping (for Home Assistant's response), not a value a "
                     f"command reports: left out of its slots")  # fmt: skip
    return {slot: value for slot, value in raw.items() if not isinstance(value, Mapping)}


def _data_blocks(spec: Any, where: str) -> list[Any]:
    blocks = spec.get("data") if isinstance(spec, Mapping) else None
    if not isinstance(blocks, list):
        raise GrammarError(f"{where}: expected data: a list of blocks with sentences")
    return blocks


def _skip_words(raw: Mapping[str, Any], source: str) -> list[Any]:
    skip = raw.get("skip_words") or []
    if not isinstance(skip, list) or any(TEMPLATE_SYNTAX.search(str(w)) or not str(w).strip() for w in skip):
        raise GrammarError(f"{source}: skip_words: expected a list of words or phrases")
    return skip


SKIP_FIRST_WEIGHT = 0.2  # a sentence said after a skip word ("please ...", "can you ..."), against 1 without
SKIP_LAST_WEIGHT = 0.1  # ... and with one after it ("... please")


def _with_skip_words(text: str, skip: list[Any]) -> list[tuple[str, float]]:
    """The sentence, and (with `skip_words`) the sentence after one or two ("can you please ...") and
    before one, as templates of lower weight: Home Assistant drops "please" and "can you" anywhere; a
    person puts them first or last. Most of the corpus still says the sentence alone."""
    if not skip:
        return [(text, 1.0)]
    words = " | ".join(" ".join(str(w).split()) for w in skip)
    first = f"({words}) [{words}] ({text}) [{words}]"
    return [(text, 1.0), (first, SKIP_FIRST_WEIGHT), (f"({text}) ({words})", SKIP_LAST_WEIGHT)]
