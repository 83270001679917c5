"""GrammarError: a grammar that cannot be used, as one line naming the file, line and problem."""

from __future__ import annotations

from seqx.errors import RecipeError, SeqxError


class GrammarError(RecipeError, SeqxError):
    """A bad grammar (unknown slot, unbalanced bracket, undefined JSGF rule ...).

    A RecipeError too: the grammar is part of what the user wrote, so the CLI exits 2 for it,
    as for any other bad setting.
    """
