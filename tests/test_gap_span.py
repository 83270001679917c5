"""The CTC gap over a command's length (seqx/decode/gap_span.py): parts as long as training's keep
their gap, longer ones' gaps grow with their length."""

from __future__ import annotations

import math

import pytest

from seqx.decode.gap_span import longest_by_words, span_limit, spanned_gap


def test_the_longest_utterance_of_at_most_n_words_never_shrinks_with_n() -> None:
    said = [("stop", 0.6), ("lights on", 1.4), ("stop", 0.9), ("turn the lights on", 2.2), ("", 9.0)]
    # no three-word utterance: it may take as long as the longest of two; silence has no words
    assert longest_by_words(said) == [0.9, 1.4, 1.4, 2.2]
    assert longest_by_words([("", 2.0)]) == []
    # no one-word sentence (a grammar of dates): a one-word answer may take what the fewest words took
    assert longest_by_words([("monday the first", 1.8), ("may second", 1.2), ("june third", 1.1)]) == [1.2, 1.2, 1.8]


def test_the_limit_follows_the_answer_s_words_up_to_the_longest_trained_on() -> None:
    spans = [0.9, 1.4, 1.4, 2.2]
    assert span_limit(spans, 1, 3.0) == pytest.approx(2.7)
    assert span_limit(spans, 0, 3.0) == pytest.approx(2.7)  # an answer of no words: a one-word command's
    assert span_limit(spans, 9, 2.0) == pytest.approx(4.4)  # longer than any trained on: the longest
    assert span_limit(spans, 2, 0.0) is None and span_limit(None, 2, 3.0) is None and span_limit([], 1, 3.0) is None


def test_a_gap_grows_only_past_the_limit() -> None:
    spans = [1.0]
    assert spanned_gap(0.1, 2.5, 1, spans, 3.0) == 0.1  # within 3 s: the mean over the part, as before
    assert spanned_gap(0.1, 15.0, 1, spans, 3.0) == pytest.approx(0.5)  # 15 s: the sum over 3 s of it
    assert spanned_gap(0.1, 15.0, 1, None, 3.0) == 0.1 and spanned_gap(0.1, 15.0, 1, spans, 0.0) == 0.1
    # no answer, an answer no alignment allows, and one the CTC head believes more than its best path
    assert spanned_gap(None, 15.0, 1, spans, 3.0) is None
    assert math.isinf(spanned_gap(math.inf, 15.0, 1, spans, 3.0))
    assert spanned_gap(-0.01, 15.0, 1, spans, 3.0) == -0.01
