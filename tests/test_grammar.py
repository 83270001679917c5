"""Command grammars: the template syntax and its errors, counts against brute force, sampling,
parsing, hash hold-out, JSGF and phrase-list import, the recipe forms and `seqx grammar`."""

from __future__ import annotations

import importlib
import json
import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from conftest import REPO, enumerate_sentences, hassil_file
from typer.testing import CliRunner

from seqx.data.synth import corpus_grammar
from seqx.grammar import Grammar, GrammarError, grammar_from_dict, grammar_from_file, is_heldout, load_grammar
from seqx.grammar.heldout import draw, heldout_score, kept_words
from seqx.grammar.jsgf import grammar_to_jsgf, jsgf_to_grammar
from seqx.grammar.syntax import Alt, Opt, Seq, SlotRef, Word, parse_template, render
from seqx.recipe import RecipeError, TokenizerSettings, load_recipe
from seqx.tokenize.text import normalize_text

CARDS = Path("/usr/share/pocketsphinx/test/data/cards/cards.gram")
GOFORWARD = Path("/usr/share/pocketsphinx/test/data/goforward.gram")

SMALL = {
    "intents": {
        "lights": ["(turn | switch) (on | off) [the] {room} lights", "{room} lights (on | off)"],
        "heat": {"templates": ["set [the] temperature to {degrees} [degrees]"], "weight": 2},
        "stop": ["stop", "stop [it] now"],
    },
    "slots": {
        "room": ["kitchen", "living room", "bath room"],
        "degrees": [{"twenty one": 21}, "nineteen:19", "eighteen"],
    },
}


# ------------------------------------------------------------------ syntax


@pytest.mark.parametrize(
    ("text", "expr"),
    [
        ("stop", Word("stop")),
        ("stop now", Seq((Word("stop"), Word("now")))),
        ("a | b c", Alt((Word("a"), Seq((Word("b"), Word("c")))))),
        ("(a | b) c", Seq((Alt((Word("a"), Word("b"))), Word("c")))),
        ("[the] x", Seq((Opt(Word("the")), Word("x")))),
        ("[a | b]", Opt(Alt((Word("a"), Word("b"))))),
        ("open {app}", Seq((Word("open"), SlotRef("app")))),
        ("((a))", Word("a")),
    ],
)
def test_each_construct_parses_and_renders_back(text: str, expr: object) -> None:
    assert parse_template(text) == expr
    assert parse_template(render(expr)) == expr


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("(open the", "unbalanced '(': no closing ')'"),
        ("open the)", "unbalanced ')': nothing opened it"),
        ("[open the", "unbalanced '[': no closing ']'"),
        ("(open ] the", "unbalanced brackets: ']' where ')' closes"),
        ("open {app", "unbalanced '{'"),
        ("(a | )", "empty alternative"),
        ("a | | b", "empty alternative"),
        ("()", "empty alternative"),
        ("[]", "empty optional '[]'"),
        ("", "empty template"),
        ("open {bad name}", "bad slot name"),
    ],
)
def test_each_syntax_error_is_one_line_naming_where(text: str, problem: str) -> None:
    with pytest.raises(GrammarError) as err:
        parse_template(text, "r.yaml:7: intent x")
    assert str(err.value).startswith(f"r.yaml:7: intent x: {problem}") and "\n" not in str(err.value)


def test_unknown_slot_names_file_line_intent_and_slot(tmp_path: Path) -> None:
    path = tmp_path / "g.yaml"
    path.write_text("intents:\n  go:\n    - stop\n    - open the {thing}\nslots:\n  app: [mail]\n")
    with pytest.raises(GrammarError) as err:
        grammar_from_file(path)
    assert str(err.value) == f"{path}:4: intent go: unknown slot '{{thing}}' in 'open the {{thing}}'"


def test_recipe_grammar_error_names_recipe_line_and_exits_2(tmp_path: Path) -> None:
    path = tmp_path / "r.yaml"
    path.write_text("data:\n  synth:\n    grammar:\n      intents:\n        go: ['(open | close the mail']\n")
    with pytest.raises(RecipeError, match=rf"^{path}:5: intent go: unbalanced '\(': no closing '\)'"):
        load_recipe(path)
    run = subprocess.run([sys.executable, "-m", "seqx", "grammar", str(path)], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(REPO), "COLUMNS": "400"}, timeout=120)
    assert run.returncode == 2 and "unbalanced" in run.stderr and len(run.stderr.strip().splitlines()) == 1


# ------------------------------------------------------------------ counting


def _small() -> Grammar:
    return grammar_from_dict(SMALL, name="small")


@pytest.mark.parametrize(
    "intents",
    [
        SMALL["intents"],
        {"a": ["[the] [the] x"]},  # ambiguous: "the x" two ways, counted once
        {"a": ["x [y]", "x y"], "b": ["(x | x) [y | y z]"]},  # templates overlapping each other
        {"a": ["{room} [{room}]"]},
    ],
)
def test_count_equals_brute_force_enumeration(intents: dict) -> None:
    grammar = grammar_from_dict({"intents": intents, "slots": SMALL["slots"]})
    sentences = enumerate_sentences(grammar)
    assert grammar.count() == len(sentences)
    assert all(grammar.accepts(s) for s in sentences)
    vocabulary = grammar.vocabulary()
    assert set(vocabulary) == {w for s in sentences for w in s.split()}
    for near_miss in ("", "the", "turn on", "stop it", "kitchen lights"):
        assert grammar.accepts(near_miss) == (near_miss in sentences)


def test_default_recipe_grammar_is_the_332_commands_with_named_intents() -> None:
    grammar = load_grammar(load_recipe(REPO / "recipes/commands.yaml"))
    assert grammar.count() == len(enumerate_sentences(grammar)) == 332
    assert {"open_app", "find", "check_status", "set_timer", "set_level", "media", "system"} <= set(grammar.intents)
    parse = grammar.parse("set a timer for twenty five minutes")
    assert (parse.intent, parse.slots) == ("set_timer", {"number": 25})
    assert grammar.parse("shut down the computer").slots == {"system_action": "shutdown"}
    assert grammar.parse("open the pod bay doors") is None


def test_smarthome_has_more_than_1e8_sentences_counted_not_listed() -> None:
    grammar = load_grammar(load_recipe(REPO / "recipes/smarthome.yaml"))
    assert grammar.count() >= 10**8
    assert grammar.word_dfa().num_states < 1000  # the description's size, not the sentence count
    assert {"lights", "thermostat", "timer", "media"} <= set(grammar.intents)
    assert grammar.accepts("please turn off the kitchen lights in ten minutes")


def test_old_templates_and_slots_keep_working_one_intent_per_template() -> None:
    recipe = load_recipe(REPO / "recipes/commands.yaml", ["data.synth.grammar=null",
                         "data.synth.templates=['open the {app}', 'check the battery']",
                         "data.synth.slots={app: [terminal, music player]}"])
    grammar = load_grammar(recipe)
    assert list(grammar.intents) == ["open_the_app", "check_the_battery"]
    assert grammar.count() == 3
    assert grammar.parse("open the music player").slots == {"app": "music player"}


# ------------------------------------------------------------------ sampling and parsing


def test_sampling_covers_every_template_and_value_at_its_weight() -> None:
    grammar = _small()
    rng = np.random.default_rng(0)
    parses = [grammar.sample(rng) for _ in range(4000)]
    templates = Counter(p.template for p in parses)
    assert set(templates) == {t.text for t in grammar.templates}
    # weights 1, 1, 2 (the heat intent), 1, 1: heat is a third of the draws
    assert templates["set [the] temperature to {degrees} [degrees]"] == pytest.approx(4000 / 3, rel=0.08)
    rooms = Counter(p.slots["room"] for p in parses if "room" in p.slots)
    assert set(rooms) == {"kitchen", "living room", "bath room"}
    assert max(rooms.values()) / min(rooms.values()) < 1.2  # uniform over values
    assert {p.slots.get("degrees") for p in parses} >= {21, 19, "eighteen"}  # outputs, not words
    again = [p.text for p in (grammar.sample(np.random.default_rng(0)) for _ in range(1))]
    assert again == [parses[0].text]  # seeded: the same draw


def test_parse_of_every_sampled_sentence_is_the_path_it_was_drawn_from() -> None:
    for grammar in (_small(), load_grammar(load_recipe(REPO / "recipes/commands.yaml"))):
        rng = np.random.default_rng(1)
        for _ in range(1500):
            drawn = grammar.sample(rng)
            assert grammar.accepts(drawn.text)
            parsed = grammar.parse(drawn.text)
            assert parsed is not None and (parsed.intent, parsed.slots, parsed.template) == (
                drawn.intent, drawn.slots, drawn.template)


def test_word_balance_hears_every_number_word_about_as_often() -> None:
    """Uniform value draws say "forty" ten times as often as "fourteen"; word-balanced draws
    bring every number word within 2x of the others, still say every value, leave a slot of
    distinct one-word values uniform, and at 0 draw exactly what `sample` drew before."""
    grammar = load_grammar(load_recipe(REPO / "recipes/commands.yaml"))

    def said(balance: float) -> Counter:
        rng = np.random.default_rng(3)
        parses = [grammar.sample(rng, balance) for _ in range(6000)]
        return Counter(str(p.slots["number"]) for p in parses if "number" in p.slots), Counter(
            w for p in parses if "number" in p.slots for w in p.text.split()[-2:] if w not in ("for", "to", "minutes"))

    (plain_values, plain_words), (values, words) = said(0.0), said(1.0)
    assert plain_words["forty"] > 6 * plain_words["fourteen"]
    tens, teens = ("twenty", "thirty", "forty", "fifty"), ("thirteen", "fourteen", "fifteen", "sixteen", "seventeen")
    assert max(words[w] for w in tens + teens) < 2 * min(words[w] for w in tens + teens)
    assert len(values) == 60 == len(plain_values)
    assert np.allclose(grammar.word_balanced_weights("app"), 1 / 10)  # one distinct word (or two) each
    rng, again = np.random.default_rng(5), np.random.default_rng(5)
    assert [grammar.sample(rng).text for _ in range(50)] == [grammar.sample(again, 0.0).text for _ in range(50)]


