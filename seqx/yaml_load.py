"""YAML as seqx reads it: PyYAML's safe loader without base-60 numbers and without yes/no/on/off booleans.

YAML 1.1 reads an unquoted `7:30` as the number 450 and `1:30:00` as 5400: a grammar's slot of
times (`time: [6:30, 7:00]`) would be said as "three hundred ninety" and "four hundred twenty"
without a word of warning. Here they stay the text that was written.

YAML 1.1 also reads an unquoted `yes`, `no`, `on` and `off` as booleans: a confirmation grammar
(`intents: {yes: [yes, yeah], no: [no, nope]}`) became intents named "True" and "False" whose
commands were the words "true" and "false", and `state: [on, off]` an error. Here they are words, as
YAML 1.2 has them; `true` and `false` are still booleans, and the recipe's settings still take
`train.compile: yes` (pydantic reads "yes" as true).
"""

from __future__ import annotations

import re
from typing import Any

import yaml

_NUMBERS = ("tag:yaml.org,2002:int", "tag:yaml.org,2002:float")
_BOOL = "tag:yaml.org,2002:bool"
_BOOL_1_2 = re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$")


class _Loader(yaml.SafeLoader):
    """SafeLoader whose numbers never hold a ':' and whose booleans are true and false alone."""


def _resolver(tag: str, pattern: re.Pattern[str]) -> re.Pattern[str]:
    if tag in _NUMBERS:
        return re.compile(r"^(?!.*:)(?:" + pattern.pattern + ")", pattern.flags)
    return _BOOL_1_2 if tag == _BOOL else pattern


_Loader.yaml_implicit_resolvers = {
    first: [(tag, _resolver(tag, pattern)) for tag, pattern in resolvers]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def load_yaml(text: str) -> Any:
    """`yaml.safe_load`, but `7:30` is the text "7:30" and `on` the word "on"."""
    return yaml.load(text, Loader=_Loader)  # a SafeLoader subclass: as safe as safe_load
