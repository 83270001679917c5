"""What a HassIL list says: its values (words, `in`/`out`, templates), ranges (`multiplier`,
`fractions`), and which of them a data block's sentences may say (`requires_context` against each
value's `context:`); the lists a sentence cannot say (wildcards, no value fits). seqx/grammar/hassil.py reads the files."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from seqx.grammar.errors import GrammarError, yaml_mapping
from seqx.grammar.model import Output, Slot, SlotValue
from seqx.grammar.syntax import Alt, Expr, Opt, SlotRef, Word, parse_template

TEMPLATE_SYNTAX = re.compile(r"[()\[\]|{}<>]")
# `{brightness}[ ][%|percent]`, `day[ ]light`: "50%" or "50 %"; words stand apart here (one sound either way)
OPTIONAL_SPACE = re.compile(r"\[\s+\]")
LIST = re.compile(r"\{\s*([^{}:\s]+)\s*(?::\s*([^{}\s]+)\s*)?\}")
MAX_WAYS = 1000  # ways one list value may say itself


@dataclass(frozen=True)
class Context:
    """A data block's `requires_context` and `excludes_context` ({domain: light}): which of a list's values
    its sentences may say, by each value's own `context:` (`{in: desk lamp, context: {domain: light}}`)."""

    requires: Mapping[str, Any]
    excludes: Mapping[str, Any]

    @staticmethod
    def of(requires: Mapping[str, Any], excludes: Mapping[str, Any]) -> Context:
        """A block's context as written: `domain: {value: light, slot: true}` asks for its `value` (HassIL
        copies what matched into a slot: `copied_slots`), `area: {slot: true}` and `domain:` (any) for nothing
        a list value could tell apart."""
        return Context(_wanted(requires), _wanted(excludes))

    def fits(self, value: Any) -> bool:
        """A value without a context fits anywhere (nothing tells it apart); one with a context fits when
        every key both name agrees. A required mapping (`area: {slot: true}`) asks for nothing here."""
        own = value.get("context") if isinstance(value, Mapping) else None
        if not isinstance(own, Mapping):
            return True
        for key, want in self.requires.items():
            if key in own and not isinstance(want, Mapping) and not _one_of(own[key], want):
                return False
        return not any(key in own and _one_of(own[key], avoid) for key, avoid in self.excludes.items())

    def label(self) -> str:
        """`domain=light` (and `domain!=cover/lock`): the slot name's mark for a list cut to this context."""
        parts = [f"{k}={_joined(w)}" for k, w in self.requires.items() if not isinstance(w, Mapping)]
        parts += [f"{k}!={_joined(w)}" for k, w in self.excludes.items()]
        return re.sub(r"[\s{}()\[\]|@]", "_", ",".join(parts))


def _wanted(context: Mapping[str, Any]) -> dict[str, Any]:
    wanted = {key: want.get("value") if isinstance(want, Mapping) else want for key, want in context.items()}
    return {key: want for key, want in wanted.items() if want is not None}


def copied_slots(requires: Mapping[str, Any]) -> dict[str, Any]:
    """The slots HassIL fills from a required context (`domain: {value: light, slot: true}`: `domain` is
    light; `slot: kind` names the slot), where the value is one and so known here."""
    copied = {}
    for key, want in requires.items():
        if isinstance(want, Mapping) and want.get("slot") and isinstance(want.get("value"), str | int | float | bool):
            copied[want["slot"] if isinstance(want["slot"], str) else key] = want["value"]
    return copied


def _one_of(have: Any, want: Any) -> bool:
    return str(have) in {str(w) for w in (want if isinstance(want, list) else [want])}


def _joined(want: Any) -> str:
    return "/".join(map(str, want)) if isinstance(want, list) else str(want)  # not "+": glued_name's mark


UNSAID = "unsaid"  # `{unsaid@wildcard@timer_name}`: a list a sentence says that has nothing to say here


def lists_named(
    text: str,
    lists: Mapping[str, Any],
    slots: dict[str, Slot],
    where: str,
    context: Context | None = None,
    local: Mapping[str, str] | None = None,
) -> str:
    """`{list}` and `{list:slot}` as seqx slots (`{list}`, `{slot@list}`), each list's values made a slot;
    with a `context`, only the values that fit it (a list cut so is a slot of its own, `name@domain=light`,
    reported as `name`). A list with nothing to say is marked `{unsaid@wildcard@LIST}` (a wildcard given no
    values: Home Assistant's timer names, shopping list items; a command model cannot learn "anything") or
    `{unsaid@unfit@LIST}` (no value fits the context), for the sentence to be said without it. A data block's
    own list (`local`: list -> the block's mark) is a slot of its own too, `level@HassLightSet-2`."""

    def named(m: re.Match) -> str:
        list_name, slot = m.group(1), m.group(2) or m.group(1)
        key = slot if slot == list_name else f"{slot}@{list_name}"
        if local and list_name in local:
            key = f"{key}@{local[list_name]}"
        spec = lists.get(list_name)
        if isinstance(spec, Mapping) and spec.get("wildcard") and not spec.get("values"):
            return "{" + f"{UNSAID}@wildcard@{list_name}" + "}"
        written = _written_values(spec)
        fits = context.fits if context is not None and (context.requires or context.excludes) else None
        kept = sum(1 for value in written if fits(value)) if fits is not None else len(written)
        if written and not kept:
            return "{" + f"{UNSAID}@unfit@{list_name}" + "}"
        cut = kept < len(written)
        if cut:
            key = f"{key}@{context.label()}"  # type: ignore[union-attr]
        if key not in slots:  # each slot's values made once, however many sentences say it
            slots[key] = Slot(key, _values(list_name, lists, where, fits if cut else None))
        return "{" + key + "}"

    return LIST.sub(named, text)


