"""Word and character error rates, per utterance and pooled.

jiwer does the alignment (it is the reference implementation people compare
against); this module only pools counts so that WER is total errors over total
reference words, not a mean of per-utterance rates, and so that utterances with
an empty reference (noise, silence) count their insertions.
"""

from __future__ import annotations

from dataclasses import dataclass

import jiwer


@dataclass(frozen=True)
class UtteranceErrors:
    ref_words: int
    substitutions: int
    deletions: int
    insertions: int
    ref_chars: int
    char_errors: int

    @property
    def word_errors(self) -> int:
        return self.substitutions + self.deletions + self.insertions

    @property
    def correct(self) -> bool:
        return self.word_errors == 0


@dataclass(frozen=True)
class Scores:
    utterances: int
    wer: float
    cer: float
    sentence_accuracy: float
    substitutions: int
    deletions: int
    insertions: int
    ref_words: int


def utterance_errors(reference: str, hypothesis: str) -> UtteranceErrors:
    """Edit-distance counts for one pair of already-normalized strings."""
    words = jiwer.process_words(reference, hypothesis)
    if reference:
        chars = jiwer.process_characters(reference, hypothesis)
        char_errors = chars.substitutions + chars.deletions + chars.insertions
    else:
        char_errors = len(hypothesis)
    return UtteranceErrors(
        ref_words=len(reference.split()),
        substitutions=words.substitutions,
        deletions=words.deletions,
        insertions=words.insertions,
        ref_chars=len(reference),
        char_errors=char_errors,
    )


def pool(errors: list[UtteranceErrors]) -> Scores:
    """Corpus-level rates: total errors over total reference words (characters for CER)."""
    ref_words = sum(e.ref_words for e in errors)
    ref_chars = sum(e.ref_chars for e in errors)
    word_errors = sum(e.word_errors for e in errors)
    char_errors = sum(e.char_errors for e in errors)
    return Scores(
        utterances=len(errors),
        wer=word_errors / max(ref_words, 1),
        cer=char_errors / max(ref_chars, 1),
        sentence_accuracy=sum(e.correct for e in errors) / max(len(errors), 1),
        substitutions=sum(e.substitutions for e in errors),
        deletions=sum(e.deletions for e in errors),
        insertions=sum(e.insertions for e in errors),
        ref_words=ref_words,
    )


def score_pairs(references: list[str], hypotheses: list[str]) -> Scores:
    return pool([utterance_errors(r, h) for r, h in zip(references, hypotheses, strict=True)])
