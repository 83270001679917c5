"""How library code reports progress and skipped inputs without printing.

Library functions take a `Reporter`; the CLI passes one that draws rich
progress bars and prints warnings, tests pass `Collect` (or nothing) and read
what was said. Nothing here prints.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol


class Task(Protocol):
    def advance(self, n: float = 1, **fields: Any) -> None:
        """Count `n` more units done; `fields` (loss=..., lr=...) are shown beside the bar."""

    def close(self) -> None: ...


class Reporter(Protocol):
    def task(self, description: str, total: float | None, unit: str = "utt") -> Task:
        """Start a unit of long work with a known (or unknown: None) amount."""

    def warn(self, message: str) -> None:
        """Something was skipped or odd; one line that names the file and the problem."""

    def info(self, message: str) -> None:
        """A plain status line (stage up to date, resumed from step N, ...)."""


class _NullTask:
    def advance(self, n: float = 1, **fields: Any) -> None:
        pass

    def close(self) -> None:
        pass


@dataclass
class Collect:
    """A reporter that keeps every message; the default when the caller passes none."""

    warnings: list[str] = field(default_factory=list)
    infos: list[str] = field(default_factory=list)

    def task(self, description: str, total: float | None, unit: str = "utt") -> Task:
        return _NullTask()

    def warn(self, message: str) -> None:
        self.warnings.append(message)

    def info(self, message: str) -> None:
        self.infos.append(message)
