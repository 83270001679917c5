"""The CTC gap: zero or below for what the CTC head itself hears, larger for anything else."""

from __future__ import annotations

import math

import torch

from seqx.decode.ctc_gap import ctc_gaps
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
