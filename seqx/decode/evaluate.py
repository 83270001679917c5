"""Score a bundle on a recipe's split: WER, CER, sentence accuracy, real-time factor.

Evaluation starts from the audio files, not the stored features, so the figures
include reading and featurizing: what a user of `seqx transcribe` pays. Besides
the whole split it reports the subsets a voice-command recognizer is judged on:
commands seen in training, commands held out of training (composition),
utterances with nothing said, and commands whose start is cut off (both of which
must come out empty).

With a grammar it also reports what a command recognizer is judged on: command
acceptance (the intent and every slot right), false rejects (commands that came back
"not understood") and false accepts on the negative set (seqx/decode/negatives.py:
out-of-grammar sentences spoken by the split's voices, and noise). `compare` runs the
same split free and constrained in one go, so their figures and speeds sit side by side.
"""

from __future__ import annotations

import csv
import json
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path

from seqx.data.importers import read_checked
from seqx.data.manifest import CLIPPED_SUFFIX, TIGHT_SUFFIX, Utterance, read_manifest
from seqx.decode.bundle import Bundle
from seqx.decode.metrics import Scores, UtteranceErrors, pool, utterance_errors
from seqx.decode.negatives import Negative, build_negatives
from seqx.decode.transcribe import Constraint, PreparedFiles, Result, resolve_precision, transcribe_files
from seqx.errors import SeqxError
from seqx.grammar.model import Grammar, Parse
from seqx.recipe import DecodeSettings, Recipe
from seqx.report import Collect, Reporter
from seqx.stage import atomic_write, atomic_write_text
from seqx.tokenize.text import normalize_text


@dataclass
class CommandScores:
    """How the commands of the split fared (utterances with a non-empty reference)."""

    commands: int
    acceptance: float  # understood with the reference's intent and every slot value
    false_rejects: float  # came back "not understood"
    # per slot key of the references (and "intent"): the share of the commands that say it whose
    # result has the same value (a rejected or unparsed result counts wrong)
    slot_accuracy: dict[str, float] = field(default_factory=dict)
    # understood, but not the command said: acted on, a command the user did not give (1 -
    # acceptance - false_rejects); the in-grammar false accept that rejection has to catch too
    wrong_answers: float = 0.0
    # the answers that were understood but wrong, as (slot, value said, value heard) counted, most
    # frequent first: what to look at before changing a grammar or a corpus (which numbers blur)
    confusions: list[SlotConfusion] = field(default_factory=list)
    # the grammar's answer before the "not understood" checks (CHECKED_REASONS): the command said,
    # or another one that the checks turned away. Against acceptance and wrong_answers they say
    # what the checks cost and what they caught, from one decoding run
    right_before_checks: float = 0.0
    wrong_caught: float = 0.0


@dataclass
class SlotConfusion:
    """One slot value heard as another in understood answers ("intent" for the intent)."""

    slot: str
    said: str
    heard: str  # NOT_SAID when the answer has no value for the slot
    count: int


NOT_SAID = "(none)"  # a slot value one side of a confusion does not have
# the reasons a result that had an answer is "not understood" (seqx/decode/result.py `judge`): the
# rejection thresholds and the n-best / confidence checks, not the search finding nothing
CHECKED_REASONS = ("rejected", "ambiguous", "low confidence")
MAX_CONFUSIONS = 20  # the most frequent kept in a report


@dataclass
class NegativeScores:
    """What came back understood that should not have: out-of-grammar speech and noise."""

    oog: int
    oog_false_accepts: float
    noise: int  # noise clips and the split's own nothing-said utterances
    noise_false_accepts: float
    by_kind: dict[str, float]  # detail (shuffled, white-0.3, 8bit ...) -> false-accept rate


