"""What `seqx grammar --show` reports: intents, slot sizes, vocabulary, sentence count (computed)."""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from seqx.grammar.model import Grammar, output_text
from seqx.grammar.syntax import written_slot


@dataclass
class GrammarSummary:
    name: str
    intents: dict[str, dict[str, int]]  # intent -> {"templates", "sentences"}
    slots: dict[str, int]  # slot -> values
    vocabulary: int
    sentences: int
    dfa_states: int
    dfa_arcs: int
    compile_seconds: float
    # slot -> the values templates report without saying them (Home Assistant's `slots: {domain: light}`)
    fixed: dict[str, list[Any]] = field(default_factory=dict)
    # words said alike where the grammar allows either ("right" / "write" after "turn"): a recognizer
    # hears one sound, so which of them it writes is a coin toss the grammar set up
    sound_alike: list[list[str]] = field(default_factory=list)
    # [intent, intent, sentence]: a sentence two intents both say ("stop" in media and in timer) is
    # always parsed as the first's, so the second never hears it
    shared: list[list[str]] = field(default_factory=list)
    # short forms a person says long that the grammar writes so that engines say them short
    # ("7 am": the verb "am"; "20 min": "min"): what to write instead
    short_forms: list[str] = field(default_factory=list)
    # what reading the grammar left out, and why (Home Assistant's sentences that say a wildcard list)
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def summarize(grammar: Grammar) -> GrammarSummary:
    started = time.perf_counter()
    dfa = grammar.word_dfa()
    seconds = time.perf_counter() - started
    intents = {
        name: {"templates": len(templates), "sentences": grammar.subset([name]).count()}
        for name, templates in grammar.intents.items()
    }
    return GrammarSummary(
        name=grammar.name,
        intents=intents,
        slots={name: len(grammar.slots[name].values) for name in sorted({written_slot(n) for n in grammar.used_slots()})},
        fixed=fixed_values(grammar),
        vocabulary=len(grammar.vocabulary()),
        sentences=grammar.count(),
        dfa_states=dfa.num_states,
        dfa_arcs=dfa.num_arcs,
        compile_seconds=round(seconds, 4),
        sound_alike=[list(group) for group in sound_alike_choices(grammar)],
        shared=[list(found) for found in shared_sentences(grammar)],
        short_forms=short_form_advice(grammar),
        notes=list(grammar.notes),
    )


def fixed_values(grammar: Grammar) -> dict[str, list[Any]]:
    """Each fixed slot's values, in the order the templates give them."""
    found: dict[str, list[Any]] = {}
    for template in grammar.templates:
        for name, value in template.fixed:
            if value not in found.setdefault(name, []):
                found[name].append(value)
    return dict(sorted(found.items()))


def as_decoded(grammar: Grammar) -> tuple[Grammar, Callable[[str], str]]:
    """The grammar with its words as a decoded text spells them ("Turn" is "turn", "Stop." is "stop"),
    and that spelling (the default tokenizer's normalization: one function, so the grammar spells
    itself once for all the checks that ask)."""
    return grammar.spoken(_decoded_spelling), _decoded_spelling


def _decoded_spelling(text: str) -> str:
    from seqx.tokenize.text import normalize_text

    return normalize_text(text, _default_tokenizer())


@functools.cache
def _default_tokenizer() -> Any:
    from seqx.recipe import TokenizerSettings

    return TokenizerSettings()


def shared_warning(first: str, second: str, sentence: str) -> str:
    """What `seqx grammar --show` and the data stage say of a sentence two intents say."""
    if _intent_of(first) == _intent_of(second):  # one intent, told apart by the slots its templates fix
        return (f"{first} and {second} both say {sentence!r}: it is always answered {first} "
                f"(say it in one of them only)")  # fmt: skip
    return f"intents {first} and {second} both say {sentence!r}: it is always answered {first} (say it in one intent only)"


