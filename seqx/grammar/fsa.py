"""Finite-state acceptors for grammars: build (NFA), determinize, minimize, count.

A command grammar is finite (no repetition, no recursion), so its automata are acyclic.
That makes minimization a single bottom-up pass (two states are equivalent when they
agree on finality and their arcs lead, label by label, to equivalent states: Revuz's
algorithm) and counting a sum over paths. The same code serves the word-level DFA
(labels are words) and the token-level one (labels are token ids).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from dataclasses import dataclass, field


@dataclass
class NFA:
    """States 0..n-1; arcs[s] = [(label or None for epsilon, target)]; start is 0."""

    arcs: list[list[tuple[Hashable | None, int]]] = field(default_factory=lambda: [[]])
    final: set[int] = field(default_factory=set)

    def add_state(self) -> int:
        self.arcs.append([])
        return len(self.arcs) - 1

    def add_arc(self, source: int, label: Hashable | None, target: int) -> None:
        self.arcs[source].append((label, target))

    def add_path(self, source: int, labels: Iterable[Hashable], target: int | None = None) -> int:
        """A chain of arcs from `source` spelling `labels`, ending in `target` (a new state if None)."""
        labels = list(labels)
        state = source
        for i, label in enumerate(labels):
            nxt = target if (i == len(labels) - 1 and target is not None) else self.add_state()
            self.add_arc(state, label, nxt)
            state = nxt
        if not labels:
            if target is None:
                return source
            self.add_arc(source, None, target)
            return target
        return state


@dataclass
class DFA:
    """A deterministic acceptor: arcs[s] maps label -> next state; start is 0."""

    arcs: list[dict[Hashable, int]]
    final: list[bool]
    start: int = 0

    @property
    def num_states(self) -> int:
        return len(self.arcs)

    @property
    def num_arcs(self) -> int:
        return sum(len(a) for a in self.arcs)

    def walk(self, labels: Iterable[Hashable]) -> int | None:
        state = self.start
        for label in labels:
            nxt = self.arcs[state].get(label)
            if nxt is None:
                return None
            state = nxt
        return state

    def accepts(self, labels: Iterable[Hashable]) -> bool:
        state = self.walk(labels)
        return state is not None and self.final[state]

    def count(self) -> int:
        """How many label sequences it accepts: paths to a final state (one per sequence: deterministic)."""
        paths = [0] * self.num_states
        for state in reversed(topological_order(self)):
            paths[state] = int(self.final[state]) + sum(paths[t] for t in self.arcs[state].values())
        return paths[self.start]

    def sequences_with(self, label: Hashable, limit: int) -> list[tuple[Hashable, ...]] | None:
        """Every accepted sequence that uses `label`, or None when there are more than `limit`.

        Counts prune the walk: a branch is followed only while it can still end in a
        sequence with the label, so the work is bounded by `limit` whatever the language's size.
        """
        order = list(reversed(topological_order(self)))
        every, without = [0] * self.num_states, [0] * self.num_states
        for state in order:
            arcs = self.arcs[state].items()
            every[state] = int(self.final[state]) + sum(every[t] for _, t in arcs)
            without[state] = int(self.final[state]) + sum(without[t] for lab, t in arcs if lab != label)
        if every[self.start] - without[self.start] > limit:
            return None
        found: list[tuple[Hashable, ...]] = []
        stack: list[tuple[int, tuple[Hashable, ...], bool]] = [(self.start, (), False)]
        while stack:
            state, prefix, used = stack.pop()
            if used and self.final[state]:
                found.append(prefix)
            for lab, nxt in self.arcs[state].items():
                now_used = used or lab == label
                if (every[nxt] if now_used else every[nxt] - without[nxt]) > 0:
                    stack.append((nxt, prefix + (lab,), now_used))
        return found

    def labels(self) -> set[Hashable]:
        return {label for arcs in self.arcs for label in arcs}


def topological_order(dfa: DFA) -> list[int]:
    """Reachable states, each before every state it leads to; a cycle is a ValueError."""
    order: list[int] = []
    color = [0] * dfa.num_states  # 0 unseen, 1 on the stack, 2 done
    stack: list[tuple[int, list[int]]] = [(dfa.start, sorted(set(dfa.arcs[dfa.start].values())))]
    color[dfa.start] = 1
    while stack:
        state, todo = stack[-1]
        if todo:
            nxt = todo.pop()
            if color[nxt] == 1:
                raise ValueError("the automaton has a cycle: a grammar must be finite")
            if color[nxt] == 0:
                color[nxt] = 1
                stack.append((nxt, sorted(set(dfa.arcs[nxt].values()))))
        else:
            color[state] = 2
            order.append(state)
            stack.pop()
    return order[::-1]


def determinize(nfa: NFA) -> DFA:
    """Subset construction with epsilon closures; DFA state 0 is the closure of NFA state 0."""

    def closure(states: Iterable[int]) -> frozenset[int]:
        seen = set(states)
        todo = list(seen)
        while todo:
            for label, target in nfa.arcs[todo.pop()]:
                if label is None and target not in seen:
                    seen.add(target)
                    todo.append(target)
        return frozenset(seen)

    first = closure([0])
    index = {first: 0}
    subsets = [first]
    arcs: list[dict[Hashable, int]] = []
    final: list[bool] = []
    i = 0
    while i < len(subsets):
        subset = subsets[i]
        moves: dict[Hashable, set[int]] = {}
        for state in subset:
            for label, target in nfa.arcs[state]:
                if label is not None:
                    moves.setdefault(label, set()).add(target)
        row: dict[Hashable, int] = {}
        for label, targets in moves.items():
            nxt = closure(targets)
            if nxt not in index:
                index[nxt] = len(subsets)
                subsets.append(nxt)
            row[label] = index[nxt]
        arcs.append(row)
        final.append(any(s in nfa.final for s in subset))
        i += 1
    return DFA(arcs, final)


def minimize(dfa: DFA) -> DFA:
    """The minimal equivalent acyclic DFA (dead states dropped), states numbered breadth-first from 0."""
    order = topological_order(dfa)
    useful = [False] * dfa.num_states  # can reach a final state
    for state in reversed(order):
        useful[state] = dfa.final[state] or any(useful[t] for t in dfa.arcs[state].values())
    cls: dict[int, int] = {}
    signatures: dict[tuple, int] = {}
    for state in reversed(order):  # targets before sources: their classes are known
        if not useful[state]:
            continue
        sig = (dfa.final[state], tuple(sorted(((lab, cls[t]) for lab, t in dfa.arcs[state].items() if useful[t]),
                                              key=lambda x: (str(type(x[0])), x[0]))))
        cls[state] = signatures.setdefault(sig, len(signatures))
    if dfa.start not in cls:  # accepts nothing
        return DFA([{}], [False])
    by_class = {c: s for s, c in cls.items()}  # one representative per class
    number = {cls[dfa.start]: 0}
    queue = [cls[dfa.start]]
    arcs: list[dict[Hashable, int]] = []
    final: list[bool] = []
    for c in queue:
        rep = by_class[c]
        row: dict[Hashable, int] = {}
        for label, target in sorted(dfa.arcs[rep].items(), key=lambda x: (str(type(x[0])), x[0])):
            if not useful[target]:
                continue
            tc = cls[target]
            if tc not in number:
                number[tc] = len(queue)
                queue.append(tc)
            row[label] = number[tc]
        arcs.append(row)
        final.append(dfa.final[rep])
    return DFA(arcs, final)
