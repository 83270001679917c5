"""The joint CTC/attention training loss."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor

from seqx.model.attention import make_pad_mask
from seqx.model.slot_head import slot_loss
from seqx.model.transformer import ModelDimensions, ModelOutput


def joint_loss(
    output: ModelOutput,
    targets: Tensor,
    target_lens: Tensor,
    dims: ModelDimensions,
    ctc_weight: float,
    label_smoothing: float,
    *,
    sync: bool = True,
    slot_labels: Tensor | None = None,
    slot_weight: float = 0.0,
) -> tuple[Tensor, dict[str, float]] | tuple[Tensor, dict[str, Tensor]]:
    """(1 - w) * CE + w * CTC, both per target token, + slot_weight * the intent/slot heads' NLL.

    targets (B, U) = y + [eos], padded with anything; target_lens (B,) counts the eos.
    CE: label-smoothed cross-entropy summed over real target tokens / their number.
    CTC: -log p(y | x) (targets without eos; length 0 is legal) summed over the batch and
    divided by the same token count, so both terms share one scale and an empty
    transcript never divides by zero. zero_infinity drops impossible alignments.
    The heads' term (seqx/model/slot_head.py slot_loss, per labelled utterance) is added when
    the model has heads, `slot_labels` (B, H) are given and slot_weight > 0.
    Returns the loss and its parts {"ce", "ctc", "slot", "loss"}: floats (one device sync for all),
    or with `sync=False` detached 0-d tensors, read when the caller needs the numbers.
    """
    logits = output.logits.float()  # (B, U, V); the loss in fp32 even under bf16 autocast
    U = logits.shape[1]
    pad = make_pad_mask(target_lens, U)  # (B, U)
    tokens = target_lens.sum().clamp(min=1)
    ce = F.cross_entropy(
        logits.transpose(1, 2), targets[:, :U].masked_fill(pad, -100), ignore_index=-100,
        label_smoothing=label_smoothing, reduction="sum",
    ) / tokens
    parts = {"ce": ce.detach()}
    loss = ce
    if ctc_weight > 0 and output.ctc_logprobs is not None:
        ctc_lens = (target_lens - 1).clamp(min=0)  # drop the eos
        width = max(int(ctc_lens.max()), 1)
        ctc_targets = targets[:, :width].masked_fill(make_pad_mask(ctc_lens, width), 0)  # (B, L)
        ctc = F.ctc_loss(
            output.ctc_logprobs.float().transpose(0, 1),  # (S, B, V)
            ctc_targets,
            output.mem_lens,
            ctc_lens,
            blank=dims.blank_id,
            reduction="sum",
            zero_infinity=True,
        ) / tokens
        parts["ctc"] = ctc.detach()
        loss = (1 - ctc_weight) * ce + ctc_weight * ctc
    if slot_weight > 0 and output.slot_logprobs is not None and slot_labels is not None:
        slots = slot_loss(output.slot_logprobs, slot_labels, dims.slot_classes)
        parts["slot"] = slots.detach()
        loss = loss + slot_weight * slots
    parts["loss"] = loss.detach()
    if not sync:
        return loss, parts
    return loss, dict(zip(parts, torch.stack(list(parts.values())).tolist(), strict=True))


__all__ = ["joint_loss"]
