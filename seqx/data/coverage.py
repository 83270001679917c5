"""The grammar's words that training seldom or never writes, told before the corpus is rendered.

Sentences are drawn, never listed, so a slot of 1,000 songs in a corpus of a few thousand utterances
leaves many songs said once or not at all, and a word the model seldom heard is seldom understood:
with one model, commands right were 0 of 40 for words never in training, 2 of 80 for words in one or
two utterances, 16 of 80 for three to five and 29 of 80 for six or more (docs/benchmarks.md "Words
training seldom says"). Counted on the plans' transcripts (a command cut off at its start is heard but
not written; out-of-grammar strings of the grammar's words are written), before synthesis: the user
can raise `data.size` without waiting for a corpus too small. Words are counted as said (`Grammar.spoken`):
Home Assistant's `{volume}[%| percent]` writes a hundred words "1percent" ... "100percent", which are all
"percent" and a number's words to the model (the warning asked for 16,000 utterances, not 3,000).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable

from seqx.grammar.model import Grammar
from seqx.grammar.summary import as_decoded
from seqx.grammar.syntax import written_slot

RARELY = 3  # a word in fewer training transcripts than this is warned of
SHOWN_WORDS = 5  # examples named in the warning


WELL_HEARD = 6  # training commands a word was in where it was understood best (the module's figures)


def written_counts(transcripts: Iterable[str]) -> Counter[str]:
    """How many of the transcripts write each word."""
    return Counter(word for text in transcripts for word in set(text.split()))


def seldom_written(grammar: Grammar, counts: Counter[str]) -> dict[str, int]:
    """The grammar's words (as written) in fewer than RARELY transcripts, with how many, fewest first."""
    rare = {word: counts[word] for word in grammar.vocabulary() if counts[word] < RARELY}
    return dict(sorted(rare.items(), key=lambda item: (item[1], item[0])))


def seldom_warning(grammar: Grammar, transcripts: Iterable[str], size: int) -> str | None:
    """One line naming the words training seldom writes and the slots they are in, and the `data.size`
    that would say a value of the slot heard least WELL_HEARD times on average; None when training
    writes every word often enough."""
    grammar, spelling = as_decoded(grammar)
    said: dict[str, str] = {}  # a command drawn twice is spelled once

    def spelled(text: str) -> str:
        if text not in said:
            said[text] = spelling(text)
        return said[text]

    counts = written_counts(spelled(text) for text in transcripts)  # one pass: `transcripts` may be a generator
    rare = seldom_written(grammar, counts)
    if not rare:
        return None
    slots, least = [], None
    for name in grammar.used_slots():
        values = grammar.slots[name].values
        short = sum(any(word in rare for word in value.words) for value in values)
        told = f"slot {written_slot(name)}: {short:,} of its {len(values):,} values"
        if short and told not in slots:  # a slot written with words glued on ("{minutes}minute[s]") is told once
            slots.append(told)
            heard = sum(min(counts[word] for word in value.words) for value in values) / len(values)
            least = heard if least is None else min(least, heard)
    never = sum(count == 0 for count in rare.values())
    shown = ", ".join(repr(w) for w in list(rare)[:SHOWN_WORDS]) + (", ..." if len(rare) > SHOWN_WORDS else "")
    where = f"; {'; '.join(slots)}" if slots else ""
    wanted = math.ceil(size * WELL_HEARD / least / 1000) * 1000 if least else 0
    to = f" to about {wanted:,}" if wanted > size else ""  # slots heard well enough: the rare words are elsewhere
    return (
        f"{len(rare):,} of the grammar's {len(grammar.vocabulary()):,} words are in fewer than {RARELY} training "
        f"commands, {never:,} in none ({shown}{where}): a word the model seldom heard is seldom understood; "
        f"raise data.size{to} (now {size:,})"
    )
