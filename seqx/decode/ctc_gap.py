"""The CTC gap: how much less the CTC head believes a transcript than its own best guess.

For each utterance, (log p of the best CTC path - log p_ctc(transcript)) / frames, in nats
per encoder frame. When the attention decoder and the CTC head agree (a command that was
said) it stays near 0. When the decoder makes up a command the audio does not hold (the
start of the command cut off, so the decoder's grammar prior completes it as something
else) the CTC head assigns that transcript far less than its best path, and the gap grows.
`decode.max_ctc_gap` turns such results into "no speech". The best path is a lower bound
on the best label sequence's probability, so the gap can be slightly negative.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor

from seqx.model.attention import make_pad_mask
from seqx.model.transformer import Seq2SeqTransformer


def ctc_gaps(model: Seq2SeqTransformer, memory: Tensor, mem_lens: Tensor, transcripts: list[list[int]]) -> Tensor:
    """(B,) gap per utterance for the token sequences `transcripts`; the model needs a CTC head."""
    return ctc_gaps_from(model.ctc_logprobs(memory), mem_lens, transcripts, model.dims.blank_id)


def ctc_gaps_from(logp: Tensor, mem_lens: Tensor, transcripts: list[list[int]], blank: int) -> Tensor:
    """(B,) gap per utterance for the token sequences `transcripts`, from the CTC head's
    log-posteriors logp (B, S, V) float32 (`model.ctc_logprobs(memory)`)."""
    pad = make_pad_mask(mem_lens, logp.shape[1])  # (B, S)
    best = logp.max(dim=-1).values.masked_fill(pad, 0.0).sum(dim=1)  # (B,)
    lengths = torch.tensor([len(t) for t in transcripts], dtype=torch.long, device=logp.device)
    flat = [token for t in transcripts for token in t]
    targets = torch.tensor(flat, dtype=torch.long, device=logp.device)
    nll = F.ctc_loss(
        logp.transpose(0, 1),  # (S, B, V)
        targets,
        mem_lens,
        lengths,
        blank=blank,
        reduction="none",
        zero_infinity=False,  # a transcript no alignment allows gets an infinite gap: rejected
    )
    return (nll + best) / mem_lens.clamp(min=1).float()
