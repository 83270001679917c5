"""Where a grammar comes from: a recipe, a YAML grammar file, a JSGF file or a phrase list.

The YAML form (a recipe's `data.synth.grammar:` section, or a file of its own):

    intents:
      set_level:                       # name -> list of templates
        - "(turn | set) [the] {control} to {level}"
      media:                           # or with a weight (default 1), per intent or per template
        templates: ["{media_verb} the music", {"play the {song} song": 2}]
        weight: 2
      lights_on:                       # slots a template reports without saying them, per intent
        templates: ["lights on", {"fans on": {slots: {domain: fan}}}]   # or per template (its own first)
        slots: {domain: light}
    slots:
      level: ["ten:10", "twenty one: 21", {"thirty": 30}, five]   # words, or words with an output

A template's probability in the synthetic corpus is its weight times its intent's, over
the sum of all; every value of a slot is equally likely.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from seqx.errors import yaml_problem
from seqx.grammar.errors import GrammarError
from seqx.grammar.jsgf import imported_file
from seqx.grammar.model import Grammar, Output, Slot, SlotValue, Template, fixed_slots
from seqx.grammar.syntax import SLOT_NAME, parse_template, slot_refs
from seqx.text_files import read_text_file

SUFFIXES = {
    ".jsgf": "jsgf", ".gram": "jsgf", ".txt": "phrases", ".json": "vosk", ".ini": "rhasspy", ".yaml": "yaml", ".yml": "yaml",
}


def grammar_files(path: Path) -> list[Path]:
    """A grammar file and, for JSGF, every file its imports read, for Rhasspy's sentences.ini and a
    YAML grammar its slot files (what a corpus made from it depends on)."""
    if path.is_dir():  # a folder of Home Assistant's intent sentences: every file in it
        from seqx.grammar.hassil import folder_files

        return folder_files(path)
    files = [path]
    if path.suffix.lower() == ".ini" and (path.parent / "slots").is_dir():
        files += sorted(f for f in (path.parent / "slots").rglob("*") if f.is_file())
    if path.suffix.lower() in (".yaml", ".yml") and path.is_file():
        raw = yaml_or_nothing(path)  # reading the grammar says what is wrong with it
        if isinstance(raw, dict) and "grammar" in raw and "intents" not in raw:
            raw = raw["grammar"]
        files += [f for f in slot_files(raw, path.parent) if f.is_file()]
    for file in files:
        if file.suffix.lower() in (".gram", ".jsgf") and file.is_file():
            text = read_text_file(file)
            for grammar in re.findall(r"^\s*import\s*<\s*([^>]*)\.[^.>]*>", text, flags=re.MULTILINE):
                found = imported_file(file.parent, grammar.strip())
                files += [found] if found is not None and found not in files else []
    return files


def yaml_or_nothing(path: Path) -> Any:
    """A YAML file's contents, {} when it is not valid YAML: for a look at what kind of file it is
    (the reader that loads it for real names the fault)."""
    import yaml

    from seqx.yaml_load import load_yaml

    try:
        return load_yaml(read_text_file(path)) or {}
    except yaml.YAMLError:
        return {}


def grammar_from_file(path: str | Path) -> Grammar:
    """A grammar file, by extension: .jsgf/.gram (JSGF), .txt (a phrase list), .json (Vosk's phrase
    list; a JSON object is read as YAML is: the home-assistant-intents package's merged `en.json`),
    .ini (Rhasspy's sentences.ini), .yaml/.yml."""
    path = Path(path)
    if path.is_dir():  # Home Assistant keeps a language's sentences in a folder of files
        from seqx.grammar.hassil import hassil_folder

        return hassil_folder(path)
    kind = SUFFIXES.get(path.suffix.lower())
    if kind is None:
        raise GrammarError(f"{path}: not a grammar file (expected {', '.join(sorted(SUFFIXES))})")
    if not path.is_file():
        raise GrammarError(f"{path}: no such grammar file")
    text = read_text_file(path)
    if kind == "jsgf":
        from seqx.grammar.jsgf import jsgf_to_grammar

        return jsgf_to_grammar(text, source=str(path), folder=path.parent)
    if kind == "rhasspy":
        from seqx.grammar.rhasspy import rhasspy_to_grammar

        return rhasspy_to_grammar(text, source=str(path), folder=path.parent)
    if kind == "vosk" and not text.lstrip().startswith("{"):  # an object: read below, as its YAML form
        from seqx.grammar.phrases import vosk_to_grammar

        return vosk_to_grammar(text, source=str(path))
    if kind == "phrases":
        from seqx.grammar.phrases import phrases_to_grammar

        return phrases_to_grammar(text, source=str(path))
    import yaml  # here, not above: a bundle's stored grammar (grammar_from_dict) needs no YAML reader

    from seqx.yaml_load import load_yaml

    try:
        raw = load_yaml(text) or {}
    except yaml.YAMLError as err:
        line, problem = yaml_problem(err)
        raise GrammarError(f"{path}{f':{line}' if line is not None else ''}: not valid YAML: {problem}") from None
    if kind == "vosk" and not (isinstance(raw, dict) and {"intents", "context"} & set(raw)):
        raise GrammarError(f'{path}: a .json grammar is a Vosk grammar, a JSON list of phrases ["turn on the light", ...], '
                           f'or Home Assistant\'s intent sentences merged ({{"language": "en", "intents": ...}})')
    if not isinstance(raw, dict):
        raise GrammarError(f"{path}: a grammar file is a mapping with intents and slots")
    if "grammar" in raw and "intents" not in raw:  # a file that holds a grammar section
        raw = raw["grammar"]
    return grammar_from_dict(raw, source=str(path), name=str(raw.get("name", path.stem)), folder=path.parent)


def grammar_from_dict(
    raw: Mapping[str, Any], source: str = "<grammar>", name: str | None = None, folder: Path | None = None
) -> Grammar:
    """A grammar from its YAML form ({intents, slots, [name]}): what a recipe holds and a bundle stores.
    A slot given as a file name (`song: songs.txt`) reads its values from that file, found in `folder`
    (the grammar file's) when relative."""
    name = name or str(raw.get("name", "grammar"))
    from seqx.grammar.hassil import hassil_to_grammar, is_hassil
    from seqx.grammar.rhino import is_rhino, rhino_to_grammar

    if is_hassil(raw):  # Home Assistant's intent sentences
        return hassil_to_grammar(raw, source, name)
    if is_rhino(raw):  # a Picovoice Rhino context
        return rhino_to_grammar(raw, source, name)
    unknown = sorted(set(raw) - {"name", "intents", "slots"})
    if unknown:
        raise GrammarError(f"{source}: {unknown[0]}: unknown grammar key (expected intents, slots)")
    intents = raw.get("intents") or {}
    if not isinstance(intents, Mapping) or not intents:
        raise GrammarError(f"{source}: intents: expected a mapping of intent name -> templates")
    slots = {}
    for slot, values in (raw.get("slots") or {}).items():
        if isinstance(values, str):
            values = slot_file_values(Path(folder or ".") / values, str(slot), source)  # an absolute name stays itself
        if not isinstance(values, list):
            raise GrammarError(f"{_at(source, str(slot) + ':')}: slot {slot}: expected a list of values")
        slots[str(slot)] = Slot(str(slot), tuple(_value(v, source, str(slot)) for v in values))
    templates = []
    for intent, spec in intents.items():
        intent = str(intent)
        weight, fixed = 1.0, ()
        if isinstance(spec, Mapping):
            where = f"{_at(source, intent + ':')}: intent {intent}"
            unknown = sorted(set(spec) - {"templates", "weight", "slots"})
            if unknown:
                raise GrammarError(f"{where}: {unknown[0]}: unknown intent key (expected templates, weight, slots)")
            weight = _template_options(spec.get("weight", 1.0), where)[0]
            fixed = fixed_slots(spec.get("slots") or None, where)
            spec = spec.get("templates")
        if not isinstance(spec, list) or not spec:
            raise GrammarError(f"{_at(source, intent + ':')}: intent {intent}: expected a list of templates")
        for entry in spec:
            text, own = (next(iter(entry.items())) if isinstance(entry, Mapping) else (entry, 1.0))
            text = str(text)
            where = f"{_at(source, text)}: intent {intent}"
            expr = parse_template(text, where)
            for ref in slot_refs(expr):
                if ref not in slots:
                    raise GrammarError(f"{where}: unknown slot '{{{ref}}}' in '{text}'")
            own, own_fixed = _template_options(own, where)
            if weight * own <= 0:
                raise GrammarError(f"{where}: a weight must be above 0")
            merged = {**dict(fixed), **dict(own_fixed)}  # a template's own fixed slots before its intent's
            templates.append(Template(intent, text, expr, weight * own, tuple(merged.items())))
    return Grammar(name, templates, slots)


def _template_options(own: Any, where: str) -> tuple[float, tuple[tuple[str, Output], ...]]:
    """What follows a template's text: a weight (`{"play {song}": 2}`), or `{weight: 2, slots: {domain:
    light}}`, slots the template reports without saying them."""
    if not isinstance(own, Mapping):
        try:
            return float(own), ()
        except (TypeError, ValueError):
            raise GrammarError(f"{where}: a weight is a number, got {own!r}") from None
    unknown = sorted(set(own) - {"weight", "slots"})
    if unknown:
        raise GrammarError(f"{where}: {unknown[0]}: unknown template key (expected weight, slots)")
    return _template_options(own.get("weight", 1.0), where)[0], fixed_slots(own.get("slots") or None, where)


def slot_file_values(path: Path, slot: str, source: str) -> list[str]:
    """A slot file's values: one a line, as a list item is written ("living room" or "living room:
    lounge"); `#` starts a comment. What a user keeps a long list in: contacts, songs, products."""
    if not path.is_file():
        raise GrammarError(f"{_at(source, slot + ':')}: slot {slot}: no slot file {path}")
    values = [line.split("#", 1)[0].strip() for line in read_text_file(path).splitlines()]
    if not any(values):
        raise GrammarError(f"{path}: slot {slot}: the file has no values (one a line)")
    return [value for value in values if value]


def slot_files(raw: Mapping[str, Any], folder: Path | None = None) -> list[Path]:
    """The slot files a grammar's YAML form names (what a corpus made from it depends on)."""
    slots = raw.get("slots") if isinstance(raw, Mapping) else None
    named = [v for v in (slots.values() if isinstance(slots, Mapping) else ()) if isinstance(v, str)]
    return [Path(folder or ".") / v for v in named]  # an absolute name stays itself


def grammar_from_templates(templates: list[str], slots: Mapping[str, list[str]], name: str = "commands",
                           source: str = "data.synth.templates") -> Grammar:
    """The old recipe form (`data.synth.templates` + `slots`): each template is its own intent,
    named by its words and slot names (`{app_verb} the {app}` -> `app_verb_the_app`)."""
    intents: dict[str, list[str]] = {}
    for text in templates:
        base = "_".join(re.findall(r"[A-Za-z0-9]+", text)).lower() or "command"
        intent, n = base, 2
        while intent in intents:
            intent, n = f"{base}_{n}", n + 1
        intents[intent] = [text]
    return grammar_from_dict({"intents": intents, "slots": {k: list(v) for k, v in slots.items()}},
                             source=source, name=name)


def load_grammar(recipe: Any, recipe_path: str | Path | None = None) -> Grammar | None:
    """The recipe's grammar (`data.synth.grammar`, or the older `templates`/`slots`); None when it has none."""
    return grammar_from_settings(recipe.data.synth, recipe.name, recipe_path)


def grammar_from_settings(synth: Any, name: str = "commands", recipe_path: str | Path | None = None) -> Grammar | None:
    """The grammar of a `data.synth` section; None when it has none.

    A `grammar: FILE` path is taken as given (relative to the working directory, as every other
    path in a recipe), else next to the recipe file. Errors name `recipe_path` and the line when given.
    """
    source = str(recipe_path) if recipe_path else "data.synth.grammar"
    settings = synth.grammar
    if settings is not None and settings.file:
        return grammar_from_file(grammar_path(settings.file, recipe_path))
    if settings is not None:
        raw = settings.model_dump(mode="python", exclude={"file"})
        return grammar_from_dict(raw, source=source, name=name)
    if synth.templates:
        return grammar_from_templates(synth.templates, dict(synth.slots), name, source=source)
    return None


def grammar_path(file: str, recipe_path: str | Path | None = None) -> Path:
    """`data.synth.grammar: FILE` as a path: as given when it exists, else beside the recipe."""
    from seqx.recipe_files import beside_recipe

    return Path(file if recipe_path is None else beside_recipe(file, Path(recipe_path)))


def _value(raw: Any, source: str, slot: str) -> SlotValue:
    """"words", "words:output" (output read as YAML: 21 is a number), {words: output}, or a number."""
    output: Output
    if isinstance(raw, bool):
        raise GrammarError(f"{_at(source, slot + ':')}: slot {slot}: value {str(raw).lower()} is a YAML boolean "
                           f"(true and false unquoted): quote it, \"{str(raw).lower()}\"")
    if isinstance(raw, Mapping):
        if len(raw) != 1:
            raise GrammarError(f"{_at(source, slot + ':')}: slot {slot}: a value is {{words: output}}, got {dict(raw)}")
        words, output = next(iter(raw.items()))
        words = str(words)
    elif isinstance(raw, str) and _OUTPUT_COLON.search(raw):
        # the first ':' ends the words, unless digits stand either side of it: "ten p m: 22:00" is the words
        # "ten p m" with the output "22:00", kept as text; "10:15" is words (a time, said "ten fifteen")
        words, text = _OUTPUT_COLON.split(raw, maxsplit=1)
        text = text.strip()
        from seqx.yaml_load import load_yaml

        output = load_yaml(text) if text and ":" not in text else text
        if output is None or isinstance(output, (list, dict)):
            output = text.strip()
    elif isinstance(raw, int | float):  # `count: [1, 2, 3]`: said as the number, reported as it
        words, output = str(raw), raw
    else:
        words = str(raw)
        output = " ".join(words.split())
    parts = tuple(str(words).split())
    if not parts:
        raise GrammarError(f"{_at(source, slot + ':')}: slot {slot}: empty value")
    bad = [w for w in parts if re.search(r"[()\[\]|{}]", w)]
    if bad:
        raise GrammarError(f"{_at(source, str(words))}: slot {slot}: value '{words}' holds template syntax; "
                           f"a slot value is plain words")
    if not SLOT_NAME.match(slot):
        raise GrammarError(f"{_at(source, slot + ':')}: bad slot name '{slot}'")
    return SlotValue(parts, output)


_OUTPUT_COLON = re.compile(r"(?<!\d):|:(?!\d)")  # where a slot value's words end and its output starts


def _at(source: str, needle: str) -> str:
    """`FILE:LINE` of the first line holding `needle` when `source` is a readable file, else `source`."""
    path = Path(source)
    try:
        if path.is_file():
            for number, line in enumerate(read_text_file(path).splitlines(), 1):
                if needle in line:
                    return f"{source}:{number}"
    except OSError:
        pass
    return source


def open_grammar(path: str | Path, overrides: list[str] | None = None) -> Grammar:
    """What `seqx grammar PATH` shows: a grammar file, or the grammar of a recipe (.yaml without `intents`
    or a Rhino `context`)."""
    from seqx.errors import RecipeError
    from seqx.recipe_files import find_recipe

    path = Path(path)
    if path.suffix.lower() in ("", ".yaml", ".yml") and not path.is_file():
        try:  # a shipped recipe by name (`commands`, or recipes/commands.yaml where there is none)
            path = find_recipe(path)
        except RecipeError:
            pass  # not one: the grammar-file reader below says what is wrong with the path
    if path.suffix.lower() in (".yaml", ".yml") and path.is_file():
        raw = yaml_or_nothing(path)
        from seqx.grammar.rhino import is_rhino

        if isinstance(raw, dict) and "intents" not in raw and "grammar" not in raw and not is_rhino(raw):
            from seqx.recipe import load_recipe

            grammar = load_grammar(load_recipe(path, overrides), path)
            if grammar is None:
                raise GrammarError(f"{path}: the recipe has no grammar (data.synth.grammar)")
            return grammar
    return grammar_from_file(path)