@dataclass
class EvalReport:
    split: str
    overall: Scores
    subsets: dict[str, Scores]  # "seen commands", "held-out commands", "no speech", "clipped start", "no lead-in"
    audio_seconds: float
    decode_seconds: float
    failed: int
    summary_path: str
    details_path: str
    decode: dict[str, object]
    grammar: str | None = None  # the grammar decoding was restricted to (its name), None = free
    commands: CommandScores | None = None  # with a grammar to parse the references
    negatives: NegativeScores | None = None  # with a negative set

    @property
    def rtf(self) -> float:
        return self.decode_seconds / self.audio_seconds if self.audio_seconds else 0.0

    def to_json(self) -> dict[str, object]:
        return {**asdict(self), "rtf": self.rtf}


def evaluate(
    recipe: Recipe,
    bundle: Bundle,
    settings: DecodeSettings,
    split: str = "test",
    reporter: Reporter | None = None,
    limit: int | None = None,
    tag: str = "",
    constraint: Constraint | None = None,
    negatives: list[Negative] | None = None,
    parser: Grammar | None = None,
    prepared: PreparedFiles | None = None,
    utts: list[Utterance] | None = None,
) -> EvalReport:
    """Transcribe every utterance of `split` and compare with its normalized transcript.

    constraint: the grammar decoding is restricted to (default: `settings.grammar`).
    negatives: also transcribe these and count what comes back understood.
    parser: the grammar that parses references (and free hypotheses) for command acceptance
    (default: the constraint's, else the bundle's). prepared: files read, gated and featurized
    by an earlier pass (`compare` shares them between its two). utts: these utterances
    (`seqx evaluate --on`) instead of the split's manifest; `split` then names the files written.
    """
    constraint = constraint or Constraint.of(bundle, settings)
    parser = parser or constraint.grammar or bundle.grammar
    if utts is None:
        manifest = recipe.data_dir / f"{split}.jsonl"
        if not manifest.is_file():
            raise SeqxError(f"{manifest}: no such manifest; run `seqx data` (or `seqx featurize`) for this recipe first")
        utts = read_manifest(manifest)
    utts = utts[:limit] if limit else utts
    paths = [u.audio for u in utts] + [n.audio for n in negatives or []]
    every = transcribe_files(bundle, paths, settings, reporter=reporter or Collect(), constraint=constraint,
                             prepared=prepared)
    results, negative_results = every[: len(utts)], every[len(utts) :]
    references = [normalize_text(u.text, bundle.tokenizer.settings) for u in utts]
    errors = [utterance_errors(ref, res.text) for ref, res in zip(references, results)]

    heldout = _heldout_commands(recipe.data_dir / "heldout_commands.txt", bundle)
    subsets: dict[str, list[UtteranceErrors]] = {}
    for utt, ref, err in zip(utts, references, errors):
        if utt.id.endswith(CLIPPED_SUFFIX):  # a command cut off at the start: right answer, nothing
            subsets.setdefault("clipped start", []).append(err)
        elif utt.id.endswith(TIGHT_SUFFIX):  # a whole command whose file starts with the voice
            subsets.setdefault("no lead-in", []).append(err)
        elif not ref:
            subsets.setdefault("no speech", []).append(err)
        elif heldout:
            name = "held-out commands" if ref in heldout else "seen commands"
            subsets.setdefault(name, []).append(err)

    out_dir = recipe.eval_dir
    out_dir.mkdir(parents=True, exist_ok=True)
    stem = f"{split}{'-' + tag if tag else ''}"
    details = out_dir / f"{stem}.tsv"
    _write_details(details, utts, references, results, errors)
    report = EvalReport(
        split=split,
        overall=pool(errors),
        subsets={name: pool(errs) for name, errs in sorted(subsets.items())},
        audio_seconds=sum(r.duration for r in results),
        decode_seconds=sum(r.decode_seconds for r in results),
        failed=sum(r.error is not None for r in results),
        summary_path=str(out_dir / f"{stem}.json"),
        details_path=str(details),
        # what `auto` became on this machine: bf16 and fp32 can differ in the last decimals
        decode={**settings.model_dump(), "precision": resolve_precision(bundle.device, settings.precision)},
        grammar=constraint.grammar.name if constraint.grammar is not None else None,
        commands=_command_scores(references, results, parser) if parser is not None else None,
        negatives=_negative_scores(negatives, negative_results, references, results) if negatives else None,
    )
    atomic_write_text(Path(report.summary_path), json.dumps(report.to_json(), indent=1))
    return report


