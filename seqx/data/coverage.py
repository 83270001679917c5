"""The grammar's words that training seldom or never writes, told before the corpus is rendered.

Sentences are drawn, never listed, so a slot of 1,000 songs in a corpus of a few thousand utterances
leaves many songs said once or not at all, and a word the model seldom heard is seldom understood:
with one model, commands right were 0 of 40 for words never in training, 2 of 80 for words in one or
two utterances, 16 of 80 for three to five and 29 of 80 for six or more (docs/benchmarks.md "Words
training seldom says"). Counted on the plans' transcripts (a command cut off at its start is heard but
not written; out-of-grammar strings of the grammar's words are written), before synthesis: the user
can raise `data.size` without waiting for a corpus too small.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from seqx.grammar.model import Grammar

RARELY = 3  # a word in fewer training transcripts than this is warned of
SHOWN_WORDS = 5  # examples named in the warning


def seldom_written(grammar: Grammar, transcripts: Iterable[str]) -> dict[str, int]:
    """The grammar's words (as written) in fewer than RARELY of the transcripts, with how many, fewest first."""
    counts = Counter(word for text in transcripts for word in set(text.split()))
    rare = {word: counts[word] for word in grammar.vocabulary() if counts[word] < RARELY}
    return dict(sorted(rare.items(), key=lambda item: (item[1], item[0])))


def seldom_warning(grammar: Grammar, transcripts: Iterable[str], size: int) -> str | None:
    """One line naming the words training seldom writes and the slots they are in; None when it writes
    every word often enough."""
    rare = seldom_written(grammar, transcripts)
    if not rare:
        return None
    slots = []
    for name in grammar.used_slots():
        values = grammar.slots[name].values
        short = sum(any(word in rare for word in value.words) for value in values)
        if short:
            slots.append(f"slot {name}: {short:,} of its {len(values):,} values")
    never = sum(count == 0 for count in rare.values())
    shown = ", ".join(repr(w) for w in list(rare)[:SHOWN_WORDS]) + (", ..." if len(rare) > SHOWN_WORDS else "")
    where = f"; {'; '.join(slots)}" if slots else ""
    return (
        f"{len(rare):,} of the grammar's {len(grammar.vocabulary()):,} words are in fewer than {RARELY} training "
        f"commands, {never:,} in none ({shown}{where}): a word the model seldom heard is seldom understood; "
        f"raise data.size (now {size:,})"
    )
