"""Validation each epoch: teacher-forced loss and greedy WER on (a subset of) the valid split."""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from seqx.decode.metrics import score_pairs
from seqx.decode.search import decode_batch
from seqx.model.loss import joint_loss
from seqx.model.transformer import ModelOutput, Seq2SeqTransformer
from seqx.recipe import DecodeSettings, TrainSettings
from seqx.tokenize.tokenizer import Tokenizer
from seqx.train.batching import LengthBucketSampler
from seqx.train.dataset import Collate, UtteranceDataset


@dataclass
class ValidResult:
    loss: float
    wer: float
    cer: float
    sentence_accuracy: float
    utterances: int


@torch.no_grad()
def validate(
    model: Seq2SeqTransformer,
    data: UtteranceDataset,
    tokenizer: Tokenizer,
    train: TrainSettings,
    decode: DecodeSettings,
    ctc_weight: float,
    device: torch.device,
    autocast: bool,
) -> ValidResult:
    """Loss (same objective as training, `model.ctc_weight`) and greedy WER over the first
    `train.valid_max_utts` utterances, decoded as `seqx transcribe --greedy` would."""
    was_training = model.training
    model.eval()
    n = min(len(data), train.valid_max_utts)
    sampler = LengthBucketSampler(data.store.lengths[:n], train.max_frames, shuffle=False)
    collate = Collate(tokenizer.pad_id, tokenizer.bos_id, tokenizer.eos_id)
    # the same entry point and output-length cap as transcribe, greedy (cheap enough for every epoch)
    greedy = decode.merged(greedy=True, nbest=1)
    loss_sum, tokens = 0.0, 0
    refs: list[str] = []
    hyps: list[str] = []
    for indices in sampler:
        batch = collate([data[i] for i in indices]).to(device)
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=autocast):
            memory, mem_lens = model.encode(batch.feats, batch.feat_lens)
            logits = model.decode(batch.tokens_in, memory, mem_lens, token_lens=batch.target_lens)
            ctc = model.ctc_logprobs(memory) if model.ctc_head is not None else None
            loss, _ = joint_loss(
                ModelOutput(logits, ctc, mem_lens), batch.targets, batch.target_lens, model.dims,
                ctc_weight, train.label_smoothing,
            )
            found = [nbest[0] for nbest in decode_batch(model, memory, mem_lens, greedy)]
        count = int(batch.target_lens.sum())
        loss_sum += float(loss) * count
        tokens += count
        refs += [tokenizer.normalize(data.store.texts[i]) for i in indices]
        hyps += [tokenizer.decode(h.tokens) for h in found]
    model.train(was_training)
    scores = score_pairs(refs, hyps)
    return ValidResult(
        loss=loss_sum / tokens if tokens else math.nan,
        wer=scores.wer,
        cer=scores.cer,
        sentence_accuracy=scores.sentence_accuracy,
        utterances=scores.utterances,
    )
