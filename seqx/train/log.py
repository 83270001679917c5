"""The run's log: one JSON line per logged step or epoch (train_log.jsonl) and TensorBoard.

Only the main rank logs. On resume the rows (and TensorBoard events) written after the
checkpoint by the interrupted run are dropped, since they will be written again.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from seqx.stage import atomic_write_text

LOG = "train_log.jsonl"


class TrainLog:
    def __init__(self, root: Path, tb_dir: Path, enabled: bool) -> None:
        self.path, self.tb_dir, self.enabled = root / LOG, tb_dir, enabled
        self.tb = None  # opened by `open`, once the step to resume from is known

    def open(self, step: int) -> None:
        if not self.enabled or self.tb is not None:
            return
        from torch.utils.tensorboard import SummaryWriter

        # purge_step: events written after the checkpoint by an interrupted run are dropped
        self.tb = SummaryWriter(str(self.tb_dir), purge_step=step + 1 if step else None)

    def truncate(self, step: int) -> None:
        """Drop log rows written after the checkpoint we resume from: they will be written again."""
        if self.enabled:
            truncate_log(self.path, step)

    def row(self, row: dict[str, Any], scalars: dict[str, float] | None = None, flush: bool = False) -> None:
        """Append `row` to the jsonl log and `scalars` ({"train/loss": x}) to TensorBoard at row["step"]."""
        if not self.enabled:
            return
        with self.path.open("a") as handle:
            handle.write(json.dumps(row) + "\n")
        if self.tb is not None:
            for name, value in (scalars or {}).items():
                self.tb.add_scalar(name, value, row["step"])
            if flush:
                self.tb.flush()

    def close(self) -> None:
        if self.tb is not None:
            self.tb.close()


def truncate_log(path: Path, step: int) -> None:
    """Keep the rows of `path` up to `step`."""
    if not path.is_file():
        return
    rows = [line for line in path.read_text().splitlines() if line.strip() and json.loads(line).get("step", 0) <= step]
    atomic_write_text(path, "".join(r + "\n" for r in rows))
