"""CTC in numpy: prefix scoring for joint decoding (the twin of seqx/decode/ctc_prefix.py) and the
CTC gap used for rejection (the twin of seqx/decode/ctc_gap.py). Same recursions, same order of
operations, so that tests/test_runtime.py can hold the two paths to the same transcripts.
"""

from __future__ import annotations

from collections.abc import Callable
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


WILD = -1  # the label of a stretch of any tokens between two words (ctc_viterbi_between_words)


def word_starts(id_to_piece: Callable[[int], str], vocab_size: int) -> np.ndarray:
    """(V,) True for the pieces that begin a word (sentencepiece's "▁")."""
    return np.array([id_to_piece(i).startswith("▁") for i in range(vocab_size)], bool)


def ctc_viterbi_between_words(
    logp: np.ndarray, length: int, target: list[int], blank: int, starts: np.ndarray
) -> float:
    """-log p of the CTC head's best alignment of `target` where, between two of its words, it may
    also hear any tokens: a person's breath, "um" or added word costs the answer nothing, a word
    missing or changed does. Each gap between words gets an optional stretch of WILD frames (each
    the frame's best non-blank token), blanks among them, which the answer may also skip. The best
    alignment, not the sum over them: the best path itself is the one alignment whose every frame
    is the frame's best, so the distance to it is 0 exactly when it is the target with tokens
    added between words."""
    if length == 0:
        return float("inf")
    ext = [blank]
    for i, token in enumerate(target):
        if i > 0 and starts[token]:
            ext += [WILD, blank]
        ext += [token, blank]
    S = len(ext)
    ext_a = np.asarray(ext)
    label = ext_a != blank
    skip = np.zeros(S, bool)  # over the blank before a label, unless it repeats the label two back
    skip[2:] = label[2:] & label[:-2] & (ext_a[2:] != ext_a[:-2])
    # past a WILD stretch not taken: from the blank (three back) or the word's last token (four back)
    skip3 = np.zeros(S, bool)
    skip4 = np.zeros(S, bool)
    skip3[3:] = label[3:] & (ext_a[1:-2] == WILD)
    skip4[4:] = skip3[4:] & (ext_a[4:] != ext_a[:-4])
    wild_again = ext_a[:-1] == WILD  # back into the stretch from the blank after it: words of several pieces
    lp = logp[:length].astype(np.float64)
    nonblank = lp.copy()
    nonblank[:, blank] = NEG_INF
    emit = np.where(ext_a == WILD, nonblank.max(axis=1)[:, None], lp[:, np.where(ext_a == WILD, blank, ext_a)])
    alpha = np.full(S, NEG_INF, np.float64)
    alpha[0] = emit[0, 0]
    if S > 1:
        alpha[1] = emit[0, 1]
    for t in range(1, length):
        prev = alpha.copy()
        prev[1:] = np.maximum(prev[1:], alpha[:-1])
        for back, allowed in ((2, skip), (3, skip3), (4, skip4)):
            moved = np.full(S, NEG_INF)
            moved[back:] = alpha[:-back]
            prev = np.maximum(prev, np.where(allowed, moved, NEG_INF))
        prev[:-1] = np.maximum(prev[:-1], np.where(wild_again, alpha[1:], NEG_INF))
        alpha = prev + emit[t]
    total = max(alpha[-1], alpha[-2]) if S > 1 else alpha[-1]
    return float(-total)


def ctc_gaps(
    logp: np.ndarray,
    mem_lens: np.ndarray,
    transcripts: list[list[int]],
    blank: int,
    starts: np.ndarray | None = None,
    forgive: list[bool] | None = None,
) -> np.ndarray:
    """(B,) the CTC gap per utterance: (nll(transcript) + log p(best path)) / frames. For the
    utterances `forgive` marks, tokens heard between the transcript's words are forgiven: the
    smaller of that and the gap to its best alignment with them (ctc_viterbi_between_words;
    `starts`: word_starts)."""
    pad = pad_mask(mem_lens, logp.shape[1])
    best = np.where(pad, 0.0, logp.max(axis=-1)).sum(axis=1)  # (B,)
    nll = np.array([ctc_nll(logp[b], int(mem_lens[b]), t, blank) for b, t in enumerate(transcripts)])
    if starts is not None and forgive is not None:
        for b, t in enumerate(transcripts):
            if forgive[b]:  # never larger than the gap of the plain sum
                nll[b] = min(nll[b], ctc_viterbi_between_words(logp[b], int(mem_lens[b]), t, blank, starts))
    return (nll + best) / np.maximum(mem_lens, 1)


def forgiven(best: list[list[int] | None], free: list[list[int] | None]) -> list[bool]:
    """Which answers the gap forgives added tokens (decode.gap_forgives_insertions): those the free
    beam heard token for token. Where the model, free to say anything, said another sentence, the
    CTC head's extra tokens may be words the grammar cannot say, and count."""
    return [b is not None and f is not None and list(b) == list(f) for b, f in zip(best, free, strict=True)]
