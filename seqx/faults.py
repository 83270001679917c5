"""Fault injection for the kill tests: `SEQX_KILL_AT=POINT[:N]` kills this process at the Nth pass of POINT.

The fault tests (tests/test_faults.py, bench/faults.py) must stop `seqx train` at unlucky
moments (halfway through writing a checkpoint, between a bundle's weights and its config)
that a timer would hit only by chance. Each such moment calls `fault_point("name")`; with
the variable unset that is one dict lookup. SIGKILL, not an exception: nothing may clean up,
exactly as when the machine loses power or the OOM killer strikes.

Points: data, featurize, tokenize, step, checkpoint_write, average, bundle.
"""

from __future__ import annotations

import os
import signal

_passes: dict[str, int] = {}


def fault_point(name: str) -> None:
    """Kill this process here when SEQX_KILL_AT names this point (and this is its Nth pass)."""
    wanted = os.environ.get("SEQX_KILL_AT")
    if not wanted:
        return
    point, _, nth = wanted.partition(":")
    if point != name:
        return
    _passes[name] = _passes.get(name, 0) + 1
    if _passes[name] >= int(nth or 1):
        os.kill(os.getpid(), signal.SIGKILL)