def _command_scores(references: list[str], results: list[Result], parser: Grammar) -> CommandScores:
    accepted = rejected = n = 0
    turned_away = caught = 0  # the checks' rejections of right answers, and of wrong ones
    right: dict[str, list[bool]] = {}
    confused: Counter[tuple[str, str, str]] = Counter()
    for ref, res in zip(references, results):
        if not ref:
            continue
        n += 1
        rejected += not res.understood
        want = parser.parse(ref)
        got = parser.parse(res.text) if res.understood else None  # free text is parsed the same way
        accepted += same_command(want, got)
        if not res.understood and res.reason in CHECKED_REASONS and res.nbest:
            answered = same_command(want, parser.parse(str(res.nbest[0]["text"])))
            turned_away += answered
            caught += not answered
        if want is not None:
            right.setdefault("intent", []).append(got is not None and got.intent == want.intent)
            for key, value in want.slots.items():
                right.setdefault(key, []).append(got is not None and got.slots.get(key) == value)
        if want is not None and got is not None:
            confused.update(_confusions(want, got))
    slots = {key: sum(v) / len(v) for key, v in sorted(right.items())}
    ranked = sorted(confused.items(), key=lambda item: (-item[1], item[0]))[:MAX_CONFUSIONS]
    return CommandScores(n, accepted / max(n, 1), rejected / max(n, 1), slots, (n - accepted - rejected) / max(n, 1),
                         [SlotConfusion(slot, said, heard, count) for (slot, said, heard), count in ranked],
                         (accepted + turned_away) / max(n, 1), caught / max(n, 1))  # fmt: skip


def same_command(want: Parse | None, got: Parse | None) -> bool:
    """Both parse, to the same intent and slot values (the wording may differ)."""
    return want is not None and got is not None and (got.intent, got.slots) == (want.intent, want.slots)


def _confusions(want: Parse, got: Parse) -> list[tuple[str, str, str]]:
    """(slot, said, heard) for each way an understood answer's parse differs from the reference's."""
    if got.intent != want.intent:
        return [("intent", want.intent, got.intent)]
    keys = sorted(set(want.slots) | set(got.slots))
    return [(key, str(want.slots.get(key, NOT_SAID)), str(got.slots.get(key, NOT_SAID)))
            for key in keys if want.slots.get(key) != got.slots.get(key)]  # fmt: skip


def _negative_scores(
    negatives: list[Negative], found: list[Result], references: list[str], results: list[Result]
) -> NegativeScores:
    kinds: dict[str, list[bool]] = {}
    for neg, res in zip(negatives, found):
        kinds.setdefault(neg.detail, []).append(res.understood)
    oog = [res.understood for neg, res in zip(negatives, found) if neg.kind == "oog"]
    noise = [res.understood for neg, res in zip(negatives, found) if neg.kind == "noise"]
    noise += [res.understood for ref, res in zip(references, results) if not ref]  # the split's nothing-said
    return NegativeScores(len(oog), sum(oog) / max(len(oog), 1), len(noise), sum(noise) / max(len(noise), 1),
                          {k: sum(v) / len(v) for k, v in sorted(kinds.items())})


