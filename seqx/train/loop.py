"""The training loop: steps, accumulation, NaN guard, validation at each epoch's end.

One optimizer step = `accum_steps` batches. Checkpoint keeping (save, prune, RNG
states, resume, best-N) is in checkpoint.py, the log (jsonl, TensorBoard) in log.py.
A resumed run goes on as if it had never stopped: the schedule is a pure function of
the step, the sampler of seed and epoch (and the batches of it already consumed), and
the RNG states come back from the checkpoint. The DataLoader gets its own generator so
that creating one mid-epoch does not draw from the global RNG, which dropout and
SpecAugment use. The loss is read back from the device once per batch, for the NaN
guard (which must decide before the backward pass) and the progress line.
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.distributed as dist
from torch import nn

from seqx.decode.transcribe import native_bf16
from seqx.errors import SeqxError
from seqx.faults import fault_point
from seqx.featurize.specaugment import SpecAugment
from seqx.model.loss import joint_loss
from seqx.model.transformer import ModelDimensions, Seq2SeqTransformer, param_groups
from seqx.recipe import Recipe
from seqx.report import Reporter
from seqx.tokenize.tokenizer import Tokenizer
from seqx.torch_threads import ThreadGovernor
from seqx.train.batching import LengthBucketSampler
from seqx.train.checkpoint import LAST, CheckpointKeeper, bundle_weights, read_models
from seqx.train.dataset import Batch, Collate, UtteranceDataset
from seqx.train.distributed import DistInfo
from seqx.train.log import LOG, TrainLog
from seqx.train.schedule import learning_rate
from seqx.train.validate import ValidResult, validate

__all__ = ["LAST", "LOG", "TrainReport", "TrainState", "Trainer"]


@dataclass
class TrainReport:
    bundle_dir: str
    fresh: bool  # True: the bundle was up to date, nothing was trained
    device: str
    world_size: int = 1
    parameters: int = 0
    epochs: int = 0  # epochs completed
    steps: int = 0  # optimizer steps
    best_valid_wer: float | None = None  # greedy, on at most train.valid_max_utts valid utterances
    best_epoch: int | None = None
    bundle_valid_wer: float | None = None  # the bundle's (averaged) model, same utterances
    skipped_batches: int = 0  # non-finite losses (or gradients) skipped
    stopped_early: bool = False
    resumed_from_step: int | None = None
    wall_seconds: float = 0.0  # this invocation
    cpu_threads: int = 0  # torch's threads on a CPU (0: another device)
    fewest_threads: int = 0  # the fewest the trainer gave way to while another program was busy (seqx.torch_threads)
    fewer_threads_seconds: float = 0.0  # training time spent with fewer
    averaged: list[str] = field(default_factory=list)  # checkpoints averaged into the bundle
    left_out: list[str] = field(default_factory=list)  # best checkpoints not in the bundle (checkpoint.bundle_weights)


def mark_sizes_dynamic(feats: torch.Tensor, feat_lens: torch.Tensor, tokens_in: torch.Tensor, target_lens: torch.Tensor) -> None:
    """Batch size, frames and tokens change from step to step: the compiled step is traced with them symbolic
    from its first call, so it compiles once. Left to `dynamic=None`, the first batch compiled a static graph
    and the second a symbolic one: two compiles where one serves (a tiny model on a CPU: 114 s against 71 s).
    The feature dimension stays static, and so does any size-1 dimension (dynamo specializes those), so a
    one-utterance batch still gets a graph of its own."""
    for tensor, dims in ((feats, (0, 1)), (feat_lens, (0,)), (tokens_in, (0, 1)), (target_lens, (0,))):
        torch._dynamo.maybe_mark_dynamic(tensor, dims)


@dataclass
class TrainState:
    """The loop's own counters, saved beside the weights and optimizer."""

    step: int = 0  # optimizer steps taken
    epoch: int = 0  # the epoch in progress (0-based)
    batch_in_epoch: int = 0  # batches of `epoch` consumed on this rank
    nan_skipped: int = 0  # batches (or steps, for non-finite gradients) skipped
    nan_in_row: int = 0
    bad_epochs: int = 0  # epochs since valid WER last improved
    stopped_early: bool = False
    epochs: list[dict[str, Any]] = field(default_factory=list)  # per epoch: step, valid loss/WER, checkpoint


