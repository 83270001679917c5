"""Long recordings cut into pieces a model can take, at pauses, and their texts joined.

A model has a span (model.max_positions frames after the front-end); a 10-minute file
is far past it, and a commands model hears one command at a time. `split_long` cuts at
every pause (VAD windows below the threshold) long enough to end a command, then, where a
stretch is still too long, at the longest pause in the last part of each allowed piece, so
words are not cut; where there is no pause at all it cuts hard and lets the next piece
start `overlap_s` earlier, and `join_texts` drops the words the two pieces then both heard.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from seqx.listen.vad import WINDOW, Vad, speech_probs


@dataclass
class Piece:
    """A stretch of the recording: seconds from its start, and the samples."""

    start: float
    end: float
    wave: np.ndarray
    hard_cut: bool = False  # began inside speech (overlapping the previous piece)


def split_long(
    wave: np.ndarray,
    vad: Vad,
    max_s: float,
    sample_rate: int = 16000,
    threshold: float = 0.5,
    overlap_s: float = 1.0,
    search_share: float = 0.5,
    min_pause_s: float = 0.3,
) -> list[Piece]:
    """Pieces of at most `max_s` seconds covering `wave`, one spoken command each where it can.

    A recording longer than `max_s` is first cut at the middle of every pause of at least
    `min_pause_s` (the endpointer's silence in `seqx listen`): the model was trained on one
    command a file, and a grammar-constrained search cannot say two, so a piece with several
    would be "not understood". A stretch still longer than `max_s` is cut at the longest pause
    in the last `search_share` of each allowed piece (hard cut with `overlap_s` of overlap
    where there is none).
    """
    total = wave.size
    limit = int(max_s * sample_rate)
    if total <= limit:
        return [Piece(0.0, total / sample_rate, wave)]
    quiet = speech_probs(wave, vad) < threshold  # (windows,)
    min_run = max(1, int(np.ceil(min_pause_s * sample_rate / WINDOW)))
    bounds = [0] + [cut * WINDOW for cut in _pause_middles(quiet, min_run)] + [total]
    pieces: list[Piece] = []
    for first, stop in zip(bounds, bounds[1:]):
        pieces += _within_limit(wave, quiet, first, stop, limit, sample_rate, overlap_s, search_share)
    return pieces


def _within_limit(
    wave: np.ndarray, quiet: np.ndarray, first: int, stop: int, limit: int, sample_rate: int,
    overlap_s: float, search_share: float,
) -> list[Piece]:  # fmt: skip
    """Samples [first, stop) as pieces of at most `limit` samples, cut at pauses where it can."""
    pieces: list[Piece] = []
    hard = False
    while stop - first > limit:
        lo = (first + int(limit * (1 - search_share))) // WINDOW
        hi = (first + limit) // WINDOW  # windows [lo, hi) end inside the allowed piece
        cut = _pause_middle(quiet, lo, hi)
        if cut is None:
            end = first + limit
            pieces.append(Piece(first / sample_rate, end / sample_rate, wave[first:end], hard))
            first, hard = end - int(overlap_s * sample_rate), True
        else:
            end = cut * WINDOW
            pieces.append(Piece(first / sample_rate, end / sample_rate, wave[first:end], hard))
            first, hard = end, False
    pieces.append(Piece(first / sample_rate, stop / sample_rate, wave[first:stop], hard))
    return pieces


def _pause_middles(quiet: np.ndarray, min_run: int) -> list[int]:
    """The middle window of every run of at least `min_run` quiet windows that has speech on both sides."""
    middles, run_start, heard = [], None, False
    for i in range(quiet.size + 1):
        if i < quiet.size and quiet[i]:
            run_start = i if run_start is None else run_start
            continue
        if run_start is not None and i < quiet.size and heard and i - run_start >= min_run:
            middles.append((run_start + i) // 2)
        run_start, heard = None, heard or i < quiet.size
    return middles


def _pause_middle(quiet: np.ndarray, lo: int, hi: int) -> int | None:
    """The middle window of the longest run of quiet windows in [lo, hi), or None."""
    best, best_len, run_start = None, 0, None
    for i in range(lo, min(hi, quiet.size) + 1):
        if i < min(hi, quiet.size) and quiet[i]:
            run_start = i if run_start is None else run_start
            continue
        if run_start is not None and i - run_start > best_len:
            best, best_len = (run_start + i) // 2, i - run_start
        run_start = None
    return best


def join_texts(texts: list[str], hard_cuts: list[bool] | None = None, max_overlap_words: int = 6) -> str:
    """One text from the pieces' texts; after a hard cut, words both pieces heard are kept once."""
    hard_cuts = hard_cuts or [False] * len(texts)
    words: list[str] = []
    for text, hard in zip(texts, hard_cuts, strict=True):
        new = text.split()
        if hard and words:
            for n in range(min(max_overlap_words, len(words), len(new)), 0, -1):
                if words[-n:] == new[:n]:
                    new = new[n:]
                    break
        words.extend(new)
    return " ".join(words)
