"""Vectorized CTC prefix scoring over (batch x beam) hypotheses (Watanabe et al. 2017, ESPnet's CTCPrefixScoreTH).

For a prefix g the scorer keeps, per frame t, the log-probabilities that the CTC
paths over frames 0..t collapse to exactly g and end in a non-blank (r_n) or a blank
(r_b). Extending g by a candidate c gives the prefix probability

    psi(g + c) = sum_t phi_{t-1}(g, c) * p_t(c),  phi = r_n + r_b, or r_b when c == last(g)

i.e. the probability that the CTC output *starts with* g + c. The full-sequence
probability of g (used when the decoder proposes eos) is r_n + r_b at the last
frame. Frames past an utterance's length are set to "blank with probability 1",
so the recursions carry their values through the padding unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from seqx.model.attention import make_pad_mask

NEG_INF = float("-inf")


@dataclass
class CTCPrefixState:
    r: Tensor  # (T, 2, N) log r_n, r_b of each hypothesis's prefix at every frame
    psi: Tensor  # (N,) log prefix probability of each hypothesis
    last: Tensor  # (N,) last token of the prefix, -1 when empty
    length: int  # tokens in the prefixes (all hypotheses grow in step)


class CTCPrefixScorer:
    """Scores candidate extensions of N prefixes at once.

    logprobs (N, T, V) float32 CTC log-posteriors, lens (N,) valid frames per row.
    Usage: `state = scorer.initial_state()`; each step `psi, r = scorer.score(cand, state)`
    for candidates (N, C); after the beam picks, `state = scorer.select(state, r, psi, rows, pos, tokens)`.
    """

    def __init__(self, logprobs: Tensor, lens: Tensor, blank: int) -> None:
        N, T, V = logprobs.shape
        x = logprobs.float().transpose(0, 1).clone()  # (T, N, V)
        pad = make_pad_mask(lens, T).transpose(0, 1)  # (T, N)
        x.masked_fill_(pad[..., None], NEG_INF)
        x[..., blank].masked_fill_(pad, 0.0)  # past the end: blank with probability 1
        self.x, self.blank, self.T = x, blank, T

    def initial_state(self) -> CTCPrefixState:
        T, N, _ = self.x.shape
        r = torch.full((T, 2, N), NEG_INF, device=self.x.device)
        r[:, 1] = torch.cumsum(self.x[:, :, self.blank], dim=0)  # the empty prefix: blanks only
        zeros = torch.zeros(N, device=self.x.device)
        return CTCPrefixState(r, zeros, torch.full((N,), -1, dtype=torch.long, device=self.x.device), 0)

    def final(self, state: CTCPrefixState) -> Tensor:
        """(N,) log p(the whole CTC output is exactly the prefix): what eos scores."""
        return torch.logaddexp(state.r[-1, 0], state.r[-1, 1])

    def score(self, cand: Tensor, state: CTCPrefixState) -> tuple[Tensor, Tensor]:
        """cand (N, C) token ids -> (psi (N, C) log prefix probabilities of g + c, r (T, 2, N, C))."""
        T = self.T
        N, C = cand.shape
        xc = self.x.gather(2, cand[None].expand(T, N, C))  # (T, N, C)
        r_sum = torch.logaddexp(state.r[:, 0], state.r[:, 1])  # (T, N)
        # a repeated label needs a blank in between: only paths ending in blank may extend it
        same = cand == state.last[:, None]  # (N, C)
        phi = torch.where(same[None], state.r[:, 1, :, None], r_sum[..., None])  # (T, N, C)
        r = torch.full((T, 2, N, C), NEG_INF, device=xc.device)
        if state.length == 0:
            r[0, 0] = xc[0]  # the first label may be emitted at frame 0
        start = max(state.length, 1)  # a prefix of L + 1 labels cannot end before frame L
        xb = self.x[:, :, self.blank, None]  # (T, N, 1)
        for t in range(start, T):
            r[t, 0] = torch.logaddexp(r[t - 1, 0], phi[t - 1]) + xc[t]
            r[t, 1] = torch.logaddexp(r[t - 1, 0], r[t - 1, 1]) + xb[t]
        emit = phi[start - 1 : T - 1] + xc[start:T]  # (T - start, N, C): first emission of c at t
        psi = torch.logsumexp(torch.cat([emit, r[start - 1, 0][None]], dim=0), dim=0)  # (N, C)
        return psi, r

    def select(
        self, state: CTCPrefixState, r: Tensor, psi: Tensor, rows: Tensor, pos: Tensor, tokens: Tensor
    ) -> CTCPrefixState:
        """New hypothesis i = old row rows[i] extended by its candidate number pos[i] (token tokens[i])."""
        return CTCPrefixState(r[:, :, rows, pos], psi[rows, pos], tokens, state.length + 1)
