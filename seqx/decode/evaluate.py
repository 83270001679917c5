"""Score a bundle on a recipe's split: WER, CER, sentence accuracy, real-time factor.

Evaluation starts from the audio files, not the stored features, so the figures
include reading and featurizing: what a user of `seqx transcribe` pays. Besides
the whole split it reports the subsets a voice-command recognizer is judged on:
commands seen in training, commands held out of training (composition),
utterances with nothing said, and commands whose start is cut off (both of which
must come out empty).
"""

from __future__ import annotations

import csv
import json
from dataclasses import asdict, dataclass
from pathlib import Path

from seqx.data.manifest import CLIPPED_SUFFIX, TIGHT_SUFFIX, read_manifest
from seqx.decode.bundle import Bundle
from seqx.decode.metrics import Scores, UtteranceErrors, pool, utterance_errors
from seqx.decode.transcribe import Result, resolve_precision, transcribe_files
from seqx.errors import SeqxError
from seqx.recipe import DecodeSettings, Recipe
from seqx.report import Collect, Reporter
from seqx.stage import atomic_write, atomic_write_text
from seqx.tokenize.text import normalize_text


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
) -> EvalReport:
    """Transcribe every utterance of `split` and compare with its normalized transcript."""
    manifest = recipe.data_dir / f"{split}.jsonl"
    if not manifest.is_file():
        raise SeqxError(f"{manifest}: no such manifest; run `seqx data` (or `seqx featurize`) for this recipe first")
    utts = read_manifest(manifest)[:limit] if limit else read_manifest(manifest)
    results = transcribe_files(bundle, [u.audio for u in utts], settings, reporter=reporter or Collect())
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
    )
    atomic_write_text(Path(report.summary_path), json.dumps(report.to_json(), indent=1))
    return report


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