def test_to_dict_round_trips() -> None:
    grammar = _small()
    again = Grammar.from_dict(json.loads(json.dumps(grammar.to_dict())))
    assert enumerate_sentences(again) == enumerate_sentences(grammar)
    assert [(t.intent, t.weight) for t in again.templates] == [(t.intent, t.weight) for t in grammar.templates]
    assert again.parse("set temperature to twenty one").slots == {"degrees": 21}


# ------------------------------------------------------------------ hold-out


def _refs(expr: object) -> list[SlotRef]:
    if isinstance(expr, SlotRef):
        return [expr]
    children = getattr(expr, "items", None) or getattr(expr, "options", None) or [getattr(expr, "item", None)]
    return [ref for child in children if child is not None for ref in _refs(child)]


def test_letters_written_against_a_slot_are_one_word_with_each_value(tmp_path: Path) -> None:
    """ "{drink}s" was "latte s" (said "latte ess"): a slot and the letters against it are one word with
    each value ("lattes", "flat whites"), which answers as the slot; "{n}th" is "5th", said "fifth"."""
    grammar = grammar_from_dict({"intents": {"order": ["can I get {n} {drink}s", "the {n}th {drink}", "call {p}'s phone"]},
                                 "slots": {"drink": ["latte", "flat white"], "n": ["2", "5"], "p": ["mary ann"]}})  # fmt: skip
    rng = np.random.default_rng(0)
    said = {grammar.sample(rng).text for _ in range(200)}
    assert {"can I get 2 lattes", "can I get 5 flat whites", "call mary ann's phone"} <= said
    assert not any(" s " in text or text.endswith(" s") for text in said)
    assert grammar.parse("can I get 2 flat whites").slots == {"n": "2", "drink": "flat white"}
    spoken = grammar.spoken(lambda text: normalize_text(text, TokenizerSettings()))
    assert spoken.parse("the fifth latte").slots == {"n": "5", "drink": "latte"}
    assert spoken.parse("call mary ann's phone").slots == {"p": "mary ann"}
    # stored as written (a bundle keeps the grammar as decoding spells it) and read back the same
    for stored in (grammar, spoken):
        again = Grammar.from_dict(json.loads(stored.to_json()))
        assert again.to_dict() == stored.to_dict() and again.count() == stored.count() == 9
    assert render(parse_template("[the] {x}s please")) == "[the] {x}s please"
    # letters against brackets, as HassIL (Home Assistant) writes them: one word with each choice
    for text, sentences in [("light[s] on", {"light on", "lights on"}), ("turn(s | ed) off", {"turns off", "turned off"}),
                            ("(latte | mocha)s", {"lattes", "mochas"}), ("[un]lock it", {"lock it", "unlock it"}),
                            ("a (b c | d)s", {"a b cs", "a ds"})]:  # fmt: skip
        assert set(enumerate_sentences(Grammar.build({"x": [text]}))) == sentences, text
    plural = Grammar.build({"order": ["a {drink}[s]"]}, {"drink": ["latte"]})
    assert plural.parse("a lattes").slots == plural.parse("a latte").slots == {"drink": "latte"}
    # two slots together, or a slot and punctuation, stay apart as they always were: "7:30" is "seven thirty"
    for text in ("{hour}:{minute}", "{a}{b}", "a {drink}, please"):
        assert all(not ref.before and not ref.after for ref in _refs(parse_template(text))), text
    with pytest.raises(GrammarError, match=re.escape("unknown slot '{drnk}' in 'two {drnk}s'")):
        Grammar.build({"order": ["two {drnk}s"]}, {"drink": ["latte"]})


HASSIL = """language: "en"
intents:
  HassTurnOn:
    data:
      - sentences:
          - "<turn> on [the] {name} [light[s]]"
          - "<turn> on [all] [the] light[s] in [the] {area:room}"
        slots: {domain: light}
  HassLightSet:
    data:
      - sentences: ["set [the] {area:room} brightness to {brightness}[ percent]", "<turn> [the] {name} {color}"]
        expansion_rules: {turn: "(make | set)"}
      - sentences: ["[[the] brightness of] {name} to [the] {level:brightness}"]
lists:
  name: {values: ["lamp", {in: "ceiling light", out: light.ceiling}]}
  area: {values: [kitchen, living room]}
  color: {values: [red, warm white]}
  brightness: {range: {type: number, from: 0, to: 100, step: 50}}
  level: {values: [{in: "(max | maximum)", out: 100}, {in: "min[imum]", out: 0}]}
expansion_rules: {turn: "(turn | switch)"}
skip_words: [please]
"""


def test_home_assistant_intent_sentences_read_as_written(tmp_path: Path) -> None:
    """HassIL's YAML (Home Assistant's Assist): lists with in/out values and ranges, `{list:slot}`, expansion
    rules (an intent's own before the file's), `light[s]`; what Home Assistant fills at run time is asked for."""
    path = tmp_path / "lights.yaml"
    path.write_text(HASSIL)
    grammar = grammar_from_file(path)
    assert set(grammar.intents) == {"HassTurnOn", "HassLightSet"}
    # the block's fixed `slots:` come with what its sentences say, as Home Assistant answers
    assert grammar.parse("switch on ceiling light lights").slots == {"name": "light.ceiling", "domain": "light"}
    assert grammar.parse("turn on all lights in the living room").slots == {"room": "living room", "domain": "light"}
    assert grammar.parse("set kitchen brightness to 50 percent").slots == {"room": "kitchen", "brightness": 50}
    assert grammar.parse("make the lamp warm white").intent == "HassLightSet"
    assert grammar.parse("turn the lamp red") is None  # the intent's own <turn> is "(make | set)"
    assert grammar.parse("the brightness of lamp to the maximum").slots == {"name": "lamp", "brightness": 100}
    assert grammar.parse("lamp to min").slots == {"name": "lamp", "brightness": 0}  # a value's template: each way
    # skip_words ("please") before or after any sentence: each said alone, after one, around, before one
    assert grammar.parse("please switch on the lamp light please").intent == grammar.parse("turn on lamp please").intent
    assert grammar.parse("please please turn on the lamp").intent == "HassTurnOn"  # two before ("can you please")
    # each sentence alone, after one or two skip words, with one after: 6 ways with one skip word
    assert grammar.count() == len(enumerate_sentences(grammar)) == 6 * (24 + 64 + 24 + 16 + 3 * 2 * 2 * 4)
    stored = Grammar.from_dict(json.loads(grammar.to_json()))  # as a bundle stores it
    assert stored.count() == grammar.count()
    assert stored.parse("turn on the lamp").slots == {"name": "lamp", "domain": "light"}
    # a folder of them, as the intents repo keeps a language: _common.yaml's lists and rules, a file an intent
    import yaml

    raw = yaml.safe_load(HASSIL)
    folder = tmp_path / "en"
    folder.mkdir()
    common = ("language", "lists", "expansion_rules", "skip_words")
    (folder / "_common.yaml").write_text(yaml.safe_dump({k: raw[k] for k in common}))
    for intent, spec in raw["intents"].items():
        (folder / f"light_{intent}.yaml").write_text(yaml.safe_dump({"language": "en", "intents": {intent: spec}}))
    assert grammar_from_file(folder).count() == grammar.count()
    # as the home-assistant-intents package ships a language, merged into one JSON file: alone, or in a folder
    # beside a file of one's own lists (a .json grammar was Vosk's phrase list only before 2026-12-03)
    merged = tmp_path / "json" / "en.json"
    merged.parent.mkdir()
    merged.write_text(json.dumps({k: v for k, v in raw.items() if k != "lists"} | {"responses": {"errors": {}}}))
    (merged.parent / "_my_lists.yaml").write_text(yaml.safe_dump({"language": "en", "lists": raw["lists"]}))
    assert grammar_from_file(merged.parent).count() == grammar.count()
    merged.write_text(json.dumps(raw))
    assert grammar_from_file(merged).count() == grammar.count()
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(GrammarError, match="no .yaml or .json files in it"):
        grammar_from_file(empty)
    # a wildcard list (a timer's name, a shopping list's item: anything a person says): its sentences are
    # left out and said so, the file's others still load (the whole file was an error before 2026-12-02)
    path.write_text(HASSIL.replace("brightness: {range:", "brightness: {wildcard: true, range:"))
    wild = grammar_from_file(path)
    assert wild.notes == [f"{path}: 1 sentence left out for saying {{brightness}}, a wildcard list (anything a "
                          "person says); give it values: to keep it"]  # fmt: skip
    assert wild.count() == grammar.count() - 6 * 24 and "brightness" not in wild.slots
    shown = CliRunner().invoke(_app(), ["grammar", str(path), "--show"])
    assert shown.exit_code == 0 and "1 sentence left out for saying {brightness}" in " ".join(shown.output.split())
    path.write_text(HASSIL.replace("brightness: {range: {type: number, from: 0, to: 100, step: 50}}",
                                   "brightness: {wildcard: true, values: [10, 20]}"))  # values given: kept
    assert grammar_from_file(path).parse("set kitchen brightness to 20 percent").slots == {"room": "kitchen", "brightness": 20}
    only_wild = "language: en\nintents: {A: {data: [{sentences: ['add {item}']}]}}\nlists: {item: {wildcard: true}}\n"
    path.write_text(only_wild)
    with pytest.raises(GrammarError, match=re.escape("every sentence says a wildcard list (item)")):
        grammar_from_file(path)
    for change, problem in [("  area: {values: [kitchen, living room]}\n", "list {area} has no values here"),
                            ('expansion_rules: {turn: "(turn | switch)"}', "unknown expansion rule <turn>"),
                            ('expansion_rules: {turn: "(turn | switch)"}', "refer to each other in a circle")]:  # fmt: skip
        if "circle" in problem:
            broken = HASSIL.replace(change, 'expansion_rules: {turn: "(<turn> | switch)"}')
        else:
            broken = HASSIL.replace(change, "")
        path.write_text(broken)
        with pytest.raises(GrammarError, match=re.escape(problem)):
            grammar_from_file(path)


