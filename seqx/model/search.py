"""Greedy and beam search over a `Seq2SeqTransformer`, batched, with the explicit `DecodeCache`.

Both searches are tensor code over (batch x beam): one decoder step per new token, one
`topk` over beam*vocab per step, predecessors by `index // vocab`, one gather; finished
and cut-off hypotheses are recorded as tensors and only turned into `Hypothesis`
objects after the loop. They are dtype/device agnostic: run them under CUDA bf16
autocast or on the CPU in fp32; scores are accumulated in fp32.

Scores. Greedy: the sum of the attention log-posteriors of the tokens and the eos.
Beam: the joint score (1 - w) * log p_att + w * log p_ctc-prefix summed the same way,
divided by len ** length_penalty, len = tokens + 1 (the eos). With length_penalty = 0
and ctc_weight = 0 a beam of 1 gives exactly the greedy result.

Hallucination guards. A hypothesis whose tail repeats the same n-gram (n = 2..4) three
times in a row, or one token four times, is cut back to its first copy; one that
reaches max_len without eos is cut there. Both come back with `flagged=True` and
`confidence=0.0` and rank after every hypothesis that ended properly.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor

from seqx.model.cache import DecodeCache
from seqx.model.ctc_prefix import CTCPrefixScorer
from seqx.model.transformer import Seq2SeqTransformer

MAX_NGRAM = 4  # longest repeated n-gram the loop guard looks for
REPEATS = 3  # an n-gram (n >= 2) seen this many times in a row is a loop
TOKEN_REPEATS = 4  # a single token needs one more (double letters, "no no no" are real)


@dataclass
class Hypothesis:
    tokens: list[int]  # no bos, no eos
    score: float
    confidence: float  # exp(mean attention log-posterior of the tokens and eos); 0.0 when flagged
    flagged: bool = False  # cut off: a loop, or max_len reached without eos


def _limits(max_len: int | Tensor, batch: int, device: torch.device) -> Tensor:
    """(B,) longest output per utterance (tokens, eos not counted)."""
    if isinstance(max_len, Tensor):
        return max_len.to(device=device, dtype=torch.long).expand(batch).clamp(min=0)
    return torch.full((batch,), int(max_len), dtype=torch.long, device=device)


def _log_posteriors(logits: Tensor, banned: list[int]) -> Tensor:
    """(N, V) fp32 log-softmax with tokens the decoder may never emit (pad, bos, blank) removed."""
    logp = F.log_softmax(logits.float(), dim=-1)
    logp[:, banned] = float("-inf")
    return logp


def _banned(model: Seq2SeqTransformer) -> list[int]:
    d = model.dims
    return sorted({d.pad_id, d.bos_id, d.blank_id} - {d.eos_id})


def loop_cut(seqs: Tensor) -> Tensor:
    """(N, t) tokens -> (N,) how many tail tokens to drop because the tail loops (0 = no loop)."""
    N, t = seqs.shape
    drop = torch.zeros(N, dtype=torch.long, device=seqs.device)
    for n in range(1, MAX_NGRAM + 1):
        reps = TOKEN_REPEATS if n == 1 else REPEATS
        if t < reps * n:
            break
        tail = seqs[:, t - reps * n :].reshape(N, reps, n)  # (N, reps, n)
        looping = (tail == tail[:, -1:]).all(dim=2).all(dim=1)  # (N,)
        drop = torch.where((drop == 0) & looping, (reps - 1) * n, drop)
    return drop


def _step(
    model: Seq2SeqTransformer, seqs: Tensor, last: Tensor, memory: Tensor, mem_lens: Tensor, cache: DecodeCache | None
) -> Tensor:
    """Logits (N, V) for the next token: one cached step, or the whole prefix again without a cache."""
    if cache is not None:
        return model.decode(last, memory, mem_lens, cache)[:, -1]
    bos = torch.full((seqs.shape[0], 1), model.dims.bos_id, dtype=torch.long, device=seqs.device)
    return model.decode(torch.cat([bos, seqs], dim=1), memory, mem_lens)[:, -1]


@torch.no_grad()
def greedy_search(
    model: Seq2SeqTransformer, memory: Tensor, mem_lens: Tensor, max_len: int | Tensor, use_cache: bool = True
) -> list[Hypothesis]:
    """The most likely token at every step, for a batch of utterances. memory (B, S, D), mem_lens (B,)."""
    dims, device = model.dims, memory.device
    B = memory.shape[0]
    limit = _limits(max_len, B, device)
    banned = _banned(model)
    cache = model.new_cache() if use_cache else None
    seqs = torch.zeros(B, 0, dtype=torch.long, device=device)
    last = torch.full((B, 1), dims.bos_id, dtype=torch.long, device=device)
    score = torch.zeros(B, device=device)
    open_ = torch.ones(B, dtype=torch.bool, device=device)
    flagged = torch.zeros(B, dtype=torch.bool, device=device)
    length = torch.zeros(B, dtype=torch.long, device=device)
    for step in range(int(limit.max()) + 1):
        capped = open_ & (limit <= step)
        length = torch.where(capped, step, length)
        flagged, open_ = flagged | capped, open_ & ~capped
        if not open_.any():
            break
        logp = _log_posteriors(_step(model, seqs, last, memory, mem_lens, cache), banned)  # (B, V)
        best, token = logp.max(dim=-1)  # (B,)
        token = torch.where(open_, token, dims.eos_id)  # closed rows just ride along
        score = score + torch.where(open_, best, 0.0)
        seqs = torch.cat([seqs, token[:, None]], dim=1)  # (B, step + 1)
        last = token[:, None]
        ended = open_ & (token == dims.eos_id)
        length = torch.where(ended, step, length)
        open_ = open_ & ~ended
        drop = loop_cut(seqs)
        looped = open_ & (drop > 0)
        length = torch.where(looped, step + 1 - drop, length)
        flagged, open_ = flagged | looped, open_ & ~looped
    hyps = []
    for row, n, s, f in zip(seqs.tolist(), length.tolist(), score.tolist(), flagged.tolist(), strict=True):
        hyps.append(Hypothesis(row[:n], s, 0.0 if f else math.exp(s / (n + 1)), f))
    return hyps


@dataclass
class _Ended:
    """Hypotheses that left the beam at one step, as tensors (kept until the loop is over)."""

    mask: Tensor  # (B, K) which slots ended here
    seqs: Tensor  # (B*K, t) their tokens
    keep: Tensor  # (B, K) how many of those tokens the hypothesis keeps
    score: Tensor  # (B, K) normalized score
    attn: Tensor  # (B*K,) summed attention log-posteriors (for the confidence)
    flagged: bool


@torch.no_grad()
def beam_search(
    model: Seq2SeqTransformer,
    memory: Tensor,
    mem_lens: Tensor,
    beam: int = 8,
    nbest: int = 1,
    ctc_weight: float = 0.0,
    length_penalty: float = 1.0,
    max_len: int | Tensor = 64,
    use_cache: bool = True,
    ctc_topk: int | None = None,
) -> list[list[Hypothesis]]:
    """n-best lists for a batch of utterances; memory (B, S, D), mem_lens (B,).

    ctc_weight > 0 adds CTC prefix scores (joint decoding; the model needs a CTC head).
    ctc_topk: how many attention candidates per hypothesis get a CTC score
    (None: ceil(1.5 * beam), as ESPnet's pre-beam; 0: the whole vocabulary).
    The search of an utterance stops when no open hypothesis can still beat its nbest-th
    finished one (scores only fall as a hypothesis grows, so an open hypothesis's best
    hope is its score now, normalized by the longest length it may reach).
    """
    dims, device = model.dims, memory.device
    B, K, V = memory.shape[0], beam, dims.vocab_size
    N = B * K
    limit = _limits(max_len, B, device)
    banned = _banned(model)
    lens = mem_lens.repeat_interleave(K, dim=0)  # beams of an utterance are adjacent rows
    cache = model.new_cache(memory, repeat=K) if use_cache else None  # cross K/V once per utterance
    # the cached decoder reads the memory through its cross K/V, shared by the beams; without a
    # cache every row needs its own copy
    mem, mem_rows = (memory, mem_lens) if cache is not None else (memory.repeat_interleave(K, dim=0), lens)
    scorer = state = None
    eos_id = torch.tensor([dims.eos_id], device=device)
    if ctc_weight > 0:
        scorer = CTCPrefixScorer(model.ctc_logprobs(memory).repeat_interleave(K, dim=0), lens, dims.blank_id)
        state = scorer.initial_state()
        n_cand = V if ctc_topk == 0 else min(V, ctc_topk or math.ceil(1.5 * K))
    scores = torch.full((B, K), float("-inf"), device=device)
    scores[:, 0] = 0.0  # all beams start as the same empty prefix: keep one, or the beam fills with copies
    attn = torch.zeros(N, device=device)
    seqs = torch.zeros(N, 0, dtype=torch.long, device=device)
    last = torch.full((N, 1), dims.bos_id, dtype=torch.long, device=device)
    offsets = (torch.arange(B, device=device) * K)[:, None]  # (B, 1) first row of each utterance
    longest = (limit + 1).float() ** length_penalty  # (B,) normalizer of the longest possible hypothesis
    best = torch.full((B, nbest), float("-inf"), device=device)  # best finished scores so far
    ended: list[_Ended] = []

    for step in range(int(limit.max()) + 1):
        at_cap = (limit <= step)[:, None]  # (B, 1)
        capped = at_cap & scores.isfinite()
        ended.append(_Ended(capped, seqs, torch.full_like(limit, step)[:, None].expand(B, K),
                            scores / (step + 1) ** length_penalty, attn, True))
        scores = scores.masked_fill(at_cap, float("-inf"))
        alive = scores.isfinite()  # (B, K)
        if not alive.any():
            break
        logp = _log_posteriors(_step(model, seqs, last, mem, mem_rows, cache), banned)  # (N, V)
        if scorer is not None and state is not None:
            if n_cand == V:
                cand = torch.arange(V, device=device).expand(N, V)
            else:  # eos always gets a CTC score: it keeps a prefix that fits the frames alive
                cand = logp.index_fill(1, eos_id, float("inf")).topk(n_cand, dim=-1).indices  # (N, C)
            psi, r = scorer.score(cand, state)  # (N, C), (T, 2, N, C)
            ctc = torch.where(cand == dims.eos_id, scorer.final(state)[:, None], psi) - state.psi[:, None]
            joint_c = ctc if ctc_weight >= 1 else (1 - ctc_weight) * logp.gather(1, cand) + ctc_weight * ctc
            joint = torch.full_like(logp, float("-inf")).scatter(1, cand, joint_c)  # (N, V)
        else:
            joint = logp
        # dead slots score -inf everywhere (and never NaN, whatever their CTC state holds)
        total = torch.where(alive.view(N, 1), scores.view(N, 1) + joint, float("-inf")).view(B, K * V)
        top, index = total.topk(K, dim=1)  # (B, K): the one topk over beam * vocab
        rows = (index // V + offsets).view(N)  # predecessor row of each new hypothesis
        token = (index % V).view(N)
        seqs = torch.cat([seqs[rows], token[:, None]], dim=1)  # (N, step + 1)
        attn = attn[rows] + logp.view(B, K * V).gather(1, index).view(N)
        if cache is not None:
            cache.reorder(rows)
        if scorer is not None and state is not None:
            pos = token if n_cand == V else (cand[rows] == token[:, None]).int().argmax(dim=1)
            state = scorer.select(state, r, psi, rows, pos, token)
        last = token[:, None]
        alive = top.isfinite()
        eos = alive & (token == dims.eos_id).view(B, K)
        final = top / (step + 1) ** length_penalty
        ended.append(_Ended(eos, seqs, torch.full_like(top, step, dtype=torch.long), final, attn, False))
        drop = loop_cut(seqs).view(B, K)
        looped = alive & ~eos & (drop > 0)
        ended.append(_Ended(looped, seqs, step + 1 - drop, top / (step + 2 - drop) ** length_penalty, attn, True))
        scores = top.masked_fill(eos | looped, float("-inf"))
        best = torch.cat([best, final.masked_fill(~eos, float("-inf"))], dim=1).topk(nbest, dim=1).values
        hopeless = scores.max(dim=1).values / longest < best[:, -1]  # (B,)
        scores = scores.masked_fill(hopeless[:, None], float("-inf"))

    return _collect(ended, B, K, nbest)


def _collect(ended: list[_Ended], B: int, K: int, nbest: int) -> list[list[Hypothesis]]:
    """After the loop: tensors -> Hypothesis lists, proper endings first, by score, unique."""
    found: list[list[tuple[bool, float, tuple[int, ...], float]]] = [[] for _ in range(B)]
    for e in ended:
        mask = e.mask.tolist()
        if not any(any(m) for m in mask):
            continue
        seqs, keep, score, attn = e.seqs.tolist(), e.keep.tolist(), e.score.tolist(), e.attn.tolist()
        for b in range(B):
            for k in range(K):
                if mask[b][k]:
                    n, row = keep[b][k], b * K + k
                    conf = 0.0 if e.flagged else math.exp(attn[row] / (n + 1))
                    found[b].append((e.flagged, score[b][k], tuple(seqs[row][:n]), conf))
    out = []
    for items in found:
        items.sort(key=lambda x: (x[0], -x[1]))
        seen: set[tuple[int, ...]] = set()
        hyps = []
        for flagged, score, tokens, conf in items:
            if tokens not in seen and len(hyps) < nbest:
                seen.add(tokens)
                hyps.append(Hypothesis(list(tokens), score, conf, flagged))
        out.append(hyps)
    return out
