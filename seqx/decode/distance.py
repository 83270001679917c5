"""Word edit distance between two transcripts: how far a free decode is from the grammar's answer."""

from __future__ import annotations


def word_distance(a: str, b: str) -> float:
    """Word edit distance between two sentences over the longer one's words (0 same .. 1 nothing shared)."""
    x, y = a.split(), b.split()
    if not x and not y:
        return 0.0
    row = list(range(len(y) + 1))
    for i, wx in enumerate(x, 1):
        prev, row[0] = row[0], i
        for j, wy in enumerate(y, 1):
            prev, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, prev + (wx != wy))
    return row[-1] / max(len(x), len(y))
