"""Existing data in the layouts people have: JSONL/CSV/TSV manifests, Kaldi dirs, folders of audio + .txt.

Each importer yields (id, audio path, transcript, speaker) rows; `check_rows`
then reads each file's header for its duration (no decoding) and skips, with a
reason, what cannot be used: a missing, unreadable, empty or silent file, an
empty transcript, or one longer than data.max_duration. One bad utterance never
stops the stage.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import soundfile as sf

from seqx.data.manifest import Utterance
from seqx.errors import AudioError, SeqxError
from seqx.featurize.samples import AUDIO_SUFFIXES, SOUNDFILE_ONLY, read_samples
from seqx.recipe import ManifestSettings
from seqx.report import Reporter
from seqx.text_files import decode_text, read_text_file

Row = tuple[str, str, str | None, str]  # id, audio, text (None: none given; "" an empty one), speaker
CHECK_RATE = 16000  # the rate a decoded container is checked at (its length is the same at any)


def detect_format(path: Path, declared: str) -> str:
    if declared != "auto":
        return declared
    if path.is_dir():
        return "kaldi" if (path / "wav.scp").is_file() else "folder"
    suffix = path.suffix.lower().lstrip(".")
    if suffix in ("jsonl", "csv", "tsv"):
        return suffix
    raise SeqxError(f"{path}: cannot tell the manifest format; set data.manifest.format")


def read_rows(path: Path, settings: ManifestSettings) -> list[Row]:
    if not path.exists():
        raise SeqxError(f"{path}: no such manifest, Kaldi dir or folder")
    fmt = detect_format(path, settings.format)
    reader = {"jsonl": _jsonl, "csv": _table, "tsv": _table, "kaldi": _kaldi, "folder": _folder}[fmt]
    return reader(path, settings)


def _resolve(base: Path, audio: str) -> str:
    p = Path(audio).expanduser()
    return str(p if p.is_absolute() else (base / p).resolve())


def _jsonl(path: Path, settings: ManifestSettings) -> list[Row]:
    rows = []
    for number, line in enumerate(read_text_file(path).splitlines(), 1):
        if not line.strip():
            continue
        try:
            raw = json.loads(line)
            audio = raw[settings.audio_column]
        except (ValueError, KeyError):
            raise SeqxError(f"{path}:{number}: expected JSON with a '{settings.audio_column}' key") from None
        utt_id = str(raw.get("id") or Path(audio).stem)
        rows.append(
            (
                utt_id,
                _resolve(path.parent, audio),
                None if raw.get(settings.text_column) is None else str(raw[settings.text_column]),
                str(raw.get("speaker", "")),
            )
        )
    return rows


def _table(path: Path, settings: ManifestSettings) -> list[Row]:
    delimiter = "\t" if path.suffix.lower() == ".tsv" or settings.format == "tsv" else ","
    with io.StringIO(decode_text(path.read_bytes()), newline="") as handle:  # Excel's "CSV UTF-8" starts with a mark
        reader = csv.DictReader(handle, delimiter=delimiter)
        fields = reader.fieldnames or []
        if settings.audio_column not in fields:
            raise SeqxError(f"{path}: no '{settings.audio_column}' column (columns: {', '.join(fields)})")
        rows = []
        for raw in reader:
            audio = raw[settings.audio_column]
            utt_id = raw.get("id") or Path(audio).stem
            text = raw.get(settings.text_column)  # None: no such column, or a short row
            rows.append((utt_id, _resolve(path.parent, audio), text, raw.get("speaker") or ""))
    return rows


def _kaldi(path: Path, settings: ManifestSettings) -> list[Row]:
    def table(name: str) -> dict[str, str]:
        file = path / name
        if not file.is_file():
            return {}
        entries = {}
        for line in read_text_file(file).splitlines():
            key, _, value = line.strip().partition(" ")
            if key:
                entries[key] = value.strip()
        return entries

    if (path / "segments").is_file():  # utterances cut from longer recordings: no file per utterance
        raise SeqxError(
            f"{path / 'segments'}: Kaldi segments are not supported; cut the audio into one file per utterance"
        )
    wavs, texts, speakers = table("wav.scp"), table("text"), table("utt2spk")
    rows = []
    for utt_id, audio in wavs.items():
        # piped commands ("sox x.flac -t wav - |") are left to Kaldi; we read files only
        audio = "|" + audio if audio.endswith("|") else audio
        rows.append(
            (
                utt_id,
                audio if audio.startswith("|") else _resolve(path, audio),
                texts.get(utt_id),
                speakers.get(utt_id, ""),
            )
        )
    return rows


def _folder(path: Path, settings: ManifestSettings) -> list[Row]:
    rows = []
    for audio in sorted(p for p in path.rglob("*") if p.suffix.lower() in AUDIO_SUFFIXES):
        transcript = audio.with_suffix(".txt")
        text = read_text_file(transcript).strip() if transcript.is_file() else None  # an empty .txt says nothing
        # the id is the path below the folder, so a/1.wav and b/1.wav stay two utterances
        utt_id = "-".join(audio.relative_to(path).with_suffix("").parts)
        rows.append((utt_id, str(audio.resolve()), text, audio.parent.name))
    return rows


def read_checked(
    source: Path, settings: ManifestSettings, what: str, max_duration: float, reporter: Reporter,
    said_nothing: bool = False,
) -> tuple[list[Utterance], list[tuple[str, str]]]:
    """A manifest source's usable utterances, with a progress bar; each skipped one is said, with why.
    `said_nothing`: an empty transcript is a recording of no command (noise, a room), not a fault."""
    rows = read_rows(source, settings)
    task = reporter.task(f"check {what}", total=len(rows), unit="utt")
    kept, bad = check_rows(rows, max_duration, task.advance, said_nothing)
    task.close()
    for name, reason in bad:
        reporter.warn(f"{name}: {reason}")
    return kept, bad


def check_rows(
    rows: list[Row], max_duration: float, advance: Callable[[int], None] | None = None, said_nothing: bool = False
) -> tuple[list[Utterance], list[tuple[str, str]]]:
    """Usable utterances and (what, reason) for each skipped one; `advance(1)` after each row.
    `said_nothing`: empty transcripts are kept (`read_checked`)."""
    kept: list[Utterance] = []
    skipped: list[tuple[str, str]] = []
    seen: set[str] = set()
    for utt_id, audio, text, speaker in rows:
        problem, duration = _problem(audio, text, max_duration, said_nothing)
        if not problem and utt_id in seen:  # later stages look utterances up by id
            problem = f"duplicate utterance id ({utt_id})"
        if problem:  # a piped command is named by its utterance id: the command says little
            skipped.append((f"{utt_id}: {audio[1:].strip()}" if audio.startswith("|") else audio, problem))
        else:
            seen.add(utt_id)
            kept.append(Utterance(utt_id, audio, " ".join((text or "").split()), round(duration, 4), speaker or utt_id))
        if advance is not None:
            advance(1)
    return kept, skipped


def _problem(audio: str, text: str | None, max_duration: float, said_nothing: bool = False) -> tuple[str | None, float]:
    if audio.startswith("|"):
        return "piped wav.scp command (convert the audio to files first)", 0.0
    if not Path(audio).is_file():
        return "missing audio file", 0.0
    if text is None:  # no .txt beside it, no text key or column, no line in Kaldi's text
        return "missing transcript", 0.0
    if not text.strip() and not said_nothing:
        return "empty transcript", 0.0
    try:
        info = sf.info(audio)
        duration = info.frames / info.samplerate
    except (RuntimeError, sf.LibsndfileError) as err:
        if Path(audio).suffix.lower() in SOUNDFILE_ONLY:
            return f"unreadable audio ({_why(err)})", 0.0
        return _decoded_problem(audio, max_duration)  # m4a, webm, mp4 ...: what read_samples decodes
    if info.frames == 0:
        return "empty audio", 0.0
    too_long = _too_long(duration, max_duration)
    if too_long:  # said before a long file is read
        return too_long, duration
    try:
        head = sf.read(audio, frames=min(info.frames, info.samplerate * 30), dtype="float32")[0]
    except (RuntimeError, sf.LibsndfileError) as err:
        return f"unreadable audio ({_why(err)})", 0.0
    return _samples_problem(head), duration


def _decoded_problem(audio: str, max_duration: float) -> tuple[str | None, float]:
    """`_problem` for a container libsndfile does not read: decoded whole, as featurizing will."""
    try:
        samples = read_samples(audio, CHECK_RATE)
    except AudioError as err:
        return err.problem, 0.0
    duration = samples.size / CHECK_RATE
    return _too_long(duration, max_duration) or _samples_problem(samples), duration


def _too_long(duration: float, max_duration: float) -> str | None:
    return f"longer than data.max_duration ({duration:.1f} s > {max_duration:g} s)" if duration > max_duration else None


def _samples_problem(samples: np.ndarray) -> str | None:
    if not np.isfinite(samples).all():
        return "audio has NaN/inf samples"
    return "silent audio (all samples zero)" if np.abs(samples).max() == 0 else None


def _why(err: Exception) -> str:
    """libsndfile's reason without the path it repeats ("Error opening 'x.wav': Format not recognised.")."""
    return str(err).splitlines()[0].split("': ", 1)[-1][:80]