class Trainer:
    def __init__(
        self,
        recipe: Recipe,
        dims: ModelDimensions,
        train_data: UtteranceDataset,
        valid_data: UtteranceDataset,
        tokenizer: Tokenizer,
        device: torch.device,
        dist_info: DistInfo,
        reporter: Reporter,
        run_key: str,
    ) -> None:
        self.recipe, self.settings = recipe, recipe.train
        self.dims, self.tokenizer, self.device, self.dist = dims, tokenizer, device, dist_info
        self.train_data, self.valid_data = train_data, valid_data
        self.reporter, self.run_key = reporter, run_key
        # bf16 autocast (fp32 master weights and loss) where the hardware does bf16 matmuls: CUDA, and CPUs
        # with AVX512-BF16/AMX (1.15x a step on the cpu profile; emulated bf16 elsewhere would be slower)
        self.autocast = self.settings.bf16 and native_bf16(device)
        self.ckpt_dir = recipe.checkpoint_dir
        # Same seed on every rank for the weights (DDP also broadcasts rank 0's), then one per rank
        # so dropout and SpecAugment differ between ranks.
        torch.manual_seed(self.settings.seed)
        self.model = Seq2SeqTransformer(dims).to(device)
        self._seed_rank()
        self.net: nn.Module = self.model
        if dist_info.enabled:
            ids = [device.index] if device.type == "cuda" else None
            self.net = nn.parallel.DistributedDataParallel(self.model, device_ids=ids)
        # what the training step calls; checkpoints, validation and the bundle use self.model itself. dynamic=None
        # and mark_sizes_dynamic: the sizes that change are symbolic, the feature dimension static; with
        # dynamic=True inductor could not order the strides of a one-utterance batch's (1, 1, T, F) in the conv2d
        # front-end ("1 < s76", 2026-11-30)
        self.forward: Callable[..., Any] = torch.compile(self.net, dynamic=None) if self.settings.compile else self.net
        self.optimizer = torch.optim.AdamW(
            param_groups(self.model, self.settings.weight_decay),
            lr=self.settings.lr,
            betas=(0.9, 0.98),
            eps=1e-9,
            fused=device.type in ("cuda", "cpu"),  # fused AdamW on a CPU: 3.6x faster than the default loop
        )
        self.specaug = SpecAugment(recipe.features.spec) if recipe.features.specaugment else None
        self.sampler = LengthBucketSampler(
            train_data.store.lengths, self.settings.max_frames, True, self.settings.seed, dist_info.rank, dist_info.world_size
        )
        self.collate = Collate(tokenizer.pad_id, tokenizer.bos_id, tokenizer.eos_id)
        self.state = TrainState()
        self.checkpoints = CheckpointKeeper(self.ckpt_dir, run_key, self.settings, dist_info, device)
        self.log = TrainLog(recipe.root, recipe.tb_dir, dist_info.is_main)
        # on a CPU, one thread fewer for each core another program keeps busy (seqx/torch_threads.py)
        self.threads = ThreadGovernor(enabled=device.type == "cpu")

    def _seed_rank(self) -> None:
        seed = self.settings.seed * 1000 + self.dist.rank + 1
        random.seed(seed)
        np.random.seed(seed % 2**32)
        torch.manual_seed(seed)

    # ------------------------------------------------------------------ resume

    def resume(self, path: Path) -> None:
        ckpt = self.checkpoints.load(path)  # checks the run key, restores this rank's RNG state
        self.model.load_state_dict(ckpt["model"])
        self.optimizer.load_state_dict(ckpt["optimizer"])
        self.state = TrainState(**ckpt["state"])
        self.sampler.load_state_dict(ckpt["sampler"])
        self.state.batch_in_epoch = self.sampler.position
        self.log.truncate(self.state.step)

    # -------------------------------------------------------------------- loop

    def total_steps(self) -> int:
        batches = len(LengthBucketSampler(
            self.train_data.store.lengths, self.settings.max_frames, True, self.settings.seed,
            self.dist.rank, self.dist.world_size,
        ))
        return max(1, self.settings.epochs * math.ceil(batches / self.settings.accum_steps))

    def fit(self) -> TrainState:
        s, cfg = self.state, self.settings
        total = self.total_steps()
        self.log.open(s.step)
        with self.threads:  # its thread count back after the last epoch, or a fault
            while s.epoch < cfg.epochs and not s.stopped_early:
                self.sampler.set_epoch(s.epoch)
                self.sampler.position = s.batch_in_epoch
                n_batches = len(self.sampler)
                loader = torch.utils.data.DataLoader(
                    self.train_data,
                    batch_sampler=self.sampler,
                    collate_fn=self.collate,
                    num_workers=cfg.workers,
                    pin_memory=self.device.type == "cuda",
                    generator=torch.Generator().manual_seed(cfg.seed + s.epoch),
                )
                task = self.reporter.task(f"train epoch {s.epoch + 1}", total=n_batches, unit="batch")
                if s.batch_in_epoch:
                    task.advance(s.batch_in_epoch)
                self.net.train()
                took = window = 0  # batches with a backward pass / batches in this accumulation window
                started, utts, running = time.monotonic(), 0, []
                for batch in loader:
                    window += 1
                    closes = window == cfg.accum_steps or s.batch_in_epoch + 1 == n_batches
                    finite, loss = self._forward_backward(batch.to(self.device), sync=closes)
                    s.batch_in_epoch += 1
                    took += finite
                    utts += batch.size
                    if finite:
                        running.append(loss)
                    if closes:
                        lr = self._optimizer_step(took, last_synced=finite, total=total)
                        took = window = 0
                        if lr is not None:
                            fault_point("step")
                            self._log_step(lr, running)
                            running = []
                            if s.step % cfg.save_every_steps == 0:
                                self.save(self.ckpt_dir / LAST)
                    task.advance(
                        1, loss=loss if finite else float("nan"), lr=self._lr(total),
                        utt_s=utts / max(time.monotonic() - started, 1e-9),
                    )
                    self.threads.tick()
                task.close()
                s.epoch, s.batch_in_epoch = s.epoch + 1, 0
                self._end_epoch()
        return s

    def _forward_backward(self, batch: Batch, sync: bool) -> tuple[bool, float]:
        """One batch: loss, agreement across ranks that it is finite, backward. Returns (finite, loss)."""
        s, cfg = self.state, self.settings
        feats = self.specaug(batch.feats, batch.feat_lens) if self.specaug is not None else batch.feats
        quiet = self.net.no_sync() if self.dist.enabled and not sync else nullcontext()
        with quiet:
            with torch.autocast(self.device.type, dtype=torch.bfloat16, enabled=self.autocast):
                if self.settings.compile:
                    mark_sizes_dynamic(feats, batch.feat_lens, batch.tokens_in, batch.target_lens)
                out = self.forward(feats, batch.feat_lens, batch.tokens_in, batch.target_lens)
                loss, parts = joint_loss(
                    out, batch.targets, batch.target_lens, self.dims, self.recipe.model.ctc_weight,
                    cfg.label_smoothing, sync=False, slot_labels=batch.slot_labels, slot_weight=cfg.slot_weight,
                )
            value = parts["loss"].item()  # the batch's one device sync: the guard below needs it
            finite = self._all_finite(math.isfinite(value))
            if finite:
                (loss / cfg.accum_steps).backward()
                s.nan_in_row = 0
                return True, value
        self._count_nan("loss")
        return False, value

    def _all_finite(self, finite: bool) -> bool:
        """Every rank skips a batch together, or the next all-reduce would wait forever."""
        if not self.dist.enabled:
            return finite
        flag = torch.tensor([1.0 if finite else 0.0], device=self.device)
        dist.all_reduce(flag, op=dist.ReduceOp.MIN)
        return bool(flag.item())

    def _count_nan(self, what: str) -> None:
        s = self.state
        s.nan_skipped += 1
        s.nan_in_row += 1
        if s.nan_in_row >= self.settings.max_nan_in_row:
            last = self.ckpt_dir / LAST
            kept = f"the last good checkpoint is {last}" if last.is_file() else "no checkpoint was written yet"
            raise SeqxError(
                f"training stopped: {s.nan_in_row} non-finite {what}es in a row at step {s.step} "
                f"(epoch {s.epoch + 1}, train.max_nan_in_row={self.settings.max_nan_in_row}); {kept}. "
                "Check the features for NaN/inf, or lower train.lr"
            )

    def _lr(self, total: int) -> float:
        cfg = self.settings
        return learning_rate(self.state.step + 1, cfg.lr, cfg.warmup_steps, total, cfg.schedule, cfg.lr_floor)

    def _optimizer_step(self, took: int, last_synced: bool, total: int) -> float | None:
        """Step when the window had any finite batch; returns the learning rate used, None if skipped."""
        if took == 0:
            self.optimizer.zero_grad(set_to_none=True)
            return None
        if self.dist.enabled and not last_synced:
            # the window's last batch was skipped, so its (syncing) backward never ran: average by hand
            for p in self.model.parameters():
                if p.grad is not None:
                    dist.all_reduce(p.grad)
                    p.grad /= self.dist.world_size
        lr = self._lr(total)
        for group in self.optimizer.param_groups:
            group["lr"] = lr
        clip = self.settings.grad_clip if self.settings.grad_clip > 0 else float("inf")
        norm = torch.nn.utils.clip_grad_norm_(self.model.parameters(), clip)
        if not torch.isfinite(norm):  # same on every rank: the gradients are already all-reduced
            self.optimizer.zero_grad(set_to_none=True)
            self._count_nan("gradient")
            return None
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        self.state.step += 1
        return lr

    # ------------------------------------------------------------- bookkeeping

    def _log_step(self, lr: float, losses: list[float]) -> None:
        s = self.state
        if not self.dist.is_main or s.step % self.settings.log_every and s.step != 1:
            return
        loss = float(np.mean(losses)) if losses else float("nan")
        row = {"step": s.step, "epoch": s.epoch + 1, "loss": loss, "lr": lr, "nan_skipped": s.nan_skipped}
        self.log.row(row, {"train/loss": loss, "train/lr": lr})

    def _end_epoch(self) -> None:
        s = self.state
        decision = [None]
        if self.dist.is_main:
            decision = [self._judge_epoch(self.validate())]
        if self.dist.enabled:
            dist.broadcast_object_list(decision, src=0)
        s.bad_epochs, s.epochs, s.stopped_early = decision[0]  # type: ignore[misc]
        self.save(self.ckpt_dir / s.epochs[-1]["path"], also_last=True)
        if self.dist.is_main:
            self.checkpoints.prune(s.epochs)

    def _judge_epoch(self, result: ValidResult) -> tuple[int, list[dict[str, Any]], bool]:
        """Record the epoch's validation; returns (bad epochs in a row, epoch records, stop early)."""
        s, cfg = self.state, self.settings
        path = self.ckpt_dir / f"epoch-{s.epoch:03d}.pt"
        # better = lower WER, or the same WER with lower loss (WER sits at 100% for the first epochs)
        previous = [(e["wer"], e["loss"]) for e in s.epochs]
        improved = not previous or (result.wer, result.loss) < min(previous)
        s.bad_epochs = 0 if improved else s.bad_epochs + 1
        s.epochs.append({"epoch": s.epoch, "step": s.step, "loss": result.loss, "wer": result.wer, "path": path.name})
        stop = bool(cfg.early_stop_patience and s.bad_epochs >= cfg.early_stop_patience)
        row = {"step": s.step, "epoch": s.epoch, "valid_loss": result.loss, "valid_wer": result.wer,
               "valid_cer": result.cer}  # fmt: skip
        self.log.row(row, {"valid/loss": result.loss, "valid/wer": result.wer}, flush=True)
        self.reporter.info(
            f"epoch {s.epoch}: step {s.step}, valid loss {result.loss:.3f}, greedy WER {100 * result.wer:.1f}%"
            + (f", {s.nan_skipped} non-finite skipped" if s.nan_skipped else "")
        )
        return s.bad_epochs, s.epochs, stop

    def validate(self, model: Seq2SeqTransformer | None = None) -> ValidResult:
        r = self.recipe
        return validate(
            model or self.model, self.valid_data, self.tokenizer, r.train, r.decode, r.model.ctc_weight,
            self.device, self.autocast,
        )  # fmt: skip

    def best_paths(self) -> list[Path]:
        return self.checkpoints.best_paths(self.state.epochs)

    def save(self, path: Path, also_last: bool = False) -> None:
        """Collective: every rank calls it (their RNG states are gathered); rank 0 writes."""
        self.checkpoints.save(path, self._content, also_last)

    def _content(self) -> dict[str, Any]:
        sampler = self.sampler.state_dict()
        sampler.update(epoch=self.state.epoch, position=self.state.batch_in_epoch)
        return {
            "dims": self.dims.to_dict(),
            "model": self.model.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "state": asdict(self.state),
            "sampler": sampler,
        }

    def bundle_model(self) -> tuple[Seq2SeqTransformer, list[Path], list[Path], float]:
        """The model for the bundle (rank 0): the best checkpoints averaged, unless their mean validates
        clearly worse than the best alone (`bundle_weights`), with the checkpoints it holds, those left
        out, and its valid WER."""
        model = Seq2SeqTransformer(self.dims).to(self.device)
        paths = [p for p in self.best_paths() if p.is_file()]
        if not paths:  # no epoch ended (nothing to average): the weights as they are
            model.load_state_dict(self.model.state_dict())
            return model.eval(), [], [], self.validate(model.eval()).wer

        def valid_wer(weights: dict[str, torch.Tensor]) -> float:
            model.load_state_dict(weights)
            return self.validate(model.eval()).wer

        ranked = read_models(paths, skip=self.reporter.warn)  # an unreadable one is said and skipped
        logged = {e["path"]: e["wer"] for e in self.state.epochs}  # each epoch validated its own weights
        kept, weights, wer = bundle_weights(ranked, valid_wer, logged.get(ranked[0][0].name))
        model.load_state_dict(weights)
        return model.eval(), kept, [path for path, _ in ranked if path not in kept], wer

    def close(self) -> None:
        self.log.close()
