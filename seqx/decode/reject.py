"""Choosing `decode.reject_margin` on the valid split, when training ends.

With a grammar, the search always finds the grammar's nearest sentence, so a result must
also be *believed*: its CTC gap (seqx/decode/ctc_gap.py, nats per frame between the CTC
head's best path and the answer) is small for a command that was said and large for the
grammar's best guess at something it cannot say. The margin is the gap that best separates
the valid split's commands (which should pass) from out-of-grammar sentences spoken by the
valid voices and noise (which should not): the threshold with the fewest false rejects
plus false accepts (as rates), the middle of the best range when several tie.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from seqx.data.manifest import read_manifest
from seqx.decode.bundle import Bundle
from seqx.decode.distance import checked_distance, word_distance  # noqa: F401 (word_distance: re-exported for bench/)
from seqx.decode.negatives import Negative, build_negatives
from seqx.decode.transcribe import Constraint, Result, transcribe_files
from seqx.grammar.model import Grammar
from seqx.recipe import DecodeSettings, Recipe
from seqx.report import Collect, Reporter

FALLBACK = 0.5  # when the valid split cannot tell (no negatives reach the gap check): max_ctc_gap's default
# the smallest margin chosen: 0 means "no gap check", so a best cut at or below 0 (a CTC gap can be
# negative: the grammar's answer scored above the CTC head's frame-by-frame best path) is kept as
# the strictest check there is, not turned into none
MIN_MARGIN = 1e-4


@dataclass
class Calibration:
    margin: float
    commands: int  # valid utterances with a command
    negatives: int  # out-of-grammar and noise items that reached the gap check or not
    false_rejects: float  # at the margin, on valid
    false_accepts: float
    distance: float = 1.0  # decode.reject_distance chosen with the margin (1 = no distance check)

    def to_json(self) -> dict[str, object]:
        return asdict(self)


def choose_margin(command_gaps: list[float | None], negative_gaps: list[float | None]) -> tuple[float, float, float]:
    """(margin, false-reject rate, false-accept rate). A None gap was rejected before the check
    (no speech, no answer): a false reject for a command, a right reject for a negative."""
    finite = sorted({g for g in command_gaps + negative_gaps if g is not None and math.isfinite(g)})
    if not finite or not command_gaps:
        return FALLBACK, 0.0, 0.0
    cuts = [finite[0] - 0.01] + [(a + b) / 2 for a, b in zip(finite, finite[1:])] + [finite[-1] + 0.01]

    def rates(cut: float) -> tuple[float, float]:
        fr = sum(g is None or g > cut for g in command_gaps) / len(command_gaps)
        fa = sum(g is not None and g <= cut for g in negative_gaps) / max(len(negative_gaps), 1)
        return fr, fa

    errors = [sum(rates(c)) for c in cuts]
    best = min(errors)
    tied = [c for c, e in zip(cuts, errors) if e <= best + 1e-12]
    margin = max(tied[len(tied) // 2], MIN_MARGIN)
    return (margin, *rates(margin))


def _cuts(values: list[float | None]) -> list[float]:
    finite = sorted({v for v in values if v is not None and math.isfinite(v)})
    if not finite:
        return [math.inf]
    return [finite[0] - 0.01] + [(a + b) / 2 for a, b in zip(finite, finite[1:])] + [finite[-1] + 0.01]


def choose_pair(
    commands: list[tuple[float, float] | None],
    negatives: list[tuple[float, float] | None],
    distance: float | None = None,
) -> tuple[float, float, float, float]:
    """(gap margin, distance margin, false-reject rate, false-accept rate) for the rule "reject
    when the CTC gap is above the first or the free/constrained word distance above the second".
    An item is (gap, distance), None when rejected before the check. Each distance cut gets its
    best gap cut (`choose_margin`, the middle of ties); of the distance cuts the one with the
    fewest errors wins, the most lenient of ties (a distance of 1 = the check off). `distance`:
    fixed by the recipe, only the margin is chosen."""
    if not commands:
        return FALLBACK, 1.0, 0.0, 0.0
    best: tuple[float, float, float, float] | None = None
    cuts = [distance] if distance is not None else _cuts([p[1] for p in commands + negatives if p is not None])
    for cut in sorted({min(c, 1.0) for c in cuts} | ({1.0} if distance is None else set()), reverse=True):

        def gap_or_none(p: tuple[float, float] | None, cut: float = cut) -> float | None:
            # rejected by the distance: treated as already rejected for the gap's choice
            return None if p is None or p[1] > cut else p[0]

        cmd, neg = [gap_or_none(p) for p in commands], [gap_or_none(p) for p in negatives]
        margin = choose_margin(cmd, neg)[0]
        fr = sum(g is None or g > margin for g in cmd) / len(cmd)
        fa = sum(g is not None and g <= margin for g in neg) / max(len(neg), 1)
        if best is None or fr + fa < best[2] + best[3] - 1e-12:
            best = (margin, cut, fr, fa)
    assert best is not None
    return best


VALID_OOG = 80  # out-of-grammar sentences the thresholds are chosen against (with the noise clips once)


def valid_negatives(recipe: Recipe, grammar: Grammar, reporter: Reporter | None = None) -> list[Negative]:
    """The negative set the thresholds are chosen on: made once under exp/NAME/eval/negatives-valid
    and reused, so anything else that scores against it (bench/human.py) hears the same sentences."""
    return build_negatives(recipe, grammar, "valid", recipe.eval_dir / "negatives-valid", n_oog=VALID_OOG,
                           noise_repeats=1, reporter=reporter or Collect())  # fmt: skip


# Every "not understood" check off, as decode settings: the CTC gap with and without a grammar, the
# free distance, the confidence floor. A dict too, for callers that pass settings as one (the
# torch-free runtime's).
CHECKS_OFF: dict[str, float] = {"reject_margin": 0.0, "max_ctc_gap": 0.0, "reject_distance": 1.0, "min_confidence": 0.0}


def without_rejection(settings: DecodeSettings) -> DecodeSettings:
    """`settings` with every check off (CHECKS_OFF): the grammar's best path always answers, as a
    grammar recognizer without rejection decodes."""
    return settings.model_copy(update=CHECKS_OFF)


def calibrate(recipe: Recipe, bundle: Bundle, grammar: Grammar, reporter: Reporter | None = None) -> Calibration:
    """Decode the valid split and its negatives constrained, every check off, and choose the
    CTC-gap margin and the free/constrained distance together (`choose_pair`). Valid only:
    the test split and its negatives are never looked at."""
    reporter = reporter or Collect()
    utts = read_manifest(recipe.data_dir / "valid.jsonl")
    negatives = valid_negatives(recipe, grammar, reporter)
    # under the usual CTC gap even when the bundle forgives sounds between words: valid's synthetic
    # voices add none, so there the rule could only move the margin for the negatives' sake
    # (docs/decoding.md; a dates model lost a right answer to a margin chosen under it)
    settings = without_rejection(bundle.decode).model_copy(update={"gap_forgives_insertions": False})
    constraint = Constraint.of_grammar(bundle, grammar, settings)  # with the heads' vote when decoding has it
    paths = [u.audio for u in utts] + [n.audio for n in negatives]
    results = transcribe_files(bundle, paths, settings, reporter=reporter, constraint=constraint)
    pairs = [_pair(r, bundle.decode.reject_distance_slack) for r in results]
    commands = [p for u, p in zip(utts, pairs) if u.text]
    # a valid utterance with nothing said is a negative too
    negative = [p for u, p in zip(utts, pairs) if not u.text] + pairs[len(utts) :]
    fixed = bundle.decode.reject_distance
    margin, distance, fr, fa = choose_pair(commands, negative, None if fixed == "auto" else float(fixed))
    return Calibration(round(margin, 4), len(commands), len(negative), fr, fa, round(distance, 4))


def _pair(result: Result, slack: int) -> tuple[float, float] | None:
    """(CTC gap, free distance as the check sees it) of a result decoded with the checks off; None
    when it was not understood anyway (no speech, no answer, cut off) or would not be with any check
    on (the free side heard no word: `judge`). A missing free transcript counts as agreement."""
    if not result.understood or result.ctc_gap is None or result.heard_nothing:
        return None
    heard = result.heard_free
    return result.ctc_gap, checked_distance(heard, result.text, slack) if heard is not None else 0.0
