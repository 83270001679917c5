"""Scorers: what beam search adds up, each over the tensor beam of N = batch x beam rows.

The search knows nothing of the model; it asks each scorer for a (N, V) log-probability
contribution to the next token and sums them with the scorers' weights (ESPnet's
`init_state / score / select_state`, SpeechBrain's scorer interface). A scorer:

    init(rows)            start N empty prefixes (B utterances x `rows // B` beams, adjacent)
    score(cand)           (N, V) contribution for the next token; -inf = never
    select(rows, tokens)  after the topk: new hypothesis i = old row rows[i] + tokens[i]
    weight                its factor in the joint score
    partial               True: it scores only the candidates `cand` (N, C) the full
                          scorers ranked best (pre-beam), -inf elsewhere; False: cand is None

Adding a scorer changes nothing in the loop. A grammar is the next one: a full scorer
(partial = False, weight 1) holding one automaton state per hypothesis (a (N,) LongTensor);
`score` gathers its (states, vocab) next-state table at those states and returns 0 where
a transition exists and -inf elsewhere, eos allowed only in final states; `select` moves
the states with `table[state[rows], tokens]`. Full scorers' raw scores are summed to pick
the pre-beam candidates, so a grammar also keeps the CTC scorer from wasting candidates.
"""

from __future__ import annotations

import math
from typing import Protocol

import torch
import torch.nn.functional as F
from torch import Tensor

from seqx.decode.ctc_prefix import CTCPrefixScorer, CTCPrefixState
from seqx.model.transformer import Seq2SeqTransformer


class Scorer(Protocol):
    weight: float
    partial: bool

    def init(self, rows: int) -> None: ...

    def score(self, cand: Tensor | None) -> Tensor: ...

    def select(self, rows: Tensor, tokens: Tensor) -> None: ...


def banned_tokens(model: Seq2SeqTransformer) -> list[int]:
    """Tokens the decoder may never emit (pad, bos, blank), eos excepted."""
    d = model.dims
    return sorted({d.pad_id, d.bos_id, d.blank_id} - {d.eos_id})


def log_posteriors(logits: Tensor, banned: list[int]) -> Tensor:
    """(N, V) fp32 log-softmax with the banned tokens removed."""
    logp = F.log_softmax(logits.float(), dim=-1)
    logp[:, banned] = float("-inf")
    return logp


class DecoderScorer:
    """The attention decoder: log p_att(next token | prefix, audio), one cached step per token.

    memory (B, S, D) is read through cross-attention K/V computed once per utterance and
    shared by its beams; without a cache every step re-runs the whole prefix (and every row
    needs its own copy of the memory). `logp` keeps the last step's (N, V) scores: the
    search sums them along each hypothesis for its confidence.
    """

    partial = False

    def __init__(
        self, model: Seq2SeqTransformer, memory: Tensor, mem_lens: Tensor, weight: float = 1.0, use_cache: bool = True
    ) -> None:
        self.model, self.memory, self.mem_lens = model, memory, mem_lens
        self.weight, self.use_cache = weight, use_cache
        self.banned = banned_tokens(model)

    def init(self, rows: int) -> None:
        repeat = rows // self.memory.shape[0]
        self.cache = self.model.new_cache(self.memory, repeat=repeat) if self.use_cache else None
        if self.cache is None:
            self.mem = self.memory.repeat_interleave(repeat, dim=0)
            self.lens = self.mem_lens.repeat_interleave(repeat, dim=0)
        else:
            self.mem, self.lens = self.memory, self.mem_lens
        device = self.memory.device
        self.seqs = torch.zeros(rows, 0, dtype=torch.long, device=device)  # kept only without a cache
        self.last = torch.full((rows, 1), self.model.dims.bos_id, dtype=torch.long, device=device)

    def score(self, cand: Tensor | None = None) -> Tensor:
        if self.cache is not None:
            logits = self.model.decode(self.last, self.mem, self.lens, self.cache)[:, -1]
        else:
            bos = torch.full_like(self.last, self.model.dims.bos_id)  # (N, 1)
            logits = self.model.decode(torch.cat([bos, self.seqs], dim=1), self.mem, self.lens)[:, -1]
        self.logp = log_posteriors(logits, self.banned)  # (N, V)
        return self.logp

    def select(self, rows: Tensor | None, tokens: Tensor) -> None:
        """rows None: every hypothesis keeps its row (greedy search), nothing to reorder."""
        if self.cache is None:  # the whole prefix is decoded again next step
            self.seqs = torch.cat([self.seqs if rows is None else self.seqs[rows], tokens[:, None]], dim=1)
        elif rows is not None:
            self.cache.reorder(rows)
        self.last = tokens[:, None]


class CTCScorer:
    """CTC prefix scores (joint CTC/attention decoding) for the pre-beam candidates.

    logprobs (B, T, V) float32 CTC log-posteriors of the batch, computed once and shared
    with the CTC-gap guard; eos scores the probability that the CTC output is exactly the
    prefix. The contribution is log psi(g + c) - log psi(g), so a hypothesis's summed
    CTC score is its prefix probability.
    """

    partial = True

    def __init__(self, logprobs: Tensor, mem_lens: Tensor, blank: int, eos: int, weight: float) -> None:
        self.logprobs, self.mem_lens, self.blank, self.eos, self.weight = logprobs, mem_lens, blank, eos, weight

    def init(self, rows: int) -> None:
        repeat = rows // self.logprobs.shape[0]
        lens = self.mem_lens.repeat_interleave(repeat, dim=0)
        self.ctc = CTCPrefixScorer(self.logprobs.repeat_interleave(repeat, dim=0), lens, self.blank)
        self.state: CTCPrefixState = self.ctc.initial_state()

    def score(self, cand: Tensor | None) -> Tensor:
        assert cand is not None, "a partial scorer needs the pre-beam candidates"
        self.cand = cand
        self.psi, self.r = self.ctc.score(cand, self.state)  # (N, C), (T, 2, N, C)
        final = self.ctc.final(self.state)[:, None]  # (N, 1) what eos scores
        ctc = torch.where(cand == self.eos, final, self.psi) - self.state.psi[:, None]  # (N, C)
        return torch.full((cand.shape[0], self.logprobs.shape[-1]), float("-inf"), device=cand.device).scatter(
            1, cand, ctc
        )  # (N, V)

    def select(self, rows: Tensor, tokens: Tensor) -> None:
        # position of each chosen token among its predecessor's candidates
        pos = (self.cand[rows] == tokens[:, None]).int().argmax(dim=1)
        self.state = self.ctc.select(self.state, self.r, self.psi, rows, pos, tokens)


def pre_beam(full: Tensor, eos: int, n_cand: int) -> Tensor:
    """(N, C) candidate tokens for the partial scorers: the best n_cand by the full scorers.

    eos is always a candidate: its CTC score keeps a prefix that fits the frames alive.
    n_cand == V: the whole vocabulary, in order.
    """
    N, V = full.shape
    if n_cand >= V:
        return torch.arange(V, device=full.device).expand(N, V)
    return full.index_fill(1, torch.tensor([eos], device=full.device), float("inf")).topk(n_cand, dim=-1).indices


def n_candidates(beam: int, vocab: int, ctc_topk: int | None) -> int:
    """How many tokens per hypothesis a partial scorer sees (None: ceil(1.5 * beam), ESPnet's
    pre-beam; 0: the whole vocabulary)."""
    return vocab if ctc_topk == 0 else min(vocab, ctc_topk or math.ceil(1.5 * beam))
