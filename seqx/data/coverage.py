"""The grammar's words that no training utterance says, told before the corpus is rendered.

Sentences are drawn, never listed, so a slot of 1,000 songs in a corpus of a few thousand utterances
leaves many songs unsaid, and a word the model never heard is seldom understood (docs/benchmarks.md
"Words never said in training"). Counted on the plans, before synthesis: the user can raise
`data.size` without waiting for a corpus that was too small.
"""

from __future__ import annotations

from collections.abc import Iterable

from seqx.grammar.model import Grammar

SHOWN_WORDS = 5  # examples named in the warning


def unheard_words(grammar: Grammar, said: Iterable[str]) -> list[str]:
    """The grammar's words (as written) that none of the texts `said` holds, sorted."""
    heard = {word for text in said for word in text.split()}
    return [word for word in grammar.vocabulary() if word not in heard]


def unheard_warning(grammar: Grammar, said: Iterable[str], size: int) -> str | None:
    """One line naming the words training never says and the slots they are in; None when it says all."""
    missing = unheard_words(grammar, said)
    if not missing:
        return None
    unheard = set(missing)
    slots = []
    for name in grammar.used_slots():
        values = grammar.slots[name].values
        short = sum(any(word in unheard for word in value.words) for value in values)
        if short:
            slots.append(f"slot {name}: {short:,} of its {len(values):,} values")
    shown = ", ".join(repr(w) for w in missing[:SHOWN_WORDS]) + (", ..." if len(missing) > SHOWN_WORDS else "")
    where = f"; {'; '.join(slots)}" if slots else ""
    return (
        f"{len(missing):,} of the grammar's {len(grammar.vocabulary()):,} words are never said in training "
        f"({shown}{where}): a word the model never heard is seldom understood; raise data.size (now {size:,})"
    )
