"""GrammarError: a grammar that cannot be used, as one line naming the file, line and problem."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from seqx.errors import RecipeError, SeqxError


class GrammarError(RecipeError, SeqxError):
    """A bad grammar (unknown slot, unbalanced bracket, undefined JSGF rule ...).

    A RecipeError too: the grammar is part of what the user wrote, so the CLI exits 2 for it,
    as for any other bad setting.
    """


def yaml_mapping(value: Any, where: str) -> Mapping[str, Any]:
    """A section of a grammar's YAML that must be a mapping ({} when absent), or the error that says where."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise GrammarError(f"{where}: expected a mapping")
    return value
