"""The intent/slot heads' classes, and the rescoring of a constrained n-best by them, torch-free.

The seq2seq decoder tends to say a fluent command of the grammar whatever it heard ("set a
timer for sixty minutes" for "... sixteen ..."). The heads (seqx/model/slot_head.py) are a
second, audio-grounded vote: per slot of the grammar (and one for the intent) an
attention-pooled classifier over the encoder output, trained jointly with CTC and attention.
At decode time each n-best hypothesis of the grammar-constrained beam is parsed, and
`decode.slot_weight` times the heads' log-probability of that parse (every head: its value,
or "none" for a slot the sentence does not use) is added to its score before re-ranking.

This module is the one description of the heads' classes: training labels (`labels`), the
bundle's and the export's record of them (`to_json` / `from_json`), and the rescoring, shared
by the torch path (seqx/decode/transcribe.py) and the runtime (seqx/runtime/): numpy only.

Layout: head 0 is the intent, then one head per slot key a parse can hold (a slot used twice
in a template: `name`, `name_2`, as Parse.slots). Class 0 of every head is "none"; the
heads' log-probs come as one flat vector per utterance, the heads' blocks end to end.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

if TYPE_CHECKING:
    from seqx.decode.result import Hypothesis
    from seqx.grammar.model import Grammar, Output, Parse

IGNORE = -100  # the label of an utterance the grammar does not parse: no loss (torch's ignore_index)
INTENT = "intent"  # head 0's name in records; slot heads are named by their Parse.slots key


def _key(value: Any) -> str:
    """A value's identity across types (1, 1.0 and True hash alike in Python; JSON tells them apart)."""
    return json.dumps(value, sort_keys=True)


@dataclass(frozen=True)
class HeadLayout:
    """The heads' classes: `intents` (head 0), then `slots` as (key, values) (heads 1..)."""

    intents: tuple[str, ...]
    slots: tuple[tuple[str, tuple[Output, ...]], ...]

    @classmethod
    def from_grammar(cls, grammar: Grammar) -> HeadLayout:
        """One head per intent set and per slot key any template can fill, values deduplicated
        by output (two phrasings with one output are one class: the parse cannot tell them apart)."""
        keys: dict[str, list[str]] = {}  # Parse.slots key -> the slots it reports, in grammar order
        from seqx.grammar.syntax import reported_name, slot_refs

        for template in grammar.templates:
            seen: dict[str, int] = {}
            for name in slot_refs(template.expr):
                said = reported_name(name)  # `device@lights` and `device@tv` both fill `device`
                seen[said] = seen.get(said, 0) + 1
                names = keys.setdefault(said if seen[said] == 1 else f"{said}_{seen[said]}", [])
                if name not in names:
                    names.append(name)
        slots = []
        for key, names in keys.items():
            outputs: dict[str, Output] = {}
            for value in (v for name in names for v in grammar.slots[name].values):
                outputs.setdefault(_key(value.output), value.output)
            slots.append((key, tuple(outputs.values())))
        return cls(tuple(grammar.intents), tuple(slots))

    # -- shape --
    @property
    def sizes(self) -> tuple[int, ...]:
        """Classes of each head, "none" included: what the model's classifiers are built with."""
        return (len(self.intents) + 1, *(len(values) + 1 for _, values in self.slots))

    @property
    def names(self) -> tuple[str, ...]:
        return (INTENT, *(key for key, _ in self.slots))

    def offsets(self) -> np.ndarray:
        """Where each head's block starts in the flat log-prob vector (and its end, last)."""
        return np.concatenate([[0], np.cumsum(self.sizes)]).astype(np.int64)

    # -- classes of a parse --
    def classes(self, parse: Parse | None) -> list[int]:
        """Each head's class for a parse; a missing parse is "none" everywhere (class 0)."""
        if parse is None:
            return [0] * len(self.sizes)
        index = self._index
        out = [index[0].get(_key(parse.intent), 0)]
        for h, (key, _) in enumerate(self.slots, start=1):
            out.append(index[h].get(_key(parse.slots[key]), 0) if key in parse.slots else 0)
        return out

    def labels(self, parse: Parse | None) -> list[int]:
        """Training targets: `classes`, or IGNORE on every head when the text has no parse (an
        out-of-grammar or empty training utterance teaches the heads nothing either way)."""
        return [IGNORE] * len(self.sizes) if parse is None else self.classes(parse)

    @property
    def _index(self) -> list[dict[str, int]]:
        found = self.__dict__.get("_cached_index")
        if found is None:
            found = [{_key(v): i + 1 for i, v in enumerate(self.intents)}]
            found += [{_key(v): i + 1 for i, v in enumerate(values)} for _, values in self.slots]
            object.__setattr__(self, "_cached_index", found)
        return found

    def log_prob(self, parse: Parse | None, logprobs: np.ndarray) -> float:
        """Sum over heads of log p(the parse's class): the heads' belief in this reading."""
        starts = self.offsets()[:-1]
        picks = starts + np.asarray(self.classes(parse), dtype=np.int64)
        return float(np.asarray(logprobs, dtype=np.float64)[picks].sum())

    def decode(self, logprobs: np.ndarray) -> dict[str, Output | None]:
        """What the heads alone say: each head's most likely class (None for "none")."""
        ends = self.offsets()
        choices: list[Sequence[Any]] = [self.intents, *(values for _, values in self.slots)]
        out: dict[str, Output | None] = {}
        for h, name in enumerate(self.names):
            best = int(np.argmax(logprobs[ends[h] : ends[h + 1]]))
            out[name] = None if best == 0 else choices[h][best - 1]
        return out

    # -- storage: what a bundle and an export keep --
    def to_json(self) -> dict[str, Any]:
        return {"intents": list(self.intents), "slots": [[key, list(values)] for key, values in self.slots]}

    @classmethod
    def from_json(cls, raw: dict[str, Any] | None) -> HeadLayout | None:
        if not raw:
            return None
        return cls(tuple(raw["intents"]), tuple((str(key), tuple(values)) for key, values in raw["slots"]))