def test_home_assistant_ranges_with_fractions_and_a_multiplier(tmp_path: Path) -> None:
    """HassIL's `fractions: halves` ("twenty point five", 20.5) and `multiplier` (said 50, reported 0.5);
    its spacing: `[ ]` and `[and]{list}`."""
    path = tmp_path / "climate.yaml"
    path.write_text("""language: en
intents:
  HassClimateSetTemperature:
    data: [{sentences: ["set [the] temperature to {temperature} degrees"]}]
  HassLightSet:
    data: [{sentences: ["brightness {level}[ ][%|percent]"]}]
  HassStartTimer:
    data: [{sentences: ["timer for {temperature:hours} hour[s] [[and]{temperature:minutes} minute[s]]"]}]
lists:
  temperature: {range: {type: temperature, from: 18, to: 22, fractions: halves}}
  level: {range: {type: percentage, from: 0, to: 100, step: 50, multiplier: 0.01}}
""")
    spoken = grammar_from_file(path).spoken(lambda text: normalize_text(text, TokenizerSettings()))
    assert spoken.parse("set the temperature to twenty point five degrees").slots == {"temperature": 20.5}
    assert spoken.parse("set temperature to twenty two degrees").slots == {"temperature": 22}
    assert not spoken.accepts("set temperature to twenty two point five degrees")  # past `to`
    assert spoken.parse("brightness fifty percent").slots == {"level": 0.5}
    # as Home Assistant's _common.yaml writes them: `[ ]` an optional space, `[and]{minutes}` two words
    assert spoken.accepts("brightness fifty") and spoken.parse("timer for twenty hours and eighteen minutes").slots == {
        "hours": 20, "minutes": 18}  # fmt: skip
    path.write_text(path.read_text().replace("halves", "quarters"))
    with pytest.raises(GrammarError, match="fractions: expected halves or tenths, got 'quarters'"):
        grammar_from_file(path)


def test_home_assistant_context_picks_the_names_a_sentence_may_say(tmp_path: Path) -> None:
    """`requires_context: {domain: light}` and `excludes_context` against each list value's `context:`, as
    Home Assistant matches an entity's domain: "set the speaker to 8" is the volume, never a light's
    brightness; a door is not turned on; a value without a context fits anywhere. They were ignored
    before 2026-12-02, and every name was said in every intent's sentences."""
    path = tmp_path / "ha.yaml"
    path.write_text("""language: en
intents:
  HassLightSet:
    data: [{sentences: ["set [the] {name} to {level}"], requires_context: {domain: light}}]
  HassSetVolume:
    data: [{sentences: ["set [the] {name} [volume] to {level}"], requires_context: {domain: [media_player, tv]}}]
  HassTurnOn:
    data: [{sentences: ["turn on [the] ({name} | {appliance})"], excludes_context: {domain: [cover, lock]}}]
  HassLock:
    data: [{sentences: ["lock [the] {name}"], requires_context: {domain: lock}}]
lists:
  level: {range: {from: 1, to: 10}}
  name:
    values:
      - {in: desk lamp, out: light.desk, context: {domain: light}}
      - {in: speaker, context: {domain: media_player}}
      - {in: front door, context: {domain: cover}}
  appliance: {values: [heater]}
""")
    grammar = grammar_from_file(path)
    assert grammar.parse("set the desk lamp to 8").intent == "HassLightSet"
    assert grammar.parse("set the speaker to 8").intent == "HassSetVolume"
    assert grammar.parse("set the speaker to 8").slots == {"name": "speaker", "level": 8}  # reported as `name`
    assert not grammar.accepts("set desk lamp volume to 8") and not grammar.accepts("turn on front door")
    assert grammar.accepts("turn on heater")  # a value without a context fits any sentence
    assert grammar.parse("turn on the desk lamp").slots == {"name": "light.desk"}
    assert grammar.notes == [f"{path}: 1 sentence left out: no value of {{name}} has the context it requires "
                             "(requires_context; a value's context:)",
                             f"{path}: no sentence of HassLock is left, so no command says it"]  # fmt: skip
    assert summarize_shared(grammar) == []


def test_home_assistant_context_given_as_a_value_and_a_slot(tmp_path: Path) -> None:
    """`requires_context: {domain: {value: light, slot: true}}` asks for its value, as HassIL reads it, and the
    slot it fills is reported (`slot: kind` names another; a list of values is no one value to report);
    `excludes_context: {domain: {value: fan}}` likewise; `domain:` with nothing asks for nothing a name could
    tell apart. Before 2026-12-02 the mappings were ignored (every name said) and an empty `domain:` cut every
    name that has a domain."""
    path = tmp_path / "ha.yaml"
    path.write_text("""language: en
intents:
  HassLightSet:
    data: [{sentences: ["set [the] {name} to {level}"], requires_context: {domain: {value: light, slot: true}}}]
  HassTurnOn:
    data:
      - sentences: ["turn on [the] {name}"]
        requires_context: {domain: {value: [light, fan], slot: kind}}
        excludes_context: {domain: {value: fan}}
  HassGetState:
    data: [{sentences: ["is [the] {name} on"], requires_context: {domain: }}]
lists:
  level: {range: {from: 1, to: 10}}
  name:
    values:
      - {in: desk lamp, out: light.desk, context: {domain: light}}
      - {in: speaker, context: {domain: media_player}}
      - {in: fan, context: {domain: fan}}
""")
    grammar = grammar_from_file(path)
    assert grammar.parse("set the desk lamp to 8").slots == {"name": "light.desk", "level": 8, "domain": "light"}
    assert not grammar.accepts("set the speaker to 8")
    assert grammar.parse("turn on the desk lamp").slots == {"name": "light.desk"}
    assert not grammar.accepts("turn on the fan") and not grammar.accepts("turn on the speaker")
    assert grammar.accepts("is the speaker on") and grammar.accepts("is the fan on")


def summarize_shared(grammar: Grammar) -> list[list[str]]:
    from seqx.grammar.summary import summarize

    return summarize(grammar).shared


def test_home_assistant_permutations_say_their_items_in_every_order(tmp_path: Path) -> None:
    """HassIL's `(a; b)`: each order of the items ("the lamp turn on" as well as "turn on the lamp"); a
    sentence is a group, so `a; b` at its top is one too; groups inside first. They were read in the
    written order, with "on;" a word, before 2026-12-02."""
    path = tmp_path / "perm.yaml"
    path.write_text("""language: en
intents:
  HassTurnOn:
    data: [{sentences: ["(turn on; [the] {name}) [please]", "{name}; (switch | flip) (up; now)"]}]
lists:
  name: {values: [lamp, fan]}
""")
    grammar = grammar_from_file(path)
    for said, name in [("turn on the lamp", "lamp"), ("the lamp turn on please", "lamp"), ("fan turn on", "fan"),
                       ("flip now up fan", "fan"), ("switch up now lamp", "lamp"), ("lamp flip now up", "lamp")]:  # fmt: skip
        assert grammar.parse(said).slots == {"name": name}, said
    assert grammar.count() == 2 * 2 * 2 * 2 + 2 * (2 * 2) * 2  # orders x [the] x names x [please]; 2 orders x (2 x 2 orders) x names
    assert not grammar.accepts("turn the lamp on") and not grammar.accepts("now up flip fan")  # an item stays whole
    path.write_text(path.read_text().replace("(up; now)", "(a; b; c; d; e; f)"))
    with pytest.raises(GrammarError, match="a permutation of more than 5 items"):
        grammar_from_file(path)


def _ha_folder(tmp_path: Path, files: dict[str, str]) -> Path:
    folder = tmp_path / "en"
    folder.mkdir()
    for name, text in files.items():
        (folder / name).write_text(text)
    return folder


def test_home_assistant_folder_errors_name_the_file(tmp_path: Path) -> None:
    """In a folder (the intents repo's sentences/en/), a bad data block or list is named by its own file and
    its block's number there; it was the folder and the block's number across every file before 2026-12-02."""
    common = "language: en\nlists: {level: {range: {from: 1, to: 10}}}\n"
    good = "language: en\nintents: {HassTurnOn: {data: [{sentences: ['turn on {level}']}]}}\n"
    bad = "language: en\nintents: {HassTurnOn: {data: [{sentences: 'turn off'}]}}\n"
    folder = _ha_folder(tmp_path, {"_common.yaml": common, "a.yaml": good, "b.yaml": bad})
    with pytest.raises(GrammarError, match=re.escape(f"{folder / 'b.yaml'}: intents: HassTurnOn: data 1: expected")):
        grammar_from_file(folder)
    (folder / "b.yaml").unlink()
    # the intents repository's per-intent folders (HassTurnOn/name_only.yaml: `sentences:` of one intent) are
    # not HassIL's files: said so (it was "not Home Assistant's intent sentences")
    (folder / "HassTurnOn").mkdir()
    (folder / "HassTurnOn" / "name_only.yaml").write_text("language: en\nsentences: ['turn on {level}']\nresponse: default\n")
    with pytest.raises(GrammarError, match=re.escape(f"{folder / 'HassTurnOn' / 'name_only.yaml'}: one intent's sentences without")):
        grammar_from_file(folder)
    (folder / "HassTurnOn" / "name_only.yaml").unlink()
    (folder / "_common.yaml").write_text(common.replace("from: 1, to: 10", "from: 10, to: 1"))
    with pytest.raises(GrammarError, match=re.escape(f"{folder / '_common.yaml'}: lists: level: range: from 10 to 1")):
        grammar_from_file(folder)


def test_home_assistant_lists_in_two_files_are_one(tmp_path: Path) -> None:
    """A list written in two files of a folder is one list with the values of both, as HassIL merges a
    language's files (`_common.yaml`'s and one's own); the later file's replaced the other's before 2026-12-02."""
    folder = _ha_folder(tmp_path, {
        "_common.yaml": "language: en\nlists: {name: {values: [lamp]}}\n",
        "mine.yaml": "language: en\nlists: {name: {values: [{in: ceiling fan, out: fan.ceiling}]}}\n",
        "on.yaml": "language: en\nintents: {HassTurnOn: {data: [{sentences: ['turn on [the] {name}']}]}}\n",
    })  # fmt: skip
    grammar = grammar_from_file(folder)
    assert grammar.parse("turn on the lamp").slots == {"name": "lamp"}
    assert grammar.parse("turn on the ceiling fan").slots == {"name": "fan.ceiling"}
    assert grammar.count() == 4