def shared_sentences(grammar: Grammar) -> list[tuple[str, str, str]]:
    """(first intent, second intent, their shortest common sentence) for each pair of intents that
    say a sentence alike, as decoding spells them (a word-by-word walk of both intents' automata
    together: no sentence is listed, so a 10^8-sentence grammar takes milliseconds). An intent whose
    templates fix different slots (Home Assistant's `domain: fan` and `domain: light`) is a group per
    set of fixed slots, named `HassTurnOn {domain=fan}`: the first template that says a sentence
    answers it, so the second group's slots are never reported for it."""
    from collections import deque

    said, _ = as_decoded(grammar)
    groups: dict[str, list] = {}
    for intent, templates in said.intents.items():
        fixings = list(dict.fromkeys(t.fixed for t in templates))
        for fixed in fixings:
            name = intent if len(fixings) == 1 else " ".join([intent, _fixed_text(fixed)])
            groups[name] = [t for t in templates if t.fixed == fixed]
    names = list(groups)
    dfas = {name: Grammar(said.name, groups[name], said.slots).word_dfa() for name in names}
    found = []
    for i, first in enumerate(names):
        for second in names[i + 1 :]:
            a, b = dfas[first], dfas[second]
            paths: dict[tuple[int, int], tuple[str, ...]] = {(a.start, b.start): ()}
            queue = deque(paths)
            while queue:
                pair = queue.popleft()
                if a.final[pair[0]] and b.final[pair[1]]:
                    found.append((first, second, " ".join(paths[pair])))
                    break
                for word, target in a.arcs[pair[0]].items():
                    other = b.arcs[pair[1]].get(word)
                    if other is not None and (target, other) not in paths:
                        paths[(target, other)] = (*paths[pair], str(word))
                        queue.append((target, other))
    return found


def _fixed_text(fixed: tuple) -> str:
    return "{" + " ".join(f"{k}={output_text(v)}" for k, v in fixed) + "}"


def _intent_of(group: str) -> str:
    """The intent of a group name shared_sentences gives (`HassTurnOn {domain=fan}` -> `HassTurnOn`)."""
    return group.rsplit(" {", 1)[0] if group.endswith("}") else group


# words said as written where they stand alone, since alone they may be another word (short_forms.py)
_SAID_AS_WRITTEN = {
    "am": 'as the verb, as in "I am"; for the time of day write "AM" or "a.m."',
    "min": 'as written; for minutes write "minutes"',
    "sec": 'as written; for seconds write "seconds"',
    "hr": 'as written; for hours write "hours"',
    "ft": 'as written; for feet write "feet"',
    "oz": 'as written; for ounces write "ounces"',
}


def short_form_advice(grammar: Grammar) -> list[str]:
    """One line for each short form the grammar writes alone, which every voice then says short while
    a person says it long: "{hour} am" is taught as the verb "am", "{n} min" as "min". "am" beside "I"
    is the verb the grammar means, and is left alone, as is "min" beside "max" or "minimum" (Home
    Assistant's brightness `(min|minimum|lowest)`); "12 oz" is said long, so it is not warned of."""
    words = {str(w) for w in as_decoded(grammar)[0].vocabulary()}
    meant = ({"am"} if "i" in words else set()) | ({"min"} if words & {"max", "minimum"} else set())  # "(min|minimum)"
    found = sorted(words.intersection(_SAID_AS_WRITTEN) - meant)
    return [f"{word!r} is said {_SAID_AS_WRITTEN[word]}" for word in found]


def sound_alike_choices(grammar: Grammar) -> list[tuple[str, ...]]:
    """Words the grammar offers at one point that espeak-ng says alike: each group once, however many
    points offer it (`seqx grammar --show` warns of them). Words as a decoded text spells them ("Turn"
    and "turn" are one word, not two said alike)."""
    from seqx.data.sound_alike import alike_groups

    said, normalize = as_decoded(grammar)
    written: dict[str, str] = {}  # each word told as the grammar writes it
    for word in sorted(grammar.vocabulary()):
        written.setdefault(normalize(word), word)
    groups = alike_groups([str(word) for word in arcs] for arcs in said.word_dfa().arcs if len(arcs) > 1)
    return [tuple(written.get(word, word) for word in group) for group in groups]