class Parser(Protocol):
    def parse(self, text: str) -> Parse | None: ...


@dataclass(frozen=True)
class Rescorer:
    """What rescoring needs besides the heads' output: their layout, the grammar that parses
    hypotheses (the one the heads were built from) and `decode.slot_weight`."""

    layout: HeadLayout
    grammar: Parser
    weight: float

    def rerank(
        self, hyps: list[Hypothesis], logprobs: np.ndarray, detokenize: Callable[[list[int]], str], nbest: int
    ) -> list[Hypothesis]:
        """The n-best with each hypothesis's `slot_score` set, ranked by score + weight * slot_score
        (proper endings before flagged ones, as `rank` does; ties keep the beam's order), cut to
        `nbest`. The beam's own `score` is left as it was: the rejection checks (CTC gap, joint
        gap to the free beam) measure the chosen sentence by the model's scores alone."""
        for hyp in hyps:
            hyp.slot_score = self.layout.log_prob(self.grammar.parse(detokenize(hyp.tokens)), logprobs)
        ranked = sorted(hyps, key=lambda h: (h.flagged, -(h.score + self.weight * float(h.slot_score or 0.0))))
        return ranked[:nbest]


def rerank_all(
    rescorer: Rescorer | None,
    nbests: list[list[Hypothesis]],
    logprobs: np.ndarray | None,
    detokenize: Callable[[list[int]], str],
    nbest: int,
) -> list[list[Hypothesis]]:
    """Every utterance's n-best reranked (both decode paths call this after their search);
    unchanged when there is no rescorer or no heads output."""
    if rescorer is None or logprobs is None:
        return nbests
    return [rescorer.rerank(hyps, logprobs[k], detokenize, nbest) for k, hyps in enumerate(nbests)]


__all__ = ["IGNORE", "INTENT", "HeadLayout", "Rescorer", "rerank_all"]