def test_home_assistant_an_intent_with_no_sentence_left_is_said(tmp_path: Path) -> None:
    """An intent every sentence of which is left out (HassBroadcast's `{message}` and the shopping list's
    `{shopping_list_item}` are wildcards) is named in the notes, not only the sentences counted: it went
    missing from the grammar unsaid before 2026-12-02."""
    path = tmp_path / "ha.yaml"
    path.write_text("""language: en
intents:
  HassBroadcast: {data: [{sentences: ["broadcast {message}"]}]}
  HassShoppingListAddItem: {data: [{sentences: ["add {item} to my list", "put {item} on my list"]}]}
  HassNevermind: {data: [{sentences: ["never mind"]}]}
lists: {message: {wildcard: true}, item: {wildcard: true}}
""")
    grammar = grammar_from_file(path)
    assert set(grammar.intents) == {"HassNevermind"}
    assert grammar.notes[-1] == f"{path}: no sentence of HassBroadcast, HassShoppingListAddItem is left, so no command says them"
    path.write_text(path.read_text().replace("item: {wildcard: true}", "item: {wildcard: true, values: [milk]}"))
    assert grammar_from_file(path).notes[-1] == f"{path}: no sentence of HassBroadcast is left, so no command says it"


def test_home_assistant_a_choice_that_says_nothing_here_is_left_out_alone(tmp_path: Path) -> None:
    """A sentence that says a list with nothing to say here (a wildcard given no values, or no value fits the
    block's context) only in some of its choices keeps the others, as HassIL still matches them: `({name} |
    {area} lights)` with no name to say is the area's; `[named {timer_name}]` goes. Such a sentence was left
    out whole before 2026-12-02."""
    path = tmp_path / "ha.yaml"
    path.write_text("""language: en
intents:
  HassTurnOff:
    data:
      - sentences: ["turn off [the] ({name} | {area} lights)"]
        requires_context: {domain: lock}
  HassStartTimer:
    data: [{sentences: ["start [a] timer [named {timer_name}]", "{timer_name} timer"]}]
lists:
  name: {values: [{in: desk lamp, context: {domain: light}}]}
  area: {values: [kitchen]}
  timer_name: {wildcard: true}
""")
    grammar = grammar_from_file(path)
    assert grammar.parse("turn off the kitchen lights").slots == {"area": "kitchen"}
    assert not grammar.accepts("turn off the desk lamp")
    assert grammar.accepts("start a timer") and grammar.accepts("start timer")
    assert grammar.count() == 2 + 2  # [the] kitchen lights; start [a] timer
    wild = "a wildcard list (anything a person says); give it values: to keep"
    assert grammar.notes == [
        f"{path}: 1 sentence left out for saying {{timer_name}}, {wild} it",
        f"{path}: 1 sentence kept without the choices that say {{timer_name}}, {wild} them",
        f"{path}: 1 sentence kept without the choices that say {{name}}: no value of {{name}} has the context it "
        "requires (requires_context; a value's context:)",
    ]


def test_home_assistant_rules_in_a_list_value(tmp_path: Path) -> None:
    """A list value written with an expansion rule (`in: "[<the>] lamp"`) says what the rule says, as HassIL
    matches it; it was the word "<the>" before 2026-12-02. A rule the file lacks is an error that says so."""
    path = tmp_path / "ha.yaml"
    path.write_text("""language: en
intents:
  HassTurnOn: {data: [{sentences: ["turn on {name}"]}]}
lists:
  name: {values: [{in: "[<the>] lamp", out: light.lamp}, fan]}
expansion_rules: {the: "(the | my)"}
""")
    grammar = grammar_from_file(path)
    for said in ("turn on the lamp", "turn on my lamp", "turn on lamp"):
        assert grammar.parse(said).slots == {"name": "light.lamp"}, said
    assert not grammar.accepts("turn on <the> lamp") and grammar.count() == 4
    path.write_text(path.read_text().replace("{the:", "{a:"))
    with pytest.raises(GrammarError, match=re.escape(f"{path}: lists: name: unknown expansion rule <the>")):
        grammar_from_file(path)


def test_home_assistant_a_data_blocks_own_lists(tmp_path: Path) -> None:
    """A data block's own `lists:` (HassIL reads them: lists of that block alone) say their values in its
    sentences only, before the file's list of the same name; a fault in one names the block. They were
    ignored before 2026-12-02: the file's list was said in their place."""
    path = tmp_path / "ha.yaml"
    path.write_text("""language: en
intents:
  HassLightSet:
    data:
      - sentences: ["set [the] lights to {level}"]
        lists: {level: {values: [{in: bright, out: 100}, {in: dim, out: 10}]}}
      - sentences: ["set [the] fan to {level}"]
lists:
  level: {range: {from: 1, to: 3}}
""")
    grammar = grammar_from_file(path)
    assert grammar.parse("set the lights to bright").slots == {"level": 100}
    assert grammar.parse("set the fan to 2").slots == {"level": 2}
    assert not grammar.accepts("set the lights to 2") and not grammar.accepts("set the fan to dim")
    path.write_text(path.read_text().replace("{in: dim, out: 10}", "{in: ' ', out: 10}"))
    with pytest.raises(GrammarError, match=re.escape(f"{path}: intents: HassLightSet: data 1: lists: level: a value says nothing")):
        grammar_from_file(path)


def test_home_assistant_a_data_block_key_not_known_is_said(tmp_path: Path) -> None:
    """A data block's key HassIL does not read (`requires_contxt`, a typo) is said in the notes, not silently
    dropped (every name was said, as if there were no context, before 2026-12-02); `response`, `metadata` and
    `required_keywords` are read and change nothing."""
    path = tmp_path / "ha.yaml"
    path.write_text("""language: en
intents:
  HassTurnOn:
    data:
      - sentences: ["turn on lamp"]
        requires_contxt: {domain: light}
        response: default
        metadata: {x: 1}
        required_keywords: [lamp]
""")
    assert grammar_from_file(path).notes == [
        f"{path}: intents: HassTurnOn: data 1: requires_contxt: not a key of a HassIL data block (sentences, slots, "
        "requires_context, excludes_context, expansion_rules, lists, response, metadata, required_keywords): ignored"
    ]


def test_home_assistant_a_group_with_an_empty_choice_is_optional(tmp_path: Path) -> None:
    """HassIL's `(on|)` and `light(s|)`: a group with an empty choice may be left out, as `[on]` and `light[s]`;
    it was an error ("empty alternative") before 2026-12-02."""
    path = tmp_path / "ha.yaml"
    path.write_text("""language: en
intents:
  HassTurnOn: {data: [{sentences: ["turn (on|) the light(s|) [in (the|) {area}]"]}]}
lists:
  area: {values: [kitchen]}
""")
    grammar = grammar_from_file(path)
    for said in ("turn on the lights", "turn the light", "turn the lights in kitchen", "turn on the light in the kitchen"):
        assert grammar.accepts(said), said
    assert grammar.count() == 2 * 2 * 3 and not grammar.accepts("turn the light s")


def test_home_assistant_slots_for_the_response_are_left_out_and_said(tmp_path: Path) -> None:
    """A block's fixed slot given as a mapping (`alternate_state: {idle: not playing}`, which Home Assistant's
    media_player_HassGetState gives its response) is no value a command reports: left out of the slots and
    said in the notes; the others are reported. The whole grammar was an error before 2026-12-02."""
    path = tmp_path / "ha.yaml"
    path.write_text("""language: en
intents:
  HassGetState:
    data:
      - sentences: ["is the speaker on"]
        slots: {domain: media_player, alternate_state: {"on": unknown, idle: not playing}}
""")
    grammar = grammar_from_file(path)
    assert grammar.parse("is the speaker on").slots == {"domain": "media_player"}
    assert grammar.notes == [f"{path}: intents: HassGetState: data 1: slots: alternate_state is a mapping (for Home "
                             "Assistant's response), not a value a command reports: left out of its slots"]  # fmt: skip


def test_home_assistant_spaces_inside_a_bracket_keep_words_apart(tmp_path: Path) -> None:
    """`{brightness}[([ ]%)| percent]` and `{temperature}[([ ]°)|( degree[s])]`, as Home Assistant's _common.yaml
    writes them: each choice begins with a space, so it is a word of its own ("50 percent", "20 degrees"), as
    HassIL reads it; seqx glued them to the number ("50percent") before 2026-12-02. `light[s]` stays one word."""
    path = tmp_path / "ha.yaml"
    path.write_text("""language: en
intents:
  HassLightSet:
    data: [{sentences: ["set [the] light[s] to {level}[([ ]%)| percent]", "set heat to {level}[([ ]°)|( degree[s])]"]}]
lists:
  level: {range: {from: 1, to: 100}}
""")
    grammar = grammar_from_file(path)
    for said in ("set the lights to 50 percent", "set lights to 50 %", "set light to 50", "set heat to 20 degrees",
                 "set heat to 20 degree", "set heat to 20 °"):  # fmt: skip
        assert grammar.parse(said).slots == {"level": int(said.split()[-2 if said[-1] != "0" else -1])}, said
    assert not grammar.accepts("set lights to 50percent") and not grammar.accepts("set heat to 20degrees")
    assert not grammar.accepts("set light s to 50")


def test_home_assistant_an_optional_space_in_a_list_value(tmp_path: Path) -> None:
    """_common.yaml's `color_temperature_names` says `day[ ]light`: "day light", reported as written; the whole
    folder was an error ("empty optional") before 2026-12-03."""
    values = [{"in": "day[ ]light", "out": 6500}, {"in": "(cold|cool) white", "out": 4000}, "warm[ ]light"]
    grammar = grammar_from_file(hassil_file(tmp_path, {"HassLightSet": ["set [the] lights to {color_temperature}"]},
                                            {"color_temperature": {"values": values}}))
    assert grammar.parse("set the lights to day light").slots == {"color_temperature": 6500}
    assert grammar.parse("set lights to cool white").slots == {"color_temperature": 4000}
    assert grammar.parse("set lights to warm light").slots == {"color_temperature": "warm light"}  # no `out`: as said


