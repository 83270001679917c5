"""The grammar over the tokenizer's pieces: a dense next-state table a beam search can gather from.

Each word arc of the minimal word DFA becomes the path of that word's sentencepiece
segmentation (sentencepiece splits on whitespace first, so a sentence's pieces are its
words' pieces one after another, each word starting with a `▁` piece); the result is
determinized and minimized again, so its size follows the grammar's description, not
its sentence count. Only the canonical segmentation of each sentence (the one
`tokenizer.encode` gives, which the model is trained on) is accepted.

Table: `next_state[s, v]` is the state after token v in state s, or -1 when v may not
follow. End of sentence is an ordinary column: `next_state[s, eos_id] == s` in a final
state (eos keeps the state, so a finished hypothesis can keep being extended with eos),
-1 elsewhere; a scorer needs only `next_state[state] >= 0` as its mask, eos included.
`final[s]` says the same thing as a bool. The other special tokens (pad, unk, bos,
CTC blank) are -1 everywhere.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

import torch

from seqx.grammar.errors import GrammarError
from seqx.grammar.fsa import DFA, NFA, determinize, minimize
from seqx.grammar.model import Grammar


class Spelling(Protocol):
    """What compile_tokens needs of a tokenizer (seqx.tokenize.tokenizer.Tokenizer has it)."""

    eos_id: int
    unk_id: int
    special_ids: set[int]

    @property
    def vocab_size(self) -> int: ...

    def encode(self, text: str) -> list[int]: ...


@dataclass
class TokenAutomaton:
    next_state: torch.Tensor  # (S, V) int64, -1 = not allowed
    final: torch.Tensor  # (S,) bool
    eos_id: int
    start: int = 0

    @property
    def num_states(self) -> int:
        return int(self.next_state.shape[0])

    @property
    def vocab_size(self) -> int:
        return int(self.next_state.shape[1])

    @property
    def num_arcs(self) -> int:
        """Token arcs, end-of-sentence self-loops not counted."""
        return int((self.next_state >= 0).sum()) - int(self.final.sum())

    def to(self, device: torch.device | str) -> TokenAutomaton:
        return TokenAutomaton(self.next_state.to(device), self.final.to(device), self.eos_id, self.start)

    def step(self, state: int, token: int) -> int:
        return int(self.next_state[state, token])

    def allowed(self, states: torch.Tensor) -> torch.Tensor:
        """(B,) states -> (B, V) bool: which tokens may come next (eos in final states); none after -1."""
        rows = self.next_state[states.clamp(min=0)]  # (B, V): one gather
        return (rows >= 0) & (states >= 0).unsqueeze(-1)

    def advance(self, states: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
        """(B,) states, (B,) tokens -> (B,) next states; -1 for a token not allowed (and after -1)."""
        nxt = self.next_state[states.clamp(min=0), tokens]
        return torch.where(states >= 0, nxt, torch.full_like(nxt, -1))

    def count(self) -> int:
        """Token sequences accepted (eos aside): equals the grammar's sentence count."""
        table = self.next_state.clone()
        table[:, self.eos_id] = -1
        paths = [0] * self.num_states
        order = _topological(table, self.start)
        for state in reversed(order):
            targets = table[state][table[state] >= 0].tolist()
            paths[state] = int(self.final[state]) + sum(paths[t] for t in targets)
        return paths[self.start]

    def accepts(self, ids: list[int]) -> bool:
        """True when `ids` (no bos; an eos allowed only as the last id) spell a sentence of the grammar."""
        ids = [int(i) for i in ids]
        if ids and ids[-1] == self.eos_id:
            ids = ids[:-1]
        state = self.start
        for token in ids:
            if token == self.eos_id or not 0 <= token < self.vocab_size:
                return False
            state = int(self.next_state[state, token])
            if state < 0:
                return False
        return bool(self.final[state])

    def to_dict(self) -> dict[str, Any]:
        """Plain lists (arcs, not the dense table): what a bundle's JSON can hold."""
        table = self.next_state.cpu()
        arcs = (table >= 0).nonzero().tolist()
        return {
            "num_states": self.num_states,
            "vocab_size": self.vocab_size,
            "eos_id": self.eos_id,
            "start": self.start,
            "arcs": [[s, v, int(table[s, v])] for s, v in arcs if v != self.eos_id],
            "final": self.final.cpu().nonzero().flatten().tolist(),
        }

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> TokenAutomaton:
        return _table(raw["num_states"], raw["vocab_size"], raw["eos_id"], raw["arcs"], raw["final"], raw["start"])


def _topological(table: torch.Tensor, start: int) -> list[int]:
    from seqx.grammar.fsa import DFA, topological_order

    rows = table.tolist()
    arcs = [{v: t for v, t in enumerate(row) if t >= 0} for row in rows]
    return topological_order(DFA(arcs, [False] * len(arcs), start))


def word_pieces(word: str, tokenizer: Spelling) -> list[int]:
    """A word's token ids; a word the tokenizer cannot spell is a GrammarError naming it."""
    ids = tokenizer.encode(word)
    if not ids or tokenizer.unk_id in ids or any(i in tokenizer.special_ids for i in ids):
        raise GrammarError(f"the tokenizer cannot spell the grammar word '{word}' (it has no pieces for it); "
                           f"retrain the tokenizer with this grammar, or change the word")
    return ids


def compile_tokens(grammar: Grammar | DFA, tokenizer: Spelling) -> TokenAutomaton:
    """The minimal token-level acceptor of the grammar, as a dense (states, vocab) table."""
    words = grammar.word_dfa() if isinstance(grammar, Grammar) else grammar
    spelled = {w: word_pieces(str(w), tokenizer) for w in words.labels()}
    nfa = NFA(arcs=[[] for _ in range(words.num_states)], final={s for s, f in enumerate(words.final) if f})
    # word DFA state s is NFA state s; its start is 0 as the NFA's must be
    assert words.start == 0
    for state, arcs in enumerate(words.arcs):
        for word, target in arcs.items():
            nfa.add_path(state, spelled[word], target)
    dfa = minimize(determinize(nfa))
    arcs = [[s, v, t] for s, row in enumerate(dfa.arcs) for v, t in row.items()]
    final = [s for s, f in enumerate(dfa.final) if f]
    return _table(dfa.num_states, tokenizer.vocab_size, tokenizer.eos_id, arcs, final, 0)


def _table(num_states: int, vocab_size: int, eos_id: int, arcs: list, final: list, start: int) -> TokenAutomaton:
    table = torch.full((num_states, vocab_size), -1, dtype=torch.long)
    if arcs:
        index = torch.tensor(arcs, dtype=torch.long)
        table[index[:, 0], index[:, 1]] = index[:, 2]
    is_final = torch.zeros(num_states, dtype=torch.bool)
    if final:
        states = torch.tensor(final, dtype=torch.long)
        is_final[states] = True
        table[states, eos_id] = states  # eos: allowed in final states only, and keeps the state
    return TokenAutomaton(table, is_final, eos_id, start)
