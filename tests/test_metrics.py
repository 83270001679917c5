"""WER/CER pooling checked against jiwer's own corpus-level figures and hand-counted pairs."""

import jiwer
import pytest

from seqx.decode.metrics import score_pairs, utterance_errors


def test_known_pairs() -> None:
    e = utterance_errors("find my files", "find files")
    assert (e.substitutions, e.deletions, e.insertions, e.ref_words) == (0, 1, 0, 3)
    e = utterance_errors("find my files", "find the my files")
    assert (e.substitutions, e.deletions, e.insertions) == (0, 0, 1)
    assert not e.correct
    assert utterance_errors("check the battery", "check the battery").correct


def test_pooled_equals_jiwer_corpus_wer() -> None:
    refs = ["find my files", "open the terminal", "set a timer for five minutes", "stop"]
    hyps = ["find my file", "open terminal", "set a timer for nine minutes", "stop"]
    scores = score_pairs(refs, hyps)
    assert scores.wer == pytest.approx(jiwer.wer(refs, hyps))
    assert scores.cer == pytest.approx(jiwer.cer(refs, hyps))
    assert scores.sentence_accuracy == pytest.approx(0.25)


def test_empty_reference_counts_insertions() -> None:
    scores = score_pairs(["", "stop"], ["play music", "stop"])
    assert scores.insertions == 2
    assert scores.wer == pytest.approx(2 / 1)
    assert scores.sentence_accuracy == pytest.approx(0.5)
    assert score_pairs([""], [""]).sentence_accuracy == 1.0