def test_home_assistant_a_space_or_a_hyphen_is_words_apart(tmp_path: Path) -> None:
    """Home Assistant's timers write `{timer_minutes:minutes}( |-)minute[s]` ("5 minutes", "5-minutes"): one
    sound, read as words apart; it wrote the words "5minute" and "-minute" before 2026-12-03."""
    grammar = grammar_from_file(hassil_file(tmp_path, {"HassStartTimer": ["timer for {timer_minutes:minutes}( |-)minute[s]"]},
                                            {"timer_minutes": {"range": {"from": 1, "to": 3}}}))
    assert grammar.parse("timer for 2 minutes").slots == {"minutes": 2}
    assert sorted(grammar.vocabulary()) == ["1", "2", "3", "for", "minute", "minutes", "timer"]


def test_fixed_slots_are_reported_with_what_is_said(tmp_path: Path) -> None:
    """Slots a template reports without saying them: "the fans" and "the lights" in a room are one
    intent (Home Assistant's HassTurnOn) told apart by the domain its data block fixes; a slot said
    keeps what was said; seqx's own YAML says the same per intent or per template; drawn sentences
    carry them; a bundle's stored grammar keeps them; a fault is named."""
    import yaml

    path = tmp_path / "fans.yaml"
    path.write_text("""language: en
intents:
  HassTurnOn:
    data:
      - sentences: ["turn on [all] [the] fan[s] in [the] {area}"]
        slots: {domain: fan, name: all}
      - sentences: ["turn on [the] {name}"]
        slots: {name: everything, domain: switch}
lists:
  area: {values: [kitchen, hall]}
  name: {values: [lamp]}
""")
    grammar = grammar_from_file(path)
    assert grammar.parse("turn on all fans in the kitchen").slots == {"area": "kitchen", "domain": "fan", "name": "all"}
    assert grammar.parse("turn on the lamp").slots == {"name": "lamp", "domain": "switch"}
    drawn = [grammar.sample(np.random.default_rng(seed)) for seed in range(20)]
    assert all(d.slots.get("domain") == ("fan" if "fan" in d.text else "switch") for d in drawn)
    stored = Grammar.from_dict(json.loads(grammar.to_json()))
    assert stored.parse("turn on fans in hall") == grammar.parse("turn on fans in hall")
    from seqx.grammar.summary import summarize  # `seqx grammar --show` lists them

    assert summarize(grammar).fixed == {"domain": ["fan", "switch"], "name": ["all", "everything"]}
    # one intent saying a sentence with two sets of fixed slots: the first always answers it, so say so
    clash = {"intents": {"on": {"templates": ["turn on [the] fan", {"turn on the {name}": {"slots": {"domain": "x"}}}]}},
             "slots": {"name": ["fan", "lamp"]}}  # fmt: skip
    assert summarize(grammar_from_dict(clash)).shared == [["on {}", "on {domain=x}", "turn on the fan"]]
    assert summarize(grammar).shared == []
    from seqx.grammar.summary import shared_warning  # intents whose names hold spaces are still two intents

    assert shared_warning("Turn On", "Turn Off", "x").startswith("intents Turn On and Turn Off")
    assert shared_warning("on {}", "on {domain=x}", "x").endswith("(say it in one of them only)")
    seqx_form = {"intents": {"on": {"templates": ["lights on", {"fans on": {"slots": {"domain": "fan"}, "weight": 2}}],
                                    "slots": {"domain": "light", "level": 3}}}}  # fmt: skip
    path = tmp_path / "own.yaml"
    path.write_text(yaml.safe_dump(seqx_form))
    own = grammar_from_file(path)
    assert own.parse("lights on").slots == {"domain": "light", "level": 3}
    assert own.parse("fans on").slots == {"domain": "fan", "level": 3}  # the template's own before its intent's
    assert [t.weight for t in own.templates] == [1.0, 2.0]
    assert Grammar.from_dict(own.to_dict()).templates == own.templates
    # a list: any of them, as Home Assistant's `device_class: [window, blind]` means; a parse reports the list
    path.write_text(yaml.safe_dump({"intents": {"open": {"templates": ["open it"], "slots": {"class": ["window", "blind"]}}}}))
    assert grammar_from_file(path).parse("open it").slots == {"class": ["window", "blind"]}
    assert Grammar.from_dict(grammar_from_file(path).to_dict()).parse("open it").slots == {"class": ["window", "blind"]}
    from seqx.decode.result import command_text  # as transcribe and listen print it

    assert command_text("open", {"class": ["window", "blind"], "n": 2}) == "open {class=window|blind n=2}"
    for spec, problem in [({"templates": ["on"], "slots": {"domain": {"a": 1}}}, "slots: domain: expected a value"),
                          ({"templates": ["on"], "wieght": 2}, "wieght: unknown intent key"),
                          ({"templates": [{"on": {"slot": {"a": 1}}}]}, "slot: unknown template key"),
                          ({"templates": [{"on": "x"}]}, "a weight is a number, got 'x'")]:  # fmt: skip
        path.write_text(yaml.safe_dump({"intents": {"on": spec}}))
        with pytest.raises(GrammarError, match=re.escape(problem)):
            grammar_from_file(path)


RHINO = """context:
  expressions:
    turnLights:
      - "[switch, turn] $state:state (all) (the) [light, lights]"
    changeColor:
      - "@polite [change, set] (the) (light, lights) (to) $color:color"
      - "(please)[change, set] the $location:room lights to $color:color"
  slots:
    state: ["off", "on"]
    color: [blue, warm white]
    location: [kitchen, living room]
  macros:
    polite: ["please", "could you"]
"""


def test_a_picovoice_rhino_context_reads_as_written(tmp_path: Path) -> None:
    """Rhino's context YAML: `[a, b]` one of, `(a)` / `(a, b)` optional, `$type:name`, `@macro`."""
    path = tmp_path / "lights.yml"
    path.write_text(RHINO)
    grammar = grammar_from_file(path)
    assert grammar.parse("switch on all the lights").slots == {"state": "on"}
    assert grammar.parse("could you set the lights to warm white").slots == {"color": "warm white"}
    assert grammar.parse("please change the living room lights to blue").slots == {"room": "living room", "color": "blue"}
    assert grammar.parse("change the lights blue") is None  # a macro's phrase is said: "@polite" is not optional
    assert grammar.count() == len(enumerate_sentences(grammar)) == 2 * 2 * 2 * 2 * 2 + 2 * 2 * 2 * 3 * 2 * 2 + 2 * 2 * 2 * 2
    result = CliRunner().invoke(_app(), ["grammar", str(path), "--show"])  # a grammar, not a recipe
    assert result.exit_code == 0 and "changeColor" in result.output, result.output
    for change, problem in [("$state:state", "$mood:state"), ("@polite", "@kind")]:
        path.write_text(RHINO.replace(change, problem))
        with pytest.raises(GrammarError, match=re.escape("unknown " + ("slot type $mood" if "$" in problem else "macro @kind"))):
            grammar_from_file(path)


def test_hash_holdout_is_stable_and_near_the_share() -> None:
    grammar = load_grammar(load_recipe(REPO / "recipes/smarthome.yaml"))
    rng = np.random.default_rng(0)
    texts = {grammar.sample(rng).text for _ in range(5000)}
    held = [t for t in texts if is_heldout(t, 0.1, seed=0)]
    assert abs(len(held) / len(texts) - 0.1) < 0.015
    assert held == [t for t in texts if is_heldout(t, 0.1, seed=0)]  # the same answer every time
    assert heldout_score("check the battery", 3) == heldout_score("check  the battery", 3)  # spacing aside
    assert {t for t in texts if is_heldout(t, 0.1, seed=1)} != set(held)  # the seed picks another set
    assert not any(is_heldout(t, 0.0) for t in texts)
    drawn = draw(grammar, rng, 0.1, 0, heldout=True)
    assert drawn is not None and is_heldout(drawn.text, 0.1, 0)


def test_holdout_never_takes_every_sentence_of_a_word() -> None:
    """Seed 0 hashes "log out" (the one sentence with "out") and "show the history" into the
    hold-out; they stay in training, and the rest of the hold-out is the hash's."""
    grammar = load_grammar(load_recipe(REPO / "recipes/commands.yaml"))
    assert grammar.sentences_with("out", 10) == ["log out"]
    assert grammar.sentences_with("the", 10) is None  # more than the limit: not listed
    assert is_heldout("log out", 0.1, 0) and is_heldout("show the history", 0.1, 0)
    kept = kept_words(grammar, 0.1, 0)
    assert {"out", "history"} <= kept
    assert not is_heldout("log out", 0.1, 0, kept) and not is_heldout("show the history", 0.1, 0, kept)
    rng = np.random.default_rng(1)
    heard = {draw(grammar, rng, 0.1, 0, heldout=False, kept=kept).text for _ in range(4000)}
    assert {w for t in heard for w in t.split()} == set(grammar.vocabulary())
    held = {draw(grammar, rng, 0.1, 0, heldout=True, kept=kept).text for _ in range(300)}
    assert held and not held & heard and "log out" not in held
    assert kept_words(grammar, 0.0, 0) == frozenset()


# ------------------------------------------------------------------ JSGF and phrase lists


def test_pocketsphinx_cards_grammar_imports_and_counts() -> None:
    cards = grammar_from_file(CARDS)
    # card = rank [of] suit: 14*2*4 = 112; three cards, two, one, rank+card, rank+rank
    assert cards.count() == 112**3 + 112**2 + 112 + 14 * 112 + 14 * 14
    assert list(cards.intents) == ["cards"] and sorted(cards.slots) == ["rank", "suits"]
    assert cards.accepts("ace of spades two hearts") and not cards.accepts("ace of")
    assert cards.parse("queen of hearts").slots == {"rank": "queen", "suits": "hearts"}


