"""DistributedDataParallel set-up from torchrun's environment (RANK, WORLD_SIZE, LOCAL_RANK)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import timedelta

import torch
import torch.distributed as dist


@dataclass(frozen=True)
class DistInfo:
    rank: int = 0
    world_size: int = 1
    local_rank: int = 0

    @property
    def enabled(self) -> bool:
        return self.world_size > 1

    @property
    def is_main(self) -> bool:
        return self.rank == 0


def init_distributed(device_kind: str) -> DistInfo:
    """Join the process group when launched by torchrun; a plain run is world size 1."""
    world_size = int(os.environ.get("WORLD_SIZE", "1"))
    if world_size <= 1:
        return DistInfo()
    info = DistInfo(int(os.environ["RANK"]), world_size, int(os.environ.get("LOCAL_RANK", "0")))
    if not dist.is_initialized():
        backend = "nccl" if device_kind == "cuda" else "gloo"
        if device_kind == "cuda":
            torch.cuda.set_device(info.local_rank)
        dist.init_process_group(backend=backend)
    return info


PREPARE_TIMEOUT = timedelta(hours=12)  # rank 0 may synthesize and featurize a whole corpus meanwhile


def barrier(info: DistInfo) -> None:
    if info.enabled:
        dist.barrier()


def wait_for_rank0(info: DistInfo) -> None:
    """Hold the other ranks while rank 0 prepares the data, however long that takes.

    The default process group times out after minutes (NCCL: 10); this waits in a CPU
    (gloo) group of its own with a long timeout, so a big corpus does not kill the run.
    """
    if info.enabled:
        group = dist.new_group(backend="gloo", timeout=PREPARE_TIMEOUT)
        dist.barrier(group=group)
        dist.destroy_process_group(group)


def cleanup(info: DistInfo) -> None:
    if info.enabled and dist.is_initialized():
        dist.destroy_process_group()
