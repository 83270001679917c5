"""Markdown tables for the bench scripts: the rows docs/benchmarks.md pastes as they are printed."""

from __future__ import annotations

from collections.abc import Collection, Iterable


def markdown_table(columns: list[str], rows: Iterable[Iterable[object]], right: Collection[int] = ()) -> str:
    """A header, its rule and one line per row; the columns numbered in `right` are right-aligned."""
    rule = ["---:" if i in right else "---" for i in range(len(columns))]
    lines = [columns, rule, *([str(cell) for cell in row] for row in rows)]
    return "\n".join(f"| {' | '.join(line)} |" for line in lines)