@pytest.mark.parametrize("path", [GOFORWARD, None])
def test_jsgf_export_then_import_is_the_same_language(path: Path | None) -> None:
    grammar = grammar_from_file(path) if path else _small()
    again = jsgf_to_grammar(grammar_to_jsgf(grammar), source="<export>")
    assert enumerate_sentences(again) == enumerate_sentences(grammar)
    if path:
        assert enumerate_sentences(grammar) == {"go forward ten meters"} | {
            f"go {d} {n}{m}" for d in ("forward", "backward")
            for n in "one two three four five six seven eight nine ten".split() for m in ("", " meter", " meters")}


def test_exported_default_grammar_is_the_recipe_language() -> None:
    grammar = load_grammar(load_recipe(REPO / "recipes/commands.yaml"))
    assert enumerate_sentences(jsgf_to_grammar(grammar_to_jsgf(grammar))) == enumerate_sentences(grammar)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("public <a> = go <b>;", ":1: rule <a> uses <b>, which is never defined"),
        ("public <a> = go <b>;\n<b> = x <a>;", ":1: rule <a> is recursive with no way out"),
        ("public <a> = go [<b>];\n<b> = x <b> | <b>;", ":2: rule <b> is recursive with no way out"),
        ("public <a> = go (x | y;", ":1: rule <a>: unbalanced brackets: ';' where ')' closes"),
        ("public <a> = go | ;", ":1: rule <a>: empty alternative"),
        ("public <a> = + go;", ":1: rule <a>: '+' repeats nothing"),
        ("public <a> = <NULL>;", ":1: public rule <a> says nothing (only <NULL>)"),
        ("public <a> = x <VOID> | <VOID>;", ":1: public rule <a> can never be said"),
        ("#JSGF V1.0;\ngrammar g;\n\npublic <a> = x\n<b> = y;", ":5: rule <a>: '=' inside a rule"),
        ("import <other.*>;", ":1: import <other.*>: no "),
        ("import other;", ":1: import other: expected <grammar.rule> or <grammar.*>"),
    ],
)
def test_jsgf_errors_name_file_and_line(tmp_path: Path, text: str, problem: str) -> None:
    path = tmp_path / "bad.jsgf"
    path.write_text(text)
    with pytest.raises(GrammarError) as err:
        grammar_from_file(path)
    assert str(err.value).startswith(f"{path}{problem}"), str(err.value)


def test_jsgf_weights_tags_and_comments_are_ignored(tmp_path: Path) -> None:
    path = tmp_path / "w.gram"
    path.write_text("#JSGF V1.0;\n/* a\ncomment */ grammar w;\n// one more\n"
                    "public <go> = go ( /5/ left {L} | /1/ right ) [now];\n")
    assert enumerate_sentences(grammar_from_file(path)) == {"go left", "go right", "go left now", "go right now"}


def test_a_template_that_can_say_nothing_keeps_every_sentence_but_the_empty_one(tmp_path: Path) -> None:
    """An empty command would answer silence with a command; `[go] [now]` still means "go", "now", "go now"."""
    grammar = Grammar.build({"x": ["[go] [(now | {when})]"]}, {"when": ["later", "soon"]})
    assert enumerate_sentences(grammar) == {"go", "now", "later", "soon", "go now", "go later", "go soon"}
    assert not grammar.accepts("") and grammar.count() == 7
    assert grammar.parse("soon").slots == {"when": "soon"}
    path = tmp_path / "star.gram"
    path.write_text("public <a> = go* | stop+ | <NULL>;\n")  # PocketSphinx's test.gram's <caction>, public
    assert enumerate_sentences(grammar_from_file(path)) == {
        " ".join([w] * n) for w in ("go", "stop") for n in range(1, 6)}


def test_jsgf_repeated_repetition_is_one_repetition(tmp_path: Path) -> None:
    """`x**` (PocketSphinx's fuzzed.gram) is `x*`; unrolled once per star it would be 5^n and never finish."""
    path = tmp_path / "stars.gram"
    path.write_text("public <a> = go (x | y)******************** now;\npublic <b> = go z+*+;\n")
    once = jsgf_to_grammar("public <a> = go (x | y)* now;\npublic <b> = go z*;")
    assert enumerate_sentences(grammar_from_file(path)) == enumerate_sentences(once)


def test_jsgf_import_reads_the_grammar_beside_it(tmp_path: Path) -> None:
    """PocketSphinx's test.gram imports <polite.startPolite>: the public rules named come in by their
    names and as <polite.rule>; none of them is an intent of the importing grammar."""
    (tmp_path / "polite.gram").write_text(
        "#JSGF V1.0;\ngrammar polite;\npublic <startPolite> = please | <kind>;\n<kind> = kindly;\n"
        "public <endPolite> = thanks;\n<secret> = never;\n")
    path = tmp_path / "test.gram"
    path.write_text("#JSGF V1.0;\ngrammar test;\nimport <polite.startPolite>;\n"
                    "public <command> = <startPolite> (go | stop) [<polite.endPolite>];\n<kind> = mine;\n")
    grammar = grammar_from_file(path)
    assert list(grammar.intents) == ["command"]
    assert enumerate_sentences(grammar) == {f"{p} {a}{t}" for p in ("please", "kindly")
                                            for a in ("go", "stop") for t in ("", " thanks")}
    path.write_text("import <polite.*>;\npublic <c> = <startPolite> <endPolite>;")
    assert enumerate_sentences(grammar_from_file(path)) == {"please thanks", "kindly thanks"}
    from seqx.grammar.load import grammar_files  # what a corpus made from it depends on

    assert grammar_files(path) == [path, tmp_path / "polite.gram"]
    for target, problem in [("polite.secret", "keeps private <secret>"), ("polite.none", "has no rule <none>")]:
        path.write_text(f"import <{target}>;\npublic <c> = go;")
        with pytest.raises(GrammarError, match=problem):
            grammar_from_file(path)
    (tmp_path / "rude.gram").write_text("grammar rude;\npublic <oi> = oi <nowhere>;\n")
    path.write_text("import <rude.oi>;\npublic <c> = <oi> go;")
    with pytest.raises(GrammarError, match=f"^{tmp_path / 'rude.gram'}:2: rule <oi> uses <nowhere>"):
        grammar_from_file(path)  # the error names the file the rule is written in
    (tmp_path / "loop.gram").write_text("grammar loop;\nimport <loop.x>;\npublic <x> = x;")
    with pytest.raises(GrammarError, match="loop imports itself"):
        grammar_from_file(tmp_path / "loop.gram")


def test_jsgf_on_one_line_as_the_web_speech_api_writes_it(tmp_path: Path) -> None:
    path = tmp_path / "colors.gram"
    path.write_text("#JSGF V1.0; grammar colors; public <color> = aqua | azure | ghost white ;")
    grammar = grammar_from_file(path)
    assert grammar.name == "colors" and enumerate_sentences(grammar) == {"aqua", "azure", "ghost white"}


def test_jsgf_repetition_null_and_void(tmp_path: Path) -> None:
    """`+`/`*` as PocketSphinx grammars use them, unrolled to REPEAT_MAX; <NULL> is an empty
    alternative, <VOID> one that is never said."""
    from seqx.grammar.jsgf import REPEAT_MAX

    path = tmp_path / "pizza.jsgf"
    path.write_text(
        "#JSGF V1.0;\ngrammar pizza;\n"
        "public <order> = (i want | <NULL>) <size> pizza [with <topping> (and <topping>)*];\n"
        "public <dial> = dial <digit>+;\n"
        "<size> = small | large;\n<topping> = cheese | ham | <VOID>;\n<digit> = one | two;\n"
    )
    grammar = grammar_from_file(path)
    assert grammar.accepts("large pizza") and grammar.accepts("i want small pizza with ham")
    assert grammar.accepts("small pizza with ham and cheese and ham")
    assert not grammar.accepts("small pizza with") and not grammar.accepts("dial")
    assert grammar.accepts("dial " + " ".join(["two"] * REPEAT_MAX))
    assert not grammar.accepts("dial " + " ".join(["two"] * (REPEAT_MAX + 1)))
    toppings = 1 + sum(2**n for n in range(1, REPEAT_MAX + 2))  # none, or 1 to REPEAT_MAX + 1 of 2
    assert grammar.count() == 2 * 2 * toppings + sum(2**n for n in range(1, REPEAT_MAX + 1))
    assert grammar.parse("dial one two two").slots == {"digit": "one", "digit_2": "two", "digit_3": "two"}
    assert grammar.parse("large pizza with ham").slots == {"size": "large", "topping": "ham"}
    # each repeat count is drawn as often as the others, not by how many sentences it has
    rng = np.random.default_rng(0)
    counts = [len(d.text.split()) - 1 for d in (grammar.sample(rng) for _ in range(2000)) if d.intent == "dial"]
    assert {n: counts.count(n) for n in range(1, REPEAT_MAX + 1)}[1] > len(counts) / (2 * REPEAT_MAX)
    assert enumerate_sentences(jsgf_to_grammar(grammar_to_jsgf(grammar))) == enumerate_sentences(grammar)


