"""Which device to run on: the one place `auto`, `cpu`, `cuda` and `cuda:N` are understood."""

from __future__ import annotations

from typing import TYPE_CHECKING

from seqx.errors import SeqxError

if TYPE_CHECKING:
    import torch


def resolve_device(requested: str = "auto", source: str = "--device") -> torch.device:
    """"auto" -> cuda when present, else cpu; a CUDA device asked for on a machine without one
    (or a name that is no device) is an error naming `source` (the option or recipe key)."""
    import torch  # late: `seqx --help` and the recipe schema should not wait for torch

    if requested == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if requested.startswith("cuda") and not torch.cuda.is_available():
        raise SeqxError(f"{source}: {requested} asked for, but no CUDA device is available")
    if requested != "cpu" and not requested.startswith("cuda"):
        raise SeqxError(f"{source}: {requested!r} is not a device (auto, cpu, cuda, cuda:N)")
    return torch.device(requested)


def device_kind(requested: str | None = None) -> str:
    """"cuda" or "cpu": which device profile of a recipe applies to `requested` (None: this machine)."""
    if requested and requested.startswith("cuda"):
        return "cuda"
    return "cpu" if requested == "cpu" else resolve_device("auto").type
