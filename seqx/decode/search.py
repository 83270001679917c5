"""Greedy and beam search over a `Seq2SeqTransformer`, batched, as tensor code over (batch x beam).

`decode_batch` is the one entry point (transcribe, evaluate and training's validation all
call it): it picks greedy or beam search from `DecodeSettings` and caps the output length
with `max_output_len`. Beam search is a short loop over scorers (seqx/decode/scorers.py):
the attention decoder, CTC prefix scores and whatever comes next (a grammar) each add a
weighted (N, V) log-probability; one `topk` over beam*vocab per step picks the new beam,
predecessors by `index // vocab`, and every scorer follows with `select`. Finished and
cut-off hypotheses are kept as tensors and only turned into `Hypothesis` objects after
the loop. The searches are dtype/device agnostic (CUDA bf16 autocast or CPU fp32);
scores are accumulated in fp32.

Scores. Greedy: the sum of the attention log-posteriors of the tokens and the eos.
Beam: the weighted sum of the scorers ((1 - w) * log p_att + w * log p_ctc-prefix)
summed the same way, divided by len ** length_penalty, len = tokens + 1 (the eos). With
length_penalty = 0 and ctc_weight = 0 a beam of 1 gives exactly the greedy result.

Hallucination guards. A hypothesis whose tail repeats the same n-gram (n = 2..4) three
times in a row, or one token four times, is cut back to its first copy; one that
reaches max_len without eos is cut there. Both come back with `flagged=True` and
`confidence=0.0` and rank after every hypothesis that ended properly.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

from seqx.decode.grammar_scorer import GrammarScorer
from seqx.decode.result import Hypothesis, rank  # torch-free, shared with seqx.runtime's search
from seqx.decode.scorers import CTCScorer, DecoderScorer, Scorer, n_candidates, pre_beam
from seqx.grammar.tokens import TokenAutomaton
from seqx.model.transformer import Seq2SeqTransformer
from seqx.recipe import DecodeSettings

MAX_NGRAM = 4  # longest repeated n-gram the loop guard looks for
REPEATS = 3  # an n-gram (n >= 2) seen this many times in a row is a loop
TOKEN_REPEATS = 4  # a single token needs one more (double letters, "no no no" are real)
NEG_INF = float("-inf")


def max_output_len(mem_lens: Tensor, settings: DecodeSettings) -> Tensor:
    """(B,) longest output per utterance: no longer than the encoder input allows, never past max_len.

    This is what stops a runaway hypothesis on a short clip.
    """
    return torch.clamp((mem_lens.float() * settings.max_len_ratio).ceil().long() + 2, max=settings.max_len)


def decode_batch(
    model: Seq2SeqTransformer,
    memory: Tensor,
    mem_lens: Tensor,
    settings: DecodeSettings,
    use_cache: bool = True,
    ctc_logprobs: Tensor | None = None,
    grammar: TokenAutomaton | None = None,
) -> list[list[Hypothesis]]:
    """n-best lists for encoder outputs memory (B, S, D), mem_lens (B,), as `settings` say.

    ctc_logprobs (B, S, V): the CTC head's log-posteriors when the caller has them already
    (transcribe shares them with the CTC-gap guard); computed here when beam search needs them.
    grammar: the token automaton the output must be a sentence of (on the model's device).
    Greedy search with a grammar is a beam of 1 through the same loop (attention scores
    only, no length normalization: what greedy search ranks by). A constrained search
    returns only hypotheses that ended in a final state: a loop or a length cap cut a
    sentence short, so it is dropped, and an utterance may get an empty n-best (no answer).
    """
    max_len = max_output_len(mem_lens, settings)
    if settings.greedy and grammar is None:
        return [[h] for h in greedy_search(model, memory, mem_lens, max_len, use_cache=use_cache)]
    ctc_weight = settings.search_ctc_weight(grammar is not None) if model.dims.ctc and not settings.greedy else 0.0
    scorers = [GrammarScorer(grammar)] if grammar is not None else []
    nbests = beam_search(
        model, memory, mem_lens, beam=settings.beam, nbest=settings.nbest, ctc_weight=ctc_weight,
        length_penalty=0.0 if settings.greedy else settings.length_penalty, max_len=max_len,
        use_cache=use_cache, ctc_logprobs=ctc_logprobs, scorers=scorers,
    )  # fmt: skip
    if grammar is not None:
        nbests = [[h for h in hyps if not h.flagged] for hyps in nbests]
    return nbests


def _limits(max_len: int | Tensor, batch: int, device: torch.device) -> Tensor:
    """(B,) longest output per utterance (tokens, eos not counted)."""
    if isinstance(max_len, Tensor):
        return max_len.to(device=device, dtype=torch.long).expand(batch).clamp(min=0)
    return torch.full((batch,), int(max_len), dtype=torch.long, device=device)


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


@torch.no_grad()
def greedy_search(
    model: Seq2SeqTransformer, memory: Tensor, mem_lens: Tensor, max_len: int | Tensor, use_cache: bool = True
) -> list[Hypothesis]:
    """The most likely token at every step, for a batch of utterances. memory (B, S, D), mem_lens (B,)."""
    eos, device, B = model.dims.eos_id, memory.device, memory.shape[0]
    limit = _limits(max_len, B, device)
    decoder = DecoderScorer(model, memory, mem_lens, use_cache=use_cache)
    decoder.init(B)
    seqs = torch.zeros(B, 0, dtype=torch.long, device=device)
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
        best, token = decoder.score().max(dim=-1)  # (B,)
        token = torch.where(open_, token, eos)  # closed rows just ride along
        score = score + torch.where(open_, best, 0.0)
        decoder.select(None, token)
        seqs = torch.cat([seqs, token[:, None]], dim=1)  # (B, step + 1)
        ended = open_ & (token == eos)
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
    ctc_logprobs: Tensor | None = None,
    scorers: Sequence[Scorer] = (),
) -> list[list[Hypothesis]]:
    """n-best lists for a batch of utterances; memory (B, S, D), mem_lens (B,).

    ctc_weight > 0 adds CTC prefix scores (joint decoding; the model needs a CTC head),
    from `ctc_logprobs` (B, S, V) when given. ctc_topk: how many attention candidates per
    hypothesis get a CTC score (None: ceil(1.5 * beam), as ESPnet's pre-beam; 0: the whole
    vocabulary). `scorers`: more scorers (a grammar) added to the decoder and CTC ones.
    """
    dims = model.dims
    decoder = DecoderScorer(model, memory, mem_lens, weight=1.0 - ctc_weight, use_cache=use_cache)
    everyone: list[Scorer] = [decoder]
    if ctc_weight > 0:
        logp = model.ctc_logprobs(memory) if ctc_logprobs is None else ctc_logprobs
        everyone.append(CTCScorer(logp, mem_lens, dims.blank_id, dims.eos_id, ctc_weight))
    everyone.extend(scorers)
    limit = _limits(max_len, memory.shape[0], memory.device)
    n_cand = n_candidates(beam, dims.vocab_size, ctc_topk)
    return run_beam(everyone, decoder, limit, beam, nbest, length_penalty, dims.eos_id, n_cand)


def run_beam(
    scorers: Sequence[Scorer],
    decoder: DecoderScorer,
    limit: Tensor,
    beam: int,
    nbest: int,
    length_penalty: float,
    eos: int,
    n_cand: int,
) -> list[list[Hypothesis]]:
    """The main loop: score, one topk over beam * vocab, every scorer follows the new beam.

    The search of an utterance stops when no open hypothesis can still beat its nbest-th
    finished one (scores only fall as a hypothesis grows, so an open hypothesis's best
    hope is its score now, normalized by the longest length it may reach).
    """
    B = limit.shape[0]
    for scorer in scorers:
        scorer.init(B * beam)  # beams of an utterance are adjacent rows
    state = _Beam.start(B, beam, nbest, limit, length_penalty)
    for step in range(int(limit.max()) + 1):
        if not state.cap(step):
            break
        top, index = state.topk(joint_scores(scorers, eos, n_cand))
        rows, tokens = state.follow(index)
        for scorer in scorers:
            scorer.select(rows, tokens)
        state.advance(step, top, index, rows, tokens, decoder.logp, eos)
    return _collect(state.ended, B, beam, nbest)


def joint_scores(scorers: Sequence[Scorer], eos: int, n_cand: int) -> Tensor:
    """(N, V) sum of the weighted scorer contributions for the next token.

    The full scorers' raw scores, added up, rank the pre-beam candidates for the partial ones.
    A scorer of weight 0 is still asked (a decoder with ctc_weight 1 still gives the
    confidence) but adds nothing, not even 0 * -inf.
    """
    full = [(s, s.score(None)) for s in scorers if not s.partial]
    cand = None
    if any(s.partial for s in scorers):
        ranked = full[0][1]
        for _, extra in full[1:]:
            ranked = ranked + extra
        cand = pre_beam(ranked, eos, n_cand)  # (N, C)
    parts = full + [(s, s.score(cand)) for s in scorers if s.partial]
    total: Tensor | None = None
    for scorer, part in parts:
        if scorer.weight == 0:
            continue
        term = part if scorer.weight == 1 else scorer.weight * part
        total = term if total is None else total + term
    assert total is not None, "every scorer has weight 0"
    return total


@dataclass
class _Ended:
    """Hypotheses that left the beam at one step, as tensors (kept until the loop is over)."""

    mask: Tensor  # (B, K) which slots ended here
    seqs: Tensor  # (B*K, t) their tokens
    keep: Tensor  # (B, K) how many of those tokens the hypothesis keeps
    score: Tensor  # (B, K) normalized score
    attn: Tensor  # (B*K,) summed attention log-posteriors (for the confidence)
    flagged: bool


@dataclass
class _Beam:
    """The search's own tensors over (B, K): scores, tokens, confidences, what ended."""

    scores: Tensor  # (B, K) joint score of each open hypothesis, -inf for a dead slot
    attn: Tensor  # (N,) summed attention log-posteriors
    seqs: Tensor  # (N, t)
    limit: Tensor  # (B,) longest output
    longest: Tensor  # (B,) normalizer of the longest possible hypothesis
    best: Tensor  # (B, nbest) best finished scores so far
    length_penalty: float
    ended: list[_Ended]
    vocab: int = 0  # V, known once the scorers have spoken

    @classmethod
    def start(cls, B: int, K: int, nbest: int, limit: Tensor, length_penalty: float) -> _Beam:
        device = limit.device
        scores = torch.full((B, K), NEG_INF, device=device)
        scores[:, 0] = 0.0  # all beams start as the same empty prefix: keep one, or the beam fills with copies
        return cls(
            scores=scores, attn=torch.zeros(B * K, device=device),
            seqs=torch.zeros(B * K, 0, dtype=torch.long, device=device), limit=limit,
            longest=(limit + 1).float() ** length_penalty, best=torch.full((B, nbest), NEG_INF, device=device),
            length_penalty=length_penalty, ended=[],
        )  # fmt: skip

    def cap(self, step: int) -> bool:
        """Close the hypotheses of utterances at their length cap; False when none is left open."""
        B, K = self.scores.shape
        at_cap = (self.limit <= step)[:, None]  # (B, 1)
        capped = at_cap & self.scores.isfinite()
        keep = torch.full_like(self.limit, step)[:, None].expand(B, K)
        self.ended.append(_Ended(capped, self.seqs, keep, self._norm(self.scores, step + 1), self.attn, True))
        self.scores = self.scores.masked_fill(at_cap, NEG_INF)
        return bool(self.scores.isfinite().any())

    def _norm(self, score: Tensor, length: int | Tensor) -> Tensor:
        return score / length**self.length_penalty

    def topk(self, joint: Tensor) -> tuple[Tensor, Tensor]:
        """joint (N, V) -> the best K (score, index into beam * vocab) of each utterance."""
        B, K = self.scores.shape
        N = B * K
        alive = self.scores.isfinite()
        # dead slots score -inf everywhere (and never NaN, whatever a scorer's state holds)
        self.vocab = joint.shape[1]
        total = torch.where(alive.view(N, 1), self.scores.view(N, 1) + joint, NEG_INF).view(B, -1)
        return total.topk(K, dim=1)  # (B, K): the one topk over beam * vocab

    def follow(self, index: Tensor) -> tuple[Tensor, Tensor]:
        """(B, K) topk indices -> predecessor rows (N,) and new tokens (N,)."""
        B, K = self.scores.shape
        V = self.vocab
        offsets = (torch.arange(B, device=index.device) * K)[:, None]  # (B, 1) first row of each utterance
        return (index // V + offsets).view(B * K), (index % V).view(B * K)

    def advance(
        self, step: int, top: Tensor, index: Tensor, rows: Tensor, tokens: Tensor, logp: Tensor, eos: int
    ) -> None:
        """Extend the hypotheses; record those that ended with eos or in a loop; drop the hopeless."""
        B, K = top.shape
        self.seqs = torch.cat([self.seqs[rows], tokens[:, None]], dim=1)  # (N, step + 1)
        self.attn = self.attn[rows] + logp.view(B, -1).gather(1, index).view(B * K)
        alive = top.isfinite()
        ended = alive & (tokens == eos).view(B, K)
        final = self._norm(top, step + 1)
        at = torch.full_like(top, step, dtype=torch.long)
        self.ended.append(_Ended(ended, self.seqs, at, final, self.attn, False))
        drop = loop_cut(self.seqs).view(B, K)
        looped = alive & ~ended & (drop > 0)
        self.ended.append(_Ended(looped, self.seqs, step + 1 - drop, self._norm(top, step + 2 - drop), self.attn, True))
        scores = top.masked_fill(ended | looped, NEG_INF)
        found = torch.cat([self.best, final.masked_fill(~ended, NEG_INF)], dim=1)
        self.best = found.topk(self.best.shape[1], dim=1).values
        hopeless = scores.max(dim=1).values / self.longest < self.best[:, -1]  # (B,)
        self.scores = scores.masked_fill(hopeless[:, None], NEG_INF)


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
    return [rank(items, nbest) for items in found]