def _written_values(spec: Any) -> list[Any]:
    """A list's `values:` as written ([] for a range, which has no contexts, or a list not given)."""
    values = spec.get("values") if isinstance(spec, Mapping) and "range" not in spec else None
    return values if isinstance(values, list) else []


def _values(
    list_name: str, lists: Mapping[str, Any], where: str, fits: Callable[[Any], bool] | None = None
) -> tuple[SlotValue, ...]:
    """A list's values (those that `fits` keeps: a data block's context)."""
    spec = lists.get(list_name)
    if spec is None:
        raise GrammarError(f"{where}: list {{{list_name}}} has no values here (Home Assistant fills {{name}} and "
                           f"{{area}} at run time): add it under lists: with values:")  # fmt: skip
    if not isinstance(spec, Mapping):
        raise GrammarError(f"{where}: lists: {list_name}: expected values: or range:")
    if spec.get("wildcard") and not spec.get("values"):  # unreached from a sentence: lists_named marks it
        raise GrammarError(f"lists: {list_name}: a wildcard list says anything; a command model needs its values: "
                           f"give it values:")  # fmt: skip
    if "range" in spec:
        return _range_values(yaml_mapping(spec["range"], f"lists: {list_name}: range"), list_name)
    values = spec.get("values")
    if not isinstance(values, list) or not values:
        raise GrammarError(f"lists: {list_name}: expected values: a list")
    return tuple(way for value in values if fits is None or fits(value) for way in _value(value, list_name))


_FRACTIONS = {"halves": (5,), "tenths": tuple(range(1, 10))}  # the tenths each whole number is said with


def _range_values(span: Mapping[str, Any], list_name: str) -> tuple[SlotValue, ...]:
    """A range list's numbers, as HassIL says them: `from`..`to` by `step`, each reported times
    `multiplier` ("50" percent as 0.5); `fractions: halves` adds "twenty point five", `tenths` every
    "twenty point one" .. "point nine", reported as 20.5 and so on (a thermostat's setting)."""
    try:
        first, last, step = int(span["from"]), int(span["to"]), int(span.get("step", 1))
        multiplier = float(span.get("multiplier", 1))
    except (KeyError, TypeError, ValueError):
        raise GrammarError(f"lists: {list_name}: range: expected from:, to: (and step:, multiplier:) numbers") from None
    if step <= 0 or last < first:
        raise GrammarError(f"lists: {list_name}: range: from {first} to {last} by {step} says nothing")
    fractions = span.get("fractions")
    if fractions is not None and fractions not in _FRACTIONS:
        raise GrammarError(f"lists: {list_name}: range: fractions: expected halves or tenths, got {fractions!r}")

    def reported(number: float) -> Output:  # a whole number stays one unless a multiplier is given
        return number if isinstance(number, int) and multiplier == 1 else round(number * multiplier, 6)

    values = []
    for n in range(first, last + 1, step):
        values.append(SlotValue((str(n),), reported(n)))
        if fractions is not None and n < last:
            tenths = _FRACTIONS[fractions]
            values += [SlotValue((str(n), "point", str(t)), reported(n + t / 10)) for t in tenths]
    return tuple(values)


def _value(value: Any, list_name: str) -> list[SlotValue]:
    """ "words", or {in: "words", out: value}: said as `in`, reported as `out`; an `in` written as a
    template (`(max | maximum | highest)`, as Home Assistant's _common.yaml has it) is each way it says."""
    if isinstance(value, Mapping):
        said, out = value.get("in"), value.get("out", value.get("in"))
    else:
        said, out = value, value
    if said is None or not str(said).split():
        raise GrammarError(f"lists: {list_name}: a value says nothing ({value!r})")
    output: Output = out if isinstance(out, str | int | float | bool) else str(out)
    unwritten = output == said  # no `out`: the words said are reported
    said = OPTIONAL_SPACE.sub(" ", str(said))  # `day[ ]light` (_common.yaml) was an error, "empty optional"
    if not TEMPLATE_SYNTAX.search(said):
        words = tuple(said.split())
        return [SlotValue(words, " ".join(words) if unwritten and isinstance(output, str) else output)]
    ways = _ways(parse_template(said, f"lists: {list_name}: '{said}'"), list_name)
    return [SlotValue(words, " ".join(words) if unwritten else output) for words in ways]


def _ways(expr: Expr, list_name: str) -> list[tuple[str, ...]]:
    """Every way a list value's template says it (words only: a list value holds no slot)."""
    if isinstance(expr, Word):
        return [(expr.text,)]
    if isinstance(expr, SlotRef):
        raise GrammarError(f"lists: {list_name}: a value refers to a list ({{{expr.name}}}); write its words")
    if isinstance(expr, Opt):
        return [(), *_ways(expr.item, list_name)]
    if isinstance(expr, Alt):
        return [way for option in expr.options for way in _ways(option, list_name)]
    ways: list[tuple[str, ...]] = [()]
    for item in expr.items:
        ways = [head + tail for head in ways for tail in _ways(item, list_name)]
        if len(ways) > MAX_WAYS:
            raise GrammarError(f"lists: {list_name}: a value says more than {MAX_WAYS} things")
    return [way for way in ways if way]
