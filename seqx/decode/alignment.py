"""Cross-attention weights for pictures: which encoder frames each output token looked at.

Inference runs through `scaled_dot_product_attention`, which never materializes
the attention matrix. For a plot we recompute softmax(QK^T/sqrt(d_k)) explicitly
from the inputs each cross-attention module received (captured by forward hooks),
so decoding code stays fused and this costs nothing when nobody draws.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from seqx.model.transformer import Seq2SeqTransformer


@torch.inference_mode()
def cross_attention_weights(
    model: Seq2SeqTransformer, feats: Tensor, tokens: list[int]
) -> tuple[list[Tensor], int]:
    """One utterance: feats (T, F), output tokens (no bos) -> per decoder layer (U+1, S) head-averaged weights.

    Rows are the positions fed to the decoder ([bos] + tokens), i.e. the step that predicts
    each token and the final end-of-sentence. Also returns S, the encoder length.
    """
    was_training = model.training
    model.eval()
    captured: list[Tensor] = []

    def hook(module, args, kwargs, output):  # type: ignore[no-untyped-def]
        h, xa = args[0], args[1]
        q = module._split(module.query(h))  # (1, H, U, dh)
        k = module._split(module.key(xa))  # (1, H, S, dh)
        scores = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])  # (1, H, U, S)
        mask = kwargs.get("mask")
        if mask is not None:
            scores = scores.masked_fill(~mask, float("-inf"))
        captured.append(scores.softmax(-1).mean(1)[0].float().cpu())  # (U, S)

    handles = [
        block.cross_attn.register_forward_hook(hook, with_kwargs=True)
        for block in model.decoder.blocks
        if block.cross_attn is not None
    ]
    try:
        lens = torch.tensor([feats.shape[0]], device=feats.device)
        memory, mem_lens = model.encode(feats[None], lens)
        ys = torch.tensor([[model.dims.bos_id, *tokens]], device=feats.device)
        model.decode(ys, memory, mem_lens)
    finally:
        for handle in handles:
            handle.remove()
        model.train(was_training)
    return captured, int(mem_lens[0])
