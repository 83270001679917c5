"""The CTC gap: zero or below for what the CTC head itself hears, larger for anything else."""

from __future__ import annotations

import math

import numpy as np
import torch

from seqx.decode.ctc_gap import ctc_gaps
from seqx.runtime.ctc import ctc_gaps as runtime_ctc_gaps
from seqx.model import ModelDimensions, Seq2SeqTransformer

V = 9


def _collapse(path: list[int], blank: int) -> list[int]:
    out, last = [], None
    for token in path:
        if token != last and token != blank:
            out.append(token)
        last = token
    return out


def test_gap_of_the_best_path_is_at_most_zero_and_other_transcripts_cost_more() -> None:
    torch.manual_seed(0)
    dims = ModelDimensions(n_feats=12, vocab_size=V, d_model=16, heads=2, enc_layers=1, dec_layers=1, d_ff=32,
                           dropout=0.0, frontend="linear", pad_id=0, bos_id=1, eos_id=2, blank_id=3)
    model = Seq2SeqTransformer(dims).eval()
    lens = torch.tensor([20, 13])
    with torch.inference_mode():
        memory, mem_lens = model.encode(torch.randn(2, 20, 12) * 3, lens)
        logp = model.ctc_logprobs(memory)
        heard = [_collapse(logp[b, : int(mem_lens[b])].argmax(-1).tolist(), dims.blank_id) for b in range(2)]
        # the best path is one of the alignments of its own collapse: p(collapse) >= p(best path)
        assert (ctc_gaps(model, memory, mem_lens, heard) <= 1e-5).all()
        other = [[t for t in range(4, V) if t not in h][:3] for h in heard]  # tokens the head did not pick
        assert (ctc_gaps(model, memory, mem_lens, other) > ctc_gaps(model, memory, mem_lens, heard)).all()
        # an empty transcript is all blanks; one longer than the frames allow has no alignment at all
        gaps = ctc_gaps(model, memory, mem_lens, [[], [4] * 14])
        blanks = -logp[0, :20, dims.blank_id].sum() + logp[0, :20].max(-1).values.sum()
        assert math.isclose(gaps[0].item(), blanks.item() / 20, rel_tol=1e-5, abs_tol=1e-6)
        assert math.isinf(gaps[1].item())


def _frames(said: list[int], v: int = 6, blank: int = 0) -> np.ndarray:
    """Log-posteriors whose best path says `said` (one token a frame, 0 = blank), every other token
    at 1%: a CTC head sure of what it hears."""
    logp = np.full((len(said), v), np.log(0.01))
    for t, token in enumerate(said):
        logp[t, token] = np.log(1 - 0.01 * (v - 1))
    return logp


def _gap(logp: np.ndarray, answer: list[int], forgive: bool) -> float:
    starts = np.array([False, True, True, True, False, True])  # token 4 continues a word
    lens = np.array([len(logp)])
    return float(runtime_ctc_gaps(logp[None], lens, [answer], 0, starts, [forgive])[0])


def test_a_token_heard_between_the_answers_words_is_forgiven_a_missing_or_changed_word_is_not() -> None:
    """decode.gap_forgives_insertions: a person's "um" (token 3) between two words of the answer
    costs nothing; the same sound in place of a word, or a word missing, costs what it did."""
    heard = _frames([1, 1, 0, 3, 0, 2, 2, 0])  # "A um B"
    assert _gap(heard, [1, 2], forgive=False) > 0.5
    assert abs(_gap(heard, [1, 2], forgive=True)) < 1e-9  # the best path is the answer plus "um"
    assert _gap(heard, [1, 5], forgive=True) > 0.5  # B heard as another word
    assert _gap(heard, [1, 2], forgive=True) < _gap(heard, [1], forgive=True)  # "A" alone misses B
    # inside a word (token 4 continues one) nothing is forgiven: "A um x" is not the word "Ax"
    assert _gap(_frames([1, 0, 3, 0, 4, 0]), [1, 4], forgive=True) > 0.5
    # an answer the head hears exactly has the same gap either way
    exact = _frames([1, 0, 2, 2, 0])
    assert _gap(exact, [1, 2], forgive=True) == _gap(exact, [1, 2], forgive=False)


def test_forgiving_never_raises_a_gap() -> None:
    rng = np.random.default_rng(0)
    starts = np.array([False, True, True, False, True, False, True, True])
    for _ in range(200):
        frames = int(rng.integers(1, 15))
        logp = np.log(rng.dirichlet(np.ones(8), size=frames))[None]
        answer = [int(t) for t in rng.integers(1, 8, size=int(rng.integers(0, 5)))]
        lens = np.array([frames])
        strict, forgiving = (float(runtime_ctc_gaps(logp, lens, [answer], 0, starts, [f])[0]) for f in (False, True))
        assert forgiving <= strict or math.isinf(strict)