def test_jsgf_recursion_is_unrolled_as_repetition_is(tmp_path: Path) -> None:
    """Sphinx grammars say a digit string by recursion: it means what `+` means, REPEAT_MAX deep."""
    from seqx.grammar.jsgf import REPEAT_MAX

    path = tmp_path / "dial.gram"
    path.write_text(
        "#JSGF V1.0;\ngrammar dial;\npublic <dial> = dial <digits>;\n<digits> = <digit> [<digits>];\n"
        "<digit> = one | two;\npublic <nest> = open <inner> close;\n<inner> = x | open <dial.inner> close;\n"
    )
    grammar = grammar_from_file(path)
    plus = jsgf_to_grammar("public <dial> = dial <digit>+;\n<digit> = one | two;")
    assert {s for s in enumerate_sentences(grammar) if s.startswith("dial")} == enumerate_sentences(plus)
    assert grammar.parse("dial two one").slots == {"digit": "two", "digit_2": "one"}
    # a rule inside two others of its own: `open` and `close` stay balanced
    nests = {s for s in enumerate_sentences(grammar) if s.startswith("open")}
    assert nests == {" ".join(["open"] * n + ["x"] + ["close"] * n) for n in range(1, REPEAT_MAX + 1)}
    assert enumerate_sentences(jsgf_to_grammar(grammar_to_jsgf(grammar))) == enumerate_sentences(grammar)
    # rules that call each other (a sentence grammar's phrases): REPEAT_MAX of them inside one another in
    # all, not each (Solarman's grammar.jsgf unrolled per rule never finished)
    phrases = jsgf_to_grammar("public <s> = <np> <vp>;\n<np> = n | n and <np> | n that <vp>;\n<vp> = v | v <np>;")
    assert phrases.accepts("n " + "and n " * (REPEAT_MAX - 1) + "v")
    assert not phrases.accepts("n " + "and n " * REPEAT_MAX + "v")
    assert phrases.accepts("n that v n that v n v") and not phrases.accepts("n that v n that v n that v v")


def test_a_grammar_parses_text_as_the_tokenizer_normalizes_it() -> None:
    """Decoded text is lower case, without punctuation, numbers as words: the grammar's words are
    matched the same way, and slot outputs stay as written."""
    from seqx.decode.negatives import other_words
    from seqx.tokenize.text import normalize_text

    grammar = Grammar.build({"order": ["I'd like a {drink}", "(O.J. | 3 Cokes) please"]},
                            {"drink": ["Coke", "Dr. Pepper", "water"]})
    spoken = grammar.spoken(lambda text: normalize_text(text, TokenizerSettings()))
    assert grammar.parse("i'd like a dr pepper") is None
    assert spoken.parse("i'd like a dr pepper").slots == {"drink": "Dr. Pepper"}
    assert spoken.accepts("o j please") and spoken.accepts("three cokes please")
    assert spoken.spoken(str.lower) is spoken  # nothing left to change: the same grammar
    counted = grammar_from_dict({"intents": {"n": ["{count} please"]}, "slots": {"count": [1, 2.5, "3"]}})
    said = counted.spoken(lambda text: normalize_text(text, TokenizerSettings()))
    assert said.parse("one please").slots == {"count": 1} and said.parse("three please").slots == {"count": "3"}
    assert "like" not in other_words(Grammar.build({"x": ["I LIKE it"]}))  # an everyday word the grammar says


def test_rhasspy_sentences_ini(tmp_path: Path) -> None:
    """A Rhasspy or voice2json user's sentences.ini, as the voice2json docs write it: sections are
    intents, tags name slots, substitutions say what a slot reports, $files and ranges are slots."""
    (tmp_path / "slots").mkdir()
    (tmp_path / "slots" / "color").write_text("red\n(dark blue | navy):blue\n")
    path = tmp_path / "sentences.ini"
    path.write_text(
        "# lights\n[ChangeLightState]\nlight_name = (living room lamp | garage light){name}\n"
        "turn (on | off){state} [the] <light_name>\n\n"
        "[ChangeLightColor]\nset [the] (bedroom light){name:bedroom_light} [to] ($color){color}\n"
        "set <ChangeLightState.light_name> to $color\n\n"
        "[LightState]\nturn (on:enable | off:disable){state} everything\n:please stop\n\n"
        "[SetTemperature]\n\\[please] set the oven to (100..200,50){degrees!int}\n"
        "[TurnOn]\nturn on the lights (:light){domain}\nturn on the fan (:){domain:fan} (:2){speed}\n")
    grammar = grammar_from_file(path)
    assert list(grammar.intents) == ["ChangeLightState", "ChangeLightColor", "LightState", "SetTemperature", "TurnOn"]
    # a tag that says nothing: a slot the sentence reports unsaid (it was dropped before 2026-12-02)
    assert grammar.parse("turn on the lights").slots == {"domain": "light"}
    assert grammar.parse("turn on the fan").slots == {"domain": "fan", "speed": 2}
    assert grammar.parse("turn off the garage light").slots == {"state": "off", "name": "garage light"}
    assert grammar.parse("set bedroom light to navy").slots == {"name": "bedroom_light", "color": "blue"}
    assert grammar.parse("set living room lamp to dark blue").slots == {"name": "living room lamp", "color": "blue"}
    # the same tag with other words elsewhere: a list of its own, heard only where it is written, as
    # Rhasspy hears it (one list of both accepted "turn off the bedroom light"), reported as the tag
    assert grammar.parse("turn on everything").slots == {"state": "enable"}
    assert not grammar.accepts("turn off the bedroom light") and not grammar.accepts("turn disable everything")
    assert grammar.accepts("set the bedroom light to red") and grammar.accepts("set garage light to red")
    assert sorted(grammar.slots) == ["color", "degrees", "name", "name@ChangeLightColor", "state", "state@LightState"]
    assert grammar.parse("stop").intent == "LightState" and not grammar.accepts("please stop")
    assert grammar.parse("please set the oven to one hundred fifty").slots == {"degrees": 150}
    assert grammar.accepts("set the oven to two hundred") and not grammar.accepts("set the oven to one hundred twenty")
    # converters apply to what a tag reports (they were read and ignored before 2026-12-02)
    converts = tmp_path / "convert.ini"
    converts.write_text("[Fan]\nfan speed (low:1.5 | high:3){speed!float} (:LAMP){name!lower} (on:yes | off:no){state!bool}\n")
    assert grammar_from_file(converts).parse("fan speed low off").slots == {"speed": 1.5, "name": "lamp", "state": False}
    assert grammar_from_file(converts).parse("fan speed high on").slots == {"speed": 3.0, "name": "lamp", "state": True}
    from seqx.grammar.load import grammar_files  # a corpus made from it depends on its slot files

    assert grammar_files(path) == [path, tmp_path / "slots" / "color"]
    for text, problem in [("turn on\n", ":1: a sentence before any [Intent] section"),
                          ("[A]\nplay ($movies){movie}\n", ":2: $movies: no slot file"),
                          ("[A]\nplay <nope>\n", ":2: <nope> is no rule of the file"),
                          ("[A]\nturn (on | off\n", ":2: unbalanced brackets"),
                          ("[A]\nturn on (the lamp (:light){domain} | fan)\n", ":2: tag {domain} says nothing and reports a value inside a group"),
                          ("[A]\nset (fast){speed!int}\n", ":2: {speed!int}: 'fast' is not int")]:  # fmt: skip
        path.write_text(text)
        with pytest.raises(GrammarError, match=re.escape(f"{path}{problem}")):
            grammar_from_file(path)


def test_vosk_grammar_json(tmp_path: Path) -> None:
    """The JSON list a Vosk KaldiRecognizer takes; its "[unk]" is seqx's own "not understood"."""
    path = tmp_path / "lights.json"
    path.write_text('["turn on the light", "turn off the light", "[unk]"]')
    grammar = grammar_from_file(path)
    assert enumerate_sentences(grammar) == {"turn on the light", "turn off the light"}
    assert list(grammar.intents) == ["lights"]
    for wrong in ('{"turn": "on"}', '"turn on"'):  # an object is Home Assistant's merged sentences, or wrong
        path.write_text(wrong)
        with pytest.raises(GrammarError, match=r"Vosk grammar(,| is) a JSON list of phrases"):
            grammar_from_file(path)


def test_phrase_list(tmp_path: Path) -> None:
    path = tmp_path / "phrases.txt"
    path.write_text("# my commands\nlights on\nlights off  # evening\n\n(open | close) the door\n")
    grammar = grammar_from_file(path)
    assert enumerate_sentences(grammar) == {"lights on", "lights off", "open the door", "close the door"}
    assert grammar.count() == 4 and grammar.parse("lights off").intent == "phrases"
    path.write_text("lights on\n(lights off\n")
    with pytest.raises(GrammarError, match=rf"^{path}:2: unbalanced"):
        grammar_from_file(path)
    # copied from notes: list marks are not said ("1." was "one" before the command), and "Lights on."
    # beside "lights on" is one command written twice: one template, not two drawn twice as often
    path.write_text("- lights on\n* Lights on.\n1. play music\n2) stop\n\u2022 pause\n3 blind mice\nstop\n")
    grammar = grammar_from_file(path)
    assert enumerate_sentences(grammar) == {"lights on", "play music", "stop", "pause", "3 blind mice"}
    assert [t.text for t in grammar.templates] == ["lights on", "play music", "stop", "pause", "3 blind mice"]
    from seqx.grammar.summary import sound_alike_choices

    assert sound_alike_choices(grammar) == []


