"""Word edit distance between two transcripts: how far a free decode is from the grammar's answer."""

from __future__ import annotations


def word_edits(a: str, b: str) -> tuple[int, int]:
    """(word edits from one sentence to the other, the longer one's words)."""
    x, y = a.split(), b.split()
    row = list(range(len(y) + 1))
    for i, wx in enumerate(x, 1):
        prev, row[0] = row[0], i
        for j, wy in enumerate(y, 1):
            prev, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, prev + (wx != wy))
    return row[-1], max(len(x), len(y))


def word_distance(a: str, b: str) -> float:
    """Word edit distance between two sentences over the longer one's words (0 same .. 1 nothing shared)."""
    return distances(a, b, 0)[0]


def checked_distance(heard: str, answer: str, slack: int) -> float:
    """The distance the `reject_distance` check compares with its threshold (`distances`)."""
    return distances(heard, answer, slack)[1]


def distances(heard: str, answer: str, slack: int) -> tuple[float, float]:
    """(word distance, the distance the `reject_distance` check compares with its threshold: the
    word distance, but 0 when the two differ by `slack` words or fewer), from one edit count.

    Why the slack: a share alone punishes long commands. Valid's synthetic commands are heard word
    for word, so the threshold chosen there is often below 1/6, and a person's six-word command
    whose free transcript is one word off ("sunday n november at four forty") is then turned away
    although the grammar's answer is right (docs/benchmarks.md "One word off")."""
    edits, words = word_edits(heard, answer)
    share = edits / words if words else 0.0
    return share, 0.0 if edits <= slack else share
