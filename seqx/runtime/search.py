"""Greedy and beam search in numpy over the exported decoder step: the twin of seqx/decode/search.py
and seqx/decode/scorers.py (same scorer interface init/score/select, the same one top-k over
beam x vocab, the same length normalization and loop guard; the ranking and the Hypothesis are
the torch path's own, from seqx/decode/result.py), held equal to it by tests/test_runtime.py on a
trained model's whole test split. `decode_batch` picks greedy or beam search as the torch
path's does (greedy with a grammar: a beam of 1 without CTC; a constrained n-best drops flagged
hypotheses).

Scorers: the attention decoder (one onnxruntime run of decoder_step.onnx per step, the past
self-attention K/V kept here and reordered with the beams), CTC prefix scores (seqx/runtime/ctc.py)
and the grammar mask (the TokenAutomaton's dense next-state table from config.json).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np

# the torch path's own (torch-free) hypotheses, ranking and CTC-weight rule
from seqx.decode.result import Hypothesis, ctc_weight_for, rank
from seqx.runtime.ctc import CTCPrefixScorer, CTCPrefixState

MAX_NGRAM, REPEATS, TOKEN_REPEATS = 4, 3, 4  # seqx.decode.search's loop guard
NEG_INF = -np.inf


class Scorer(Protocol):
    weight: float
    partial: bool

    def init(self, rows: int) -> None: ...

    def score(self, cand: np.ndarray | None) -> np.ndarray: ...

    def select(self, rows: np.ndarray | None, tokens: np.ndarray) -> None: ...


def topk(x: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """(values, indices) of the k largest per row, largest first (torch.topk): a partition, then
    a sort of the k (by value, ties by index)."""
    if k < x.shape[1]:
        part = np.argpartition(-x, k - 1, axis=1)[:, :k]
    else:
        part = np.broadcast_to(np.arange(x.shape[1]), x.shape)
    values = np.take_along_axis(x, part, axis=1)
    order = np.lexsort((part, -values), axis=1)
    index = np.take_along_axis(part, order, axis=1)
    return np.take_along_axis(values, order, axis=1), index


def log_softmax_banned(logp: np.ndarray, banned: list[int]) -> np.ndarray:
    logp = logp.astype(np.float32, copy=True)
    logp[:, banned] = NEG_INF
    return logp


class DecoderScorer:
    """The attention decoder: decoder_step.onnx with the past K/V as explicit inputs and outputs."""

    partial = False

    def __init__(
        self, step: Any, cross_k: np.ndarray, cross_v: np.ndarray, mem_lens: np.ndarray, dims: dict,
        weight: float = 1.0,
    ) -> None:  # fmt: skip
        self.step, self.cross_k, self.cross_v, self.mem_lens, self.dims = step, cross_k, cross_v, mem_lens, dims
        self.weight = weight
        self.banned = sorted({dims["pad_id"], dims["bos_id"], dims["blank_id"]} - {dims["eos_id"]})

    def init(self, rows: int) -> None:
        L, _, H, _, dh = self.cross_k.shape  # cross K/V once per utterance: the graph groups the beams
        self.k = np.zeros((L, rows, H, 0, dh), np.float32)
        self.v = np.zeros((L, rows, H, 0, dh), np.float32)
        self.last = np.full((rows, 1), self.dims["bos_id"], np.int64)

    def score(self, cand: np.ndarray | None = None) -> np.ndarray:
        logp, self.k, self.v = self.step.run(None, {
            "token": self.last, "self_k": self.k, "self_v": self.v, "cross_k": self.cross_k, "cross_v": self.cross_v,
            "mem_lens": self.mem_lens,
        })  # fmt: skip
        self.logp = log_softmax_banned(logp, self.banned)  # (N, V)
        return self.logp

    def select(self, rows: np.ndarray | None, tokens: np.ndarray) -> None:
        if rows is not None:
            self.k, self.v = np.take(self.k, rows, axis=1), np.take(self.v, rows, axis=1)
        self.last = tokens[:, None].astype(np.int64)


class CTCScorer:
    partial = True

    def __init__(self, logprobs: np.ndarray, mem_lens: np.ndarray, blank: int, eos: int, weight: float) -> None:
        self.logprobs, self.mem_lens, self.blank, self.eos, self.weight = logprobs, mem_lens, blank, eos, weight

    def init(self, rows: int) -> None:
        repeat = rows // self.logprobs.shape[0]
        self.ctc = CTCPrefixScorer(self.logprobs, self.mem_lens, self.blank, repeat)
        self.state: CTCPrefixState = self.ctc.initial_state()

    def score(self, cand: np.ndarray | None) -> np.ndarray:
        assert cand is not None
        self.cand = cand
        self.psi, self.r = self.ctc.score(cand, self.state)
        final = self.ctc.final(self.state)[:, None]
        ctc = np.where(cand == self.eos, final, self.psi) - self.state.psi[:, None]
        out = np.full((cand.shape[0], self.logprobs.shape[-1]), NEG_INF, np.float32)
        np.put_along_axis(out, cand, ctc.astype(np.float32), axis=1)
        return out

    def select(self, rows: np.ndarray | None, tokens: np.ndarray) -> None:
        assert rows is not None
        pos = (self.cand[rows] == tokens[:, None]).argmax(axis=1)
        self.state = self.ctc.select(self.state, self.r, self.psi, rows, pos, tokens)


class GrammarScorer:
    """Only token sequences of the grammar: 0 where the automaton has a transition, -inf elsewhere
    (eos allowed in final states only: the table's eos column)."""

    partial = False
    weight = 1.0

    def __init__(self, next_state: np.ndarray, start: int = 0) -> None:
        self.table, self.start = next_state, start

    def init(self, rows: int) -> None:
        self.state = np.full(rows, self.start, np.int64)

    def score(self, cand: np.ndarray | None = None) -> np.ndarray:
        allowed = self.table[np.maximum(self.state, 0)] >= 0  # (N, V)
        allowed &= (self.state >= 0)[:, None]  # a dead state allows nothing
        return np.where(allowed, np.float32(0.0), np.float32(NEG_INF))

    def select(self, rows: np.ndarray | None, tokens: np.ndarray) -> None:
        state = self.state if rows is None else self.state[rows]
        self.state = np.where(state >= 0, self.table[np.maximum(state, 0), tokens], -1)


def automaton_table(raw: dict[str, Any]) -> tuple[np.ndarray, int]:
    """TokenAutomaton.to_dict() -> (next_state (S, V) int64, start): eos self-loops on final states."""
    table = np.full((raw["num_states"], raw["vocab_size"]), -1, np.int64)
    for s, v, t in raw["arcs"]:
        table[s, v] = t
    for s in raw["final"]:
        table[s, raw["eos_id"]] = s
    return table, int(raw.get("start", 0))


def max_output_len(mem_lens: np.ndarray, max_len_ratio: float, max_len: int) -> np.ndarray:
    return np.minimum(np.ceil(mem_lens.astype(np.float32) * np.float32(max_len_ratio)).astype(np.int64) + 2, max_len)


def n_candidates(beam: int, vocab: int, ctc_topk: int | None = None) -> int:
    return vocab if ctc_topk == 0 else min(vocab, ctc_topk or math.ceil(1.5 * beam))


def pre_beam(full: np.ndarray, eos: int, n_cand: int) -> np.ndarray:
    N, V = full.shape
    if n_cand >= V:
        return np.broadcast_to(np.arange(V), (N, V))
    ranked = full.copy()
    ranked[:, eos] = np.inf
    return topk(ranked, n_cand)[1]


def loop_cut(seqs: np.ndarray) -> np.ndarray:
    N, t = seqs.shape
    drop = np.zeros(N, np.int64)
    for n in range(1, MAX_NGRAM + 1):
        reps = TOKEN_REPEATS if n == 1 else REPEATS
        if t < reps * n:
            break
        tail = seqs[:, t - reps * n :].reshape(N, reps, n)
        looping = (tail == tail[:, -1:]).all(axis=2).all(axis=1)
        drop = np.where((drop == 0) & looping, (reps - 1) * n, drop)
    return drop


def greedy_search(decoder: DecoderScorer, limit: np.ndarray, eos: int) -> list[Hypothesis]:
    B = limit.shape[0]
    decoder.init(B)
    seqs = np.zeros((B, 0), np.int64)
    score = np.zeros(B, np.float32)
    open_ = np.ones(B, bool)
    flagged = np.zeros(B, bool)
    length = np.zeros(B, np.int64)
    for step in range(int(limit.max()) + 1):
        capped = open_ & (limit <= step)
        length = np.where(capped, step, length)
        flagged, open_ = flagged | capped, open_ & ~capped
        if not open_.any():
            break
        logp = decoder.score()
        token = logp.argmax(axis=-1)
        best = logp[np.arange(B), token]
        token = np.where(open_, token, eos)
        score = score + np.where(open_, best, np.float32(0.0))
        decoder.select(None, token)
        seqs = np.concatenate([seqs, token[:, None]], axis=1)
        ended = open_ & (token == eos)
        length = np.where(ended, step, length)
        open_ = open_ & ~ended
        drop = loop_cut(seqs)
        looped = open_ & (drop > 0)
        length = np.where(looped, step + 1 - drop, length)
        flagged, open_ = flagged | looped, open_ & ~looped
    return [
        Hypothesis(row[:n], float(s), 0.0 if f else math.exp(float(s) / (n + 1)), bool(f))
        for row, n, s, f in zip(seqs.tolist(), length.tolist(), score.tolist(), flagged.tolist(), strict=True)
    ]


def decode_batch(
    enc: dict[str, np.ndarray], step: Any, dims: dict[str, Any], beam: int, nbest: int, settings: dict[str, Any],
    automaton: tuple[np.ndarray, int] | None = None,
) -> list[list[Hypothesis]]:
    """seqx.decode.search.decode_batch: n-best lists for one encoder pass (`enc`: mem_lens, ctc,
    cross_k, cross_v), greedy or beam as the torch path picks. Greedy with a grammar is a beam
    of 1 (attention scores only, no length normalization); a constrained search keeps only the
    hypotheses that ended in a final state."""
    mem_lens, ctc, cross_k, cross_v = enc["mem_lens"], enc["ctc"], enc["cross_k"], enc["cross_v"]
    limit = max_output_len(mem_lens, settings["max_len_ratio"], settings["max_len"])
    greedy = beam == 1 and nbest == 1
    if greedy and automaton is None:
        return [[h] for h in greedy_search(DecoderScorer(step, cross_k, cross_v, mem_lens, dims), limit, dims["eos_id"])]
    weight = ctc_weight_for(settings["ctc_weight"], settings.get("free_ctc_weight"), automaton is not None)
    ctc_weight = weight if dims["ctc"] and not greedy else 0.0
    decoder = DecoderScorer(step, cross_k, cross_v, mem_lens, dims, weight=1.0 - ctc_weight)
    scorers: list[Any] = [decoder]
    if ctc_weight > 0:
        scorers.append(CTCScorer(ctc, mem_lens, dims["blank_id"], dims["eos_id"], ctc_weight))
    if automaton is not None:
        scorers.append(GrammarScorer(*automaton))
    length_penalty = 0.0 if greedy else settings["length_penalty"]
    n_cand = n_candidates(beam, dims["vocab_size"])
    nbests = beam_search(scorers, decoder, limit, beam, nbest, length_penalty, dims["eos_id"], n_cand)
    if automaton is not None:
        nbests = [[h for h in hyps if not h.flagged] for hyps in nbests]
    return nbests


def joint_scores(scorers: Sequence[Scorer], eos: int, n_cand: int) -> np.ndarray:
    full = [(s, s.score(None)) for s in scorers if not s.partial]
    cand = None
    if any(s.partial for s in scorers):
        ranked = full[0][1]
        for _, extra in full[1:]:
            ranked = ranked + extra
        cand = pre_beam(ranked, eos, n_cand)
    parts = full + [(s, s.score(cand)) for s in scorers if s.partial]
    total = None
    for scorer, part in parts:
        if scorer.weight == 0:
            continue
        term = part if scorer.weight == 1 else np.float32(scorer.weight) * part
        total = term if total is None else total + term
    assert total is not None, "every scorer has weight 0"
    return total


def beam_search(
    scorers: Sequence[Scorer], decoder: DecoderScorer, limit: np.ndarray, beam: int, nbest: int,
    length_penalty: float, eos: int, n_cand: int,
) -> list[list[Hypothesis]]:  # fmt: skip
    """seqx.decode.search.run_beam over numpy arrays."""
    B, K = limit.shape[0], beam
    N = B * K
    for scorer in scorers:
        scorer.init(N)
    scores = np.full((B, K), NEG_INF, np.float32)
    scores[:, 0] = 0.0
    attn = np.zeros(N, np.float32)
    seqs = np.zeros((N, 0), np.int64)
    longest = (limit + 1).astype(np.float32) ** np.float32(length_penalty)
    best = np.full((B, nbest), NEG_INF, np.float32)
    found: list[list[tuple[bool, float, tuple[int, ...], float]]] = [[] for _ in range(B)]

    def norm(score: np.ndarray, length: Any) -> np.ndarray:
        return (score / np.asarray(length, np.float32) ** np.float32(length_penalty)).astype(np.float32)

    def record(
        mask: np.ndarray, seqs: np.ndarray, keep: np.ndarray, score: np.ndarray, attn: np.ndarray, flagged: bool
    ) -> None:
        for b, k in zip(*np.nonzero(mask)):
            n, row = int(keep[b, k]), b * K + k
            conf = 0.0 if flagged else math.exp(float(attn[row]) / (n + 1))
            found[b].append((flagged, float(score[b, k]), tuple(seqs[row][:n].tolist()), conf))

    for step in range(int(limit.max()) + 1):
        at_cap = (limit <= step)[:, None]
        capped = at_cap & np.isfinite(scores)
        if capped.any():
            record(capped, seqs, np.full((B, K), step), norm(scores, step + 1), attn, True)
        scores = np.where(at_cap, NEG_INF, scores).astype(np.float32)
        if not np.isfinite(scores).any():
            break
        joint = joint_scores(scorers, eos, n_cand)
        V = joint.shape[1]
        alive = np.isfinite(scores)
        total = np.where(alive.reshape(N, 1), scores.reshape(N, 1) + joint, NEG_INF).reshape(B, -1)
        top, index = topk(total, K)
        rows = (index // V + (np.arange(B) * K)[:, None]).reshape(N)
        tokens = (index % V).reshape(N)
        for scorer in scorers:
            scorer.select(rows, tokens)
        seqs = np.concatenate([seqs[rows], tokens[:, None]], axis=1)
        attn = attn[rows] + np.take_along_axis(decoder.logp.reshape(B, -1), index, axis=1).reshape(N)
        alive = np.isfinite(top)
        ended = alive & (tokens == eos).reshape(B, K)
        final = norm(top, step + 1)
        if ended.any():
            record(ended, seqs, np.full((B, K), step), final, attn, False)
        drop = loop_cut(seqs).reshape(B, K)
        looped = alive & ~ended & (drop > 0)
        if looped.any():
            record(looped, seqs, step + 1 - drop, norm(top, step + 2 - drop), attn, True)
        new = np.where(ended | looped, NEG_INF, top).astype(np.float32)
        merged = np.concatenate([best, np.where(ended, final, NEG_INF).astype(np.float32)], axis=1)
        best = topk(merged, nbest)[0]
        hopeless = new.max(axis=1) / longest < best[:, -1]
        scores = np.where(hopeless[:, None], NEG_INF, new).astype(np.float32)
    return [rank(items, nbest) for items in found]

