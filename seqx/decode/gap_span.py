"""The CTC gap over a command's length, not over a long piece's.

The CTC gap (seqx/decode/ctc_gap.py) is a mean over every frame the model heard. Over a piece much
longer than its answer takes to say, nearly every frame is blank on both sides, and the answer's
few costly frames are averaged away: on a demo model, 15 s of faint white noise answered "show my
music" with a gap of 0.117 nats a frame against a margin of 0.189 (docs/decoding.md). So the gap's
sum is divided by at most the frames a command of the answer's length can take: `gap_span_factor`
times the longest training utterance of at most as many words (`gap_spans`, measured by training
and stored in the bundle). A part no longer than that keeps its gap exactly; a longer one's gap
grows with its length. Pure Python: the torch path and the torch-free runtime share it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence


def longest_by_words(utterances: Iterable[tuple[str, float]]) -> list[float]:
    """[the longest duration (s) of an utterance of at most n words, for n = 1, 2, ...] from
    (text, duration) pairs; utterances with no words are left out. Below the fewest words any
    utterance has (a grammar of dates has no one-word sentence), that of the fewest. [] when none
    has a word."""
    longest: dict[int, float] = {}
    for text, duration in utterances:
        words = len(text.split())
        if words:
            longest[words] = max(longest.get(words, 0.0), float(duration))
    if not longest:
        return []
    spans = [longest[min(longest)]] * min(longest)
    for words in range(min(longest) + 1, max(longest) + 1):
        spans.append(max(longest.get(words, 0.0), spans[-1]))
    return [round(s, 3) for s in spans]


def span_limit(spans: Sequence[float] | None, words: int, factor: float) -> float | None:
    """Seconds a command of `words` words may take before its gap is spread over more than that:
    `factor` times the longest training utterance of at most that many words (the longest of any,
    past the longest trained on). None = no limit (no spans recorded, or factor 0)."""
    if not spans or factor <= 0:
        return None
    return factor * spans[min(max(words, 1), len(spans)) - 1]


def spanned_gap(
    gap: float | None, seconds: float, words: int, spans: Sequence[float] | None, factor: float
) -> float | None:
    """The CTC gap of an answer of `words` words to a part of `seconds` seconds, as a mean over at
    most `span_limit` seconds of it: gap * max(1, seconds / limit)."""
    limit = span_limit(spans, words, factor)
    if gap is None or limit is None or limit <= 0 or not math.isfinite(gap) or gap <= 0:
        return gap
    return gap * max(1.0, seconds / limit)