def compare(
    recipe: Recipe,
    bundle: Bundle,
    settings: DecodeSettings,
    split: str = "test",
    reporter: Reporter | None = None,
    limit: int | None = None,
    n_oog: int = 120,
    on: Path | None = None,
) -> dict[str, EvalReport]:
    """The split and its negative set decoded free and with `settings.grammar`, one after the other.

    The negatives are made once under exp/NAME/eval/negatives/ (test voices for the test split).
    Without a grammar (none in the bundle, or `decode.grammar: none`) only the free run is made.
    on: recordings of your own (a folder of audio + .txt, a JSONL/CSV/TSV manifest, a Kaldi dir)
    instead of the split: those whose transcript the grammar holds are its commands, the others
    its out-of-grammar negatives; no made ones (the question is how your voice fares).
    """
    reporter = reporter or Collect()
    constraint = Constraint.of(bundle, settings)
    parser = constraint.grammar or bundle.grammar
    negatives, utts = None, None
    if on is not None:
        split = "recordings"
        utts, negatives = own_recordings(on, recipe, bundle, parser, reporter)
    elif parser is not None and recipe.data.source == "synth":
        folder = recipe.eval_dir / ("negatives" if split == "test" else f"negatives-{split}")
        negatives = build_negatives(recipe, parser, split, folder, n_oog=n_oog, reporter=reporter)
    free = settings.model_copy(update={"grammar": "none"})
    prepared = PreparedFiles()  # the two passes hear the same files: read, gate and featurize them once
    reports = {"free": evaluate(recipe, bundle, free, split, reporter, limit, tag="free", constraint=Constraint(),
                                negatives=negatives, parser=parser, prepared=prepared, utts=utts)}
    if constraint.grammar is not None:
        reports["constrained"] = evaluate(recipe, bundle, settings, split, reporter, limit, tag="constrained",
                                          constraint=constraint, negatives=negatives, parser=parser,
                                          prepared=prepared, utts=utts)
    return reports


def own_recordings(
    source: Path, recipe: Recipe, bundle: Bundle, parser: Grammar | None, reporter: Reporter
) -> tuple[list[Utterance], list[Negative] | None]:
    """`seqx evaluate --on SOURCE`: its usable recordings (a bad one is skipped and said), split into the
    grammar's commands and, as negatives, what it does not hold (speech a model must turn away) and
    what says nothing (an empty transcript: the user's room, TV or kitchen, which must get no answer)."""
    if not source.exists():
        raise SeqxError(f"--on: {source}: no such file or folder")
    kept, _ = read_checked(source, recipe.data.manifest, "recordings", recipe.data.max_duration, reporter,
                           said_nothing=True)  # fmt: skip
    if not kept:
        raise SeqxError(f"--on: {source}: no usable recordings")
    if parser is None:
        return kept, None  # an empty transcript is scored as the test split's "no speech" utterances are
    quiet = [Negative(u.id, u.audio, "noise", "recordings") for u in kept if not u.text]
    kept = [u for u in kept if u.text]
    holds = [parser.parse(normalize_text(u.text, bundle.tokenizer.settings)) is not None for u in kept]
    commands = [u for u, held in zip(kept, holds, strict=True) if held]
    others = quiet + [Negative(u.id, u.audio, "oog", "recordings", u.text)
                      for u, held in zip(kept, holds, strict=True) if not held]  # fmt: skip
    if not commands:
        raise SeqxError(f"--on: {source}: none of its {len(kept) + len(quiet)} recordings says a command of the grammar "
                        "(give some commands beside the noise and the other speech)")
    return commands, others or None


def _heldout_commands(path: Path, bundle: Bundle) -> set[str]:
    if not path.is_file():
        return set()
    lines = path.read_text().splitlines()
    return {normalize_text(line, bundle.tokenizer.settings) for line in lines if line.strip()}


def _write_details(
    path: Path, utts: list, references: list[str], results: list[Result], errors: list[UtteranceErrors]
) -> None:
    with atomic_write(path) as tmp, tmp.open("w", newline="") as handle:
        writer = csv.writer(handle, delimiter="\t")
        writer.writerow(["id", "reference", "hypothesis", "errors", "confidence", "ctc_gap", "error"])
        for utt, ref, res, err in zip(utts, references, results, errors):
            gap = "" if res.ctc_gap is None else f"{res.ctc_gap:.3f}"  # to choose decode.max_ctc_gap by
            writer.writerow([utt.id, ref, res.text, err.word_errors, f"{res.confidence:.3f}", gap, res.error or ""])
