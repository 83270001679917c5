"""The command grammar: templates with {slot} placeholders, every combination a command.

>>> expand_grammar(["open the {thing}", "stop"], {"thing": ["browser", "music"]})
['open the browser', 'open the music', 'stop']
"""

from __future__ import annotations

import itertools
import string

from seqx.errors import SeqxError


def template_slots(template: str) -> list[str]:
    return [name for _, name, _, _ in string.Formatter().parse(template) if name]


def expand_grammar(templates: list[str], slots: dict[str, list[str]]) -> list[str]:
    """Every distinct command the grammar makes, sorted; unknown slots are an error naming them."""
    commands: set[str] = set()
    for template in templates:
        names = template_slots(template)
        missing = [n for n in names if n not in slots]
        if missing:
            raise SeqxError(f"data.synth.templates: '{template}' uses unknown slot(s) {', '.join(missing)}")
        for values in itertools.product(*(slots[n] for n in names)):
            text = template.format(**dict(zip(names, values)))
            commands.add(" ".join(text.split()))
    return sorted(commands)


def vocabulary(commands: list[str]) -> list[str]:
    return sorted({word for command in commands for word in command.split()})
