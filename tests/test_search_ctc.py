"""The vectorized CTC prefix scorer equals a brute-force sum over every alignment."""

from __future__ import annotations

import itertools
import math

import torch

from seqx.decode.ctc_prefix import CTCPrefixScorer

T, V, BLANK = 4, 3, 0


def collapse(path: tuple[int, ...]) -> tuple[int, ...]:
    out: list[int] = []
    prev = None
    for s in path:
        if s != prev and s != BLANK:
            out.append(s)
        prev = s
    return tuple(out)


def brute(logp: torch.Tensor, length: int, prefix: tuple[int, ...], exact: bool) -> float:
    """log of the summed probability of all alignments whose labels start with (or equal) prefix."""
    total = 0.0
    for path in itertools.product(range(V), repeat=length):
        labels = collapse(path)
        if (labels == prefix) if exact else (labels[: len(prefix)] == prefix):
            total += math.exp(sum(logp[t, s].item() for t, s in enumerate(path)))
    return math.log(total) if total > 0 else float("-inf")


def test_prefix_scores_equal_brute_force() -> None:
    torch.manual_seed(0)
    logp = torch.randn(2, T, V).log_softmax(-1)  # row 1 is padded: only 3 real frames
    lens = torch.tensor([T, 3])
    scorer = CTCPrefixScorer(logp, lens, BLANK)
    state = scorer.initial_state()
    cand = torch.tensor([[1, 2], [1, 2]])
    for prefix in [(), (1,), (1, 2), (1, 2, 2)]:
        if prefix:  # extend both rows by the prefix's last label
            psi, r = scorer.score(cand, state)
            pos = torch.full((2,), prefix[-1] - 1)
            state = scorer.select(state, r, psi, torch.arange(2), pos, torch.full((2,), prefix[-1]))
        psi, _ = scorer.score(cand, state)
        final = scorer.final(state)
        for row in range(2):
            n = int(lens[row])
            for j, c in enumerate(cand[row].tolist()):
                expected = brute(logp[row], n, (*prefix, c), exact=False)
                if math.isinf(expected):
                    assert math.isinf(psi[row, j].item())
                else:
                    assert abs(psi[row, j].item() - expected) < 1e-5, (row, prefix, c)
            expected = brute(logp[row], n, prefix, exact=True)
            got = final[row].item()
            assert (math.isinf(got) and math.isinf(expected)) or abs(got - expected) < 1e-5
        assert abs(state.psi[0].item() - brute(logp[0], T, prefix, exact=False)) < 1e-5
