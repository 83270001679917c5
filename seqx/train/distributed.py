"""DistributedDataParallel set-up from torchrun's environment (RANK, WORLD_SIZE, LOCAL_RANK)."""

from __future__ import annotations

import atexit
import os
import sys
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
    global _joined
    _joined = True
    return info


_joined = False  # this process joined a process group (see end_process)


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


def joined() -> bool:
    return _joined


def end_process(code: int | str | None) -> None:
    """End a torchrun worker now, skipping the interpreter's teardown.

    Gloo's process group outlives `destroy_process_group` (its handle is still alive after it
    and a gc.collect(), torch 2.11) and is destroyed during interpreter finalization, where it
    can abort the process
    ("terminate called without an active exception", SIGABRT) after the run has succeeded:
    torchrun then reports the whole run failed (seen once in CI on the two-rank gloo test;
    pytorch/pytorch#179291 describes the same teardown). Everything seqx must finish is
    finished by then: the atexit handlers run here, the output is flushed, then os._exit.
    """
    if isinstance(code, str):
        print(code, file=sys.stderr)
        code = 1
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    os._exit(code or 0)
