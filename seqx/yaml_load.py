"""YAML as seqx reads it: PyYAML's safe loader without base-60 numbers.

YAML 1.1 reads an unquoted `7:30` as the number 450 and `1:30:00` as 5400: a grammar's slot of
times (`time: [6:30, 7:00]`) would be said as "three hundred ninety" and "four hundred twenty"
without a word of warning. Here they stay the text that was written.
"""

from __future__ import annotations

import re
from typing import Any

import yaml

_NUMBERS = ("tag:yaml.org,2002:int", "tag:yaml.org,2002:float")


class _Loader(yaml.SafeLoader):
    """SafeLoader whose int and float patterns never match text holding a ':'."""


_Loader.yaml_implicit_resolvers = {
    first: [
        (tag, re.compile(r"^(?!.*:)(?:" + pattern.pattern + ")", pattern.flags) if tag in _NUMBERS else pattern)
        for tag, pattern in resolvers
    ]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def load_yaml(text: str) -> Any:
    """`yaml.safe_load`, but `7:30` is the text "7:30"."""
    return yaml.load(text, Loader=_Loader)  # a SafeLoader subclass: as safe as safe_load
