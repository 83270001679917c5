"""CTC in numpy: prefix scoring for joint decoding (the twin of seqx/decode/ctc_prefix.py) and the
CTC gap used for rejection (the twin of seqx/decode/ctc_gap.py). Same recursions, same order of
operations, so that tests/test_runtime.py can hold the two paths to the same transcripts.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

NEG_INF = -np.inf


def logsumexp(x: np.ndarray, axis: int) -> np.ndarray:
    """log(sum(exp(x))) along `axis`, -inf where every entry is -inf (no NaN)."""
    m = np.max(x, axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    with np.errstate(divide="ignore"):
        return (np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True)) + m).squeeze(axis)


def pad_mask(lens: np.ndarray, max_len: int) -> np.ndarray:
    """(B, T) True at padded positions."""
    return np.arange(max_len)[None, :] >= lens[:, None]


@dataclass
class CTCPrefixState:
    r: np.ndarray  # (T, 2, N) log r_n, r_b
    psi: np.ndarray  # (N,)
    last: np.ndarray  # (N,) last token, -1 when empty
    length: int


class CTCPrefixScorer:
    """logprobs (N, T, V) float32, lens (N,): see seqx.decode.ctc_prefix.CTCPrefixScorer."""

    def __init__(self, logprobs: np.ndarray, lens: np.ndarray, blank: int, repeat: int = 1) -> None:
        """logprobs (B, T, V), lens (B,), each utterance's row shared by `repeat` adjacent hypotheses
        (its beams): the log-probs are not copied per beam, rows are mapped to utterances instead."""
        B, T, V = logprobs.shape
        x = np.ascontiguousarray(logprobs.astype(np.float32).transpose(1, 0, 2))  # (T, B, V)
        pad = pad_mask(lens, T).T  # (T, B)
        x[pad] = NEG_INF
        x[..., blank][pad] = 0.0  # past the end: blank with probability 1
        self.x, self.blank, self.T = x, blank, T
        self.utt = np.repeat(np.arange(B), repeat)  # (N,) the utterance of each hypothesis row

    def initial_state(self) -> CTCPrefixState:
        T, N = self.T, self.utt.size
        r = np.full((T, 2, N), NEG_INF, np.float32)
        r[:, 1] = np.cumsum(self.x[:, :, self.blank], axis=0)[:, self.utt]
        return CTCPrefixState(r, np.zeros(N, np.float32), np.full(N, -1, np.int64), 0)

    def final(self, state: CTCPrefixState) -> np.ndarray:
        return np.logaddexp(state.r[-1, 0], state.r[-1, 1])

    def score(self, cand: np.ndarray, state: CTCPrefixState) -> tuple[np.ndarray, np.ndarray]:
        T = self.T
        N, C = cand.shape
        xc = self.x[:, self.utt[:, None], cand]  # (T, N, C)
        r_sum = np.logaddexp(state.r[:, 0], state.r[:, 1])  # (T, N)
        same = cand == state.last[:, None]
        phi = np.where(same[None], state.r[:, 1, :, None], r_sum[..., None])  # (T, N, C)
        r = np.full((T, 2, N, C), NEG_INF, np.float32)
        if state.length == 0:
            r[0, 0] = xc[0]
        start = max(state.length, 1)
        xb = self.x[:, :, self.blank][:, self.utt, None]  # (T, N, 1)
        for t in range(start, T):
            r[t, 0] = np.logaddexp(r[t - 1, 0], phi[t - 1]) + xc[t]
            r[t, 1] = np.logaddexp(r[t - 1, 0], r[t - 1, 1]) + xb[t]
        emit = phi[start - 1 : T - 1] + xc[start:T]
        psi = logsumexp(np.concatenate([emit, r[start - 1, 0][None]], axis=0), axis=0)
        return psi.astype(np.float32), r

    def select(
        self, state: CTCPrefixState, r: np.ndarray, psi: np.ndarray, rows: np.ndarray, pos: np.ndarray,
        tokens: np.ndarray,
    ) -> CTCPrefixState:
        return CTCPrefixState(r[:, :, rows, pos], psi[rows, pos], tokens, state.length + 1)


def ctc_nll(logp: np.ndarray, length: int, target: list[int], blank: int) -> float:
    """-log p_ctc(target | logp[:length]) by the forward algorithm (torch's ctc_loss, reduction none);
    inf when no alignment allows the target."""
    ext = [blank]
    for token in target:
        ext += [token, blank]
    S = len(ext)
    ext_a = np.asarray(ext)
    # a label may skip the blank before it unless it repeats the label two positions back
    skip = np.zeros(S, bool)
    skip[2:] = (ext_a[2:] != blank) & (ext_a[2:] != ext_a[:-2])
    alpha = np.full(S, NEG_INF, np.float64)
    if length == 0:
        return float("inf")
    alpha[0] = logp[0, blank]
    if S > 1:
        alpha[1] = logp[0, ext[1]]
    step = np.full(S, NEG_INF)  # from the previous position (S may be 1: the empty target)
    jump = np.full(S, NEG_INF)  # over a blank, to a different label
    emit = logp[:length, ext_a].astype(np.float64)  # (length, S)
    for t in range(1, length):
        step[1:] = alpha[:-1]
        jump[2:] = alpha[:-2]
        jump[~skip] = NEG_INF
        alpha = np.logaddexp(np.logaddexp(alpha, step), jump) + emit[t]
    total = np.logaddexp(alpha[-1], alpha[-2]) if S > 1 else alpha[-1]
    return float(-total)


def ctc_gaps(logp: np.ndarray, mem_lens: np.ndarray, transcripts: list[list[int]], blank: int) -> np.ndarray:
    """(B,) the CTC gap per utterance: (nll(transcript) + log p(best path)) / frames."""
    pad = pad_mask(mem_lens, logp.shape[1])
    best = np.where(pad, 0.0, logp.max(axis=-1)).sum(axis=1)  # (B,)
    nll = np.array([ctc_nll(logp[b], int(mem_lens[b]), t, blank) for b, t in enumerate(transcripts)])
    return (nll + best) / np.maximum(mem_lens, 1)
