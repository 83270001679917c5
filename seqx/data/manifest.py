"""One utterance a line: {"id", "audio", "text", "duration", "speaker"}.

Audio paths are written relative to the manifest's folder when they lie below
it, so an exp/ folder can be moved or copied to another machine whole; they are
read back as absolute paths so nobody downstream cares where the cwd is.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

from seqx.errors import SeqxError
from seqx.stage import atomic_write

CLIPPED_SUFFIX = "-clipped"  # id (and file name) ending of a synthetic command whose start is cut off
TIGHT_SUFFIX = "-tight"  # ... of a synthetic command, whole, whose recording starts with the voice (no lead-in)


@dataclass(frozen=True)
class Utterance:
    id: str
    audio: str
    text: str
    duration: float
    speaker: str


def read_manifest(path: str | Path) -> list[Utterance]:
    path = Path(path)
    base = path.resolve().parent
    utts = []
    with path.open() as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                raw = json.loads(line)
                audio = Path(raw["audio"])
                utts.append(
                    Utterance(
                        id=str(raw["id"]),
                        audio=str(audio if audio.is_absolute() else base / audio),
                        text=str(raw.get("text", "")),
                        duration=float(raw.get("duration", 0.0)),
                        speaker=str(raw.get("speaker", "")),
                    )
                )
            except (ValueError, KeyError, TypeError) as err:
                raise SeqxError(f"{path}:{number}: not a manifest line ({err})") from None
    return utts


def write_manifest(path: str | Path, utts: list[Utterance]) -> None:
    """Atomically write `utts`; audio below the manifest's folder is stored relative to it."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    base = path.resolve().parent
    with atomic_write(path) as tmp, tmp.open("w") as handle:
        for utt in utts:
            row = asdict(utt)
            audio = Path(utt.audio).resolve()
            if audio.is_relative_to(base):
                row["audio"] = str(audio.relative_to(base))
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")
