"""The grammar scorer: beam search that can only say a sentence of the grammar.

Each of the N = batch x beam hypotheses carries one state of the grammar's token automaton
(seqx/grammar/tokens.py) in an (N,) LongTensor. `score` is one gather of a precomputed
(states, vocab) table of 0 (the token may follow) and -inf (it may not); eos is a column
like any other, allowed only in final states. `select` moves the states with one gather of
the next-state table. No Python runs per hypothesis.

A dead state (-1) can only be reached by a token scored -inf; such a slot is dead in the
search too (`_Beam.topk` never extends it), and its row scores -inf everywhere here, so it
can never come back, whatever the other scorers say. When an utterance has fewer allowed
continuations than beam slots, the surplus slots take -inf picks and die the same way.
"""

from __future__ import annotations

import torch
from torch import Tensor

from seqx.grammar.tokens import TokenAutomaton

NEG_INF = float("-inf")


class GrammarScorer:
    """A full scorer (weight 1): 0 for tokens the grammar allows next, -inf for the others."""

    partial = False

    def __init__(self, automaton: TokenAutomaton, weight: float = 1.0) -> None:
        self.automaton = automaton
        self.weight = weight
        table = automaton.next_state
        # one row more: the dead state -1 indexes it and finds -inf everywhere
        dead = torch.full((1, table.shape[1]), -1, dtype=table.dtype, device=table.device)
        self.next_state = torch.cat([table, dead])  # (S + 1, V); row -1 = dead
        self.mask = torch.where(self.next_state >= 0, 0.0, NEG_INF)  # (S + 1, V) float32

    def init(self, rows: int) -> None:
        self.state = torch.full((rows,), self.automaton.start, dtype=torch.long, device=self.mask.device)

    def score(self, cand: Tensor | None = None) -> Tensor:
        return self.mask[self.state]  # (N, V): one gather

    def select(self, rows: Tensor | None, tokens: Tensor) -> None:
        state = self.state if rows is None else self.state[rows]
        self.state = self.next_state[state, tokens]  # -1 stays -1 (the dead row maps to -1)


def accepted(automaton: TokenAutomaton, tokens: list[int]) -> bool:
    """Whether a finished hypothesis's tokens (no eos) are a sentence of the grammar."""
    return automaton.accepts(tokens)