def test_a_slot_kept_in_a_file_one_value_a_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Contacts, songs, products: a long list lives in its own file (`song: songs.txt`, beside the
    grammar or the recipe), read as list items are ("words: output", `#` comments). The corpus
    depends on it: its key changes when the file does."""
    from seqx.data.stage import _key

    (tmp_path / "songs.txt").write_text("# mine\nYellow Submarine\nHey Jude: hey-jude\n\nLet It Be\n")
    (tmp_path / "g.yaml").write_text("intents:\n  play: ['play {song}']\nslots:\n  song: songs.txt\n")
    recipe = tmp_path / "r.yaml"
    recipe.write_text("data:\n  synth:\n    grammar:\n      intents:\n        play: ['play {song}']\n"
                      "      slots:\n        song: songs.txt\n")
    monkeypatch.chdir(REPO)  # the files are found beside the grammar and the recipe, not in the working directory
    for grammar in (grammar_from_file(tmp_path / "g.yaml"), load_grammar(load_recipe(recipe))):
        assert enumerate_sentences(grammar) == {"play Yellow Submarine", "play Hey Jude", "play Let It Be"}
        assert grammar.parse("play Hey Jude").slots == {"song": "hey-jude"}
    by_file = load_recipe(REPO / "recipes/commands.yaml", [f"data.synth.grammar={tmp_path / 'g.yaml'}"])
    before = (_key(by_file), _key(load_recipe(recipe)))
    (tmp_path / "songs.txt").write_text("Yellow Submarine\nHelp\n")
    after = (_key(by_file), _key(load_recipe(recipe)))
    assert before[0] != after[0] and before[1] != after[1]
    (tmp_path / "g.yaml").write_text("intents:\n  play: ['play {song}']\nslots:\n  song: nosuch.txt\n")
    with pytest.raises(GrammarError, match=r"g.yaml:4: slot song: no slot file .*nosuch.txt"):
        grammar_from_file(tmp_path / "g.yaml")


def test_recipe_grammar_file_shorthand(tmp_path: Path) -> None:
    (tmp_path / "g.txt").write_text("lights on\nlights off\n")
    path = tmp_path / "r.yaml"
    path.write_text("data:\n  synth:\n    grammar: g.txt\n")  # beside the recipe
    recipe = load_recipe(path)
    assert recipe.data.synth.grammar.file == str(tmp_path / "g.txt")  # every stage finds it, from anywhere
    assert load_grammar(recipe).count() == 2 and corpus_grammar(recipe.data).count() == 2
    path.write_text("data:\n  synth:\n    grammar: g.txt\n    templates: [stop]\n")
    with pytest.raises(RecipeError, match="not both"):
        load_recipe(path)


# ------------------------------------------------------------------ the command


def _app():  # noqa: ANN202
    from seqx.cli.app import COMMAND_MODULES, app

    for name in COMMAND_MODULES:  # as main() does: register every command
        importlib.import_module(f"seqx.cli.{name}")
    return app


def test_cli_show_and_sample_json() -> None:
    result = CliRunner().invoke(_app(), ["grammar", str(REPO / "recipes/commands.yaml"), "--show", "--sample", "3",
                                         "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["summary"]["sentences"] == 332 and report["summary"]["slots"]["number"] == 60
    assert len(report["samples"]) == 3 and all(s["intent"] for s in report["samples"])
    result = CliRunner().invoke(_app(), ["grammar", str(CARDS), "--sample", "2"])
    assert result.exit_code == 0 and "cards" in result.stdout


def test_yes_no_on_off_are_words_true_false_named_and_colons_survive_storage(tmp_path: Path) -> None:
    """YAML 1.1 reads unquoted yes/no/on/off as booleans: a confirmation grammar's intents were "True"
    and "False", its commands the words "true" and "false". They are words (YAML 1.2); an unquoted
    true/false slot value is still named, and a recipe's switches still take `on`."""
    path = tmp_path / "r.yaml"
    path.write_text("data:\n  synth:\n    grammar:\n      intents:\n        go: ['turn {state}']\n"
                    "      slots:\n        state: [on, off]\n")
    assert load_grammar(load_recipe(path)).parse("turn off").slots == {"state": "off"}
    assert load_recipe(path, ["features.kaldi=on"]).features.kaldi is True
    path.write_text(path.read_text().replace("[on, off]", "[true, false]"))
    with pytest.raises(GrammarError, match=r":7: slot state: value true is a YAML boolean"):
        load_recipe(path)
    confirm = tmp_path / "confirm.yaml"
    confirm.write_text("intents:\n  yes: [yes, yeah]\n  no: [no, nope]\n  on: [switch it on]\n")
    grammar = grammar_from_file(confirm)
    assert sorted(grammar.intents) == ["no", "on", "yes"]
    assert grammar.parse("yes").intent == "yes" and grammar.parse("no").intent == "no"
    assert grammar.parse("true") is None
    grammar = Grammar.build({"t": ["at {time}"]}, {"time": [("ten thirty", "10:30"), ("12:00", "12:00")]})
    again = Grammar.from_dict(json.loads(json.dumps(grammar.to_dict())))
    assert again.parse("at 12:00").slots == {"time": "12:00"}
    assert again.parse("at ten thirty").slots == {"time": "10:30"}


@pytest.mark.parametrize("encoding", ["utf-8-sig", "utf-16", "cp1252"])
def test_grammar_files_saved_by_windows_editors_read_as_written(tmp_path: Path, encoding: str) -> None:
    """Notepad's UTF-8 starts with a byte-order mark (a JSGF file was "expected a rule, got '\\ufeff#JSGF'"),
    Windows PowerShell's `>` writes UTF-16, an older editor cp1252; line ends are \\r\\n."""
    jsgf = tmp_path / "lights.jsgf"
    jsgf.write_bytes("#JSGF V1.0;\r\ngrammar lights;\r\npublic <cmd> = (turn on | turn off) the (light | café lamp);\r\n"
                     .encode(encoding))
    assert grammar_from_file(jsgf).parse("turn on the café lamp") is not None
    phrases = tmp_path / "phrases.txt"
    phrases.write_bytes("play Beyoncé\r\nturn on the light\r\n".encode(encoding))
    grammar = grammar_from_file(phrases)
    assert grammar.parse("play Beyoncé") is not None and grammar.parse("turn on the light") is not None
    recipe = tmp_path / "r.yaml"
    recipe.write_bytes("data:\r\n  synth:\r\n    grammar: phrases.txt\r\n".encode(encoding))
    assert load_grammar(load_recipe(recipe), recipe).parse("play Beyoncé") is not None


def test_times_in_a_yaml_grammar_are_times(tmp_path: Path) -> None:
    """YAML 1.1 reads an unquoted 7:30 as the number 450, and "10:15" split at its ':' was the words
    "10" reporting 15: both are the time as written, said as a time."""
    from seqx.tokenize.text import normalize_text

    path = tmp_path / "alarm.yaml"
    path.write_text("intents:\n  alarm: ['wake me at {time}']\nslots:\n  time: [6:30, '10:15', 'noon: 12:00']\n")
    grammar = grammar_from_file(path)
    assert grammar.parse("wake me at 6:30").slots == {"time": "6:30"}
    assert grammar.parse("wake me at 10:15").slots == {"time": "10:15"}
    assert grammar.parse("wake me at noon").slots == {"time": "12:00"}
    said = grammar.spoken(lambda text: normalize_text(text, TokenizerSettings()))
    assert said.parse("wake me at ten fifteen").slots == {"time": "10:15"}
    assert said.parse("wake me at six thirty").slots == {"time": "6:30"}


def test_show_warns_of_a_sentence_two_intents_say() -> None:
    """ "stop" in media and in timer is always parsed as media: the timer never hears it. Found by
    walking both intents' automata together, as decoding spells the words ("Stop." is "stop")."""
    from seqx.grammar.summary import summarize

    grammar = Grammar.build({"media": ["(play | pause) the music", "Stop."],
                             "timer": ["set a timer for {n} minutes", "stop", "cancel the timer"],
                             "lights": ["turn {state} the lights", "lights {state}"]},
                            {"n": ["one", "five"], "state": ["on", "off"]})
    assert summarize(grammar).shared == [["media", "timer", "stop"]]
    assert grammar.parse("stop").intent == "timer" and grammar.parse("Stop.").intent == "media"
    both = Grammar.build({"a": ["set a timer for {n} minutes"], "b": ["set a (timer | alarm) for five minutes"]},
                         {"n": ["one", "five"]})
    assert summarize(both).shared == [["a", "b", "set a timer for five minutes"]]
    assert summarize(load_grammar(load_recipe(REPO / "recipes/smarthome.yaml"))).shared == []
    result = CliRunner().invoke(_app(), ["grammar", str(REPO / "recipes/commands.yaml"), "--show"])
    assert result.exit_code == 0 and "both say" not in result.output


def test_show_warns_of_short_forms_said_as_written(tmp_path: Path) -> None:
    """ "wake me at {hour} am" teaches the verb "am" for a person's "A M", "{n} min" the word "min" for
    "minutes": `grammar --show` says what to write; "AM" is said long, "I am" is the verb."""
    from seqx.grammar.summary import summarize

    alarm = Grammar.build({"alarm": ["wake me at {hour} am", "set a timer for {n} min"]}, {"hour": ["6", "7"], "n": ["5"]})
    assert summarize(alarm).short_forms == [
        "'am' is said as the verb, as in \"I am\"; for the time of day write \"AM\" or \"a.m.\"",
        "'min' is said as written; for minutes write \"minutes\""]  # fmt: skip
    fixed = Grammar.build({"alarm": ["wake me at {hour} AM", "set a timer for {n} minutes"], "me": ["I am home"]},
                          {"hour": ["6", "7"], "n": ["5"]})
    assert summarize(fixed).short_forms == []
    sizes = Grammar.build({"order": ["a {size} latte"]}, {"size": ["12 oz: small", "16 oz"]})  # after a number: long
    assert summarize(sizes).short_forms == []
    least = Grammar.build({"dim": ["set the lamp to (min | minimum)", "set the lamp to max"]}, {})  # Home Assistant's
    assert summarize(least).short_forms == []
    assert fixed.spoken(lambda t: normalize_text(t, TokenizerSettings())).parse("wake me at seven a m").slots == {"hour": "7"}
    path = tmp_path / "alarm.yaml"
    path.write_text("intents:\n  alarm: ['wake me at {hour} am']\nslots:\n  hour: ['6', '7']\n")
    result = CliRunner().invoke(_app(), ["grammar", str(path), "--show"])
    assert result.exit_code == 0 and "for the time of day write" in " ".join(result.output.split())


def test_show_warns_of_words_said_alike_where_either_may_come() -> None:
    """ "turn right" or "turn write", "Ann" or "Anne": one sound, two answers; `seqx grammar --show` says
    so. "red" and "read" (said "reed" alone) and words that never compete are left alone."""
    from seqx.grammar.summary import summarize

    grammar = Grammar.build({"light": ["turn (right | write | left) the {thing}", "read the {thing}"],
                             "look": ["(see | sea) the {thing}"]},
                            {"thing": ["book", "lamp", "Ann", "Anne", "red"]})
    assert summarize(grammar).sound_alike == [["Ann", "Anne"], ["right", "write"], ["sea", "see"]]
    assert summarize(load_grammar(load_recipe(REPO / "recipes/commands.yaml"))).sound_alike == []
    result = CliRunner().invoke(_app(), ["grammar", str(REPO / "recipes/commands.yaml"), "--show"])
    assert result.exit_code == 0 and "sound alike" not in result.output
