"""Human commands with seconds of silence or room tone around them, or quieter: does seqx still hear them?

Usage:
    python bench/human_padded.py --exp-dir /tmp/seqx-human [--margins none,0.3] [--sets cards,goforward,alsa]
                                 [--set decode.KEY=VALUE] [--json]

The models are the ones `bench/human.py --exp-dir DIR` trained (one per set, its own grammar);
nothing is trained here. Each set's command recordings are decoded as the bundle decides (beam,
grammar, its rejection thresholds), as they are and with silence (digital zeros) or room tone
(brown noise at -50 / -40 dBFS) added before and after, or 20-30 dB quieter (a far or cheap
microphone), for each `decode.speech_margin_s` asked
for (`none` = the whole file, as seqx decoded before the cut). Training files have 0.05-0.4 s of
lead-in; a person's recording often has a second or two. Padded copies go under
EXP_DIR/padded/; the recordings themselves are only read.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import soundfile as sf
from rich.console import Console
from rich.table import Table

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from human import as_wav, human_sets, load_set_bundle  # noqa: E402

from seqx.decode.transcribe import transcribe_files  # noqa: E402
from seqx.featurize.audio import load_audio  # noqa: E402

RATE = 16000
# name -> (seconds added before and after, room tone level in dBFS or None for digital silence,
# gain of the recording in dB: a far or quiet microphone)
SURROUNDS = {
    "as recorded": (0.0, None, 0.0),
    "1 s silence": (1.0, None, 0.0),
    "2 s silence": (2.0, None, 0.0),
    "1 s room -50 dBFS": (1.0, -50.0, 0.0),
    "2 s room -40 dBFS": (2.0, -40.0, 0.0),
    "20 dB quieter": (0.0, None, -20.0),
    "30 dB quieter, 1 s room -60 dBFS": (1.0, -60.0, -30.0),
}


def room_tone(n: int, dbfs: float, rng: np.random.Generator) -> np.ndarray:
    """Brown-ish noise without DC at `dbfs` RMS: the rumble of a room, not a hiss."""
    walk = np.cumsum(rng.standard_normal(n))
    walk -= np.convolve(walk, np.ones(400) / 400, "same")
    return (walk * 10 ** (dbfs / 20) / (np.sqrt(np.mean(walk**2)) + 1e-12)).astype(np.float32)


def padded_copies(
    files: list[tuple[str, str]], folder: Path, seconds: float, dbfs: float | None, gain_db: float, seed: int
) -> list[str]:
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    out = []
    for audio, _ in files:
        # a .raw recording's wav beside the copies would be the copy's own name: read back the next run and
        # padded, made quieter, again (goforward's "20 dB quieter" was -40 dB on a second run, -60 on a third)
        source = as_wav(audio, folder / "source")
        wave = load_audio(source, RATE).numpy() * np.float32(10 ** (gain_db / 20))
        pad = np.zeros(round(seconds * RATE), np.float32)
        wave = np.concatenate([pad, wave, pad])
        if dbfs is not None:
            wave = wave + room_tone(wave.size, dbfs, rng)
        out.append(str(folder / Path(audio).with_suffix(".wav").name))
        sf.write(out[-1], wave, RATE)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--exp-dir", type=Path, required=True, help="where bench/human.py trained the set models")
    parser.add_argument("--sets", default="cards,goforward,alsa")
    parser.add_argument("--margins", default="none,0.3", help="decode.speech_margin_s values; none = the whole file")
    parser.add_argument("--kind", default="speech_embedding", help="the feature kind the models were trained with")
    parser.add_argument("--set", action="append", default=[], metavar="decode.KEY=VALUE",
                        help="a decode setting over the bundle's own (bench/human.py's --set)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    margins = [None if m.strip() == "none" else float(m) for m in args.margins.split(",")]
    rows: list[dict] = []
    for name in args.sets.split(","):
        hs = human_sets()[name]
        bundle = load_set_bundle(args.exp_dir, name, args.kind, args.set)
        files = [(a, ref) for a, ref in hs.files if ref]  # commands only (alsa's Noise.wav says nothing)
        for index, (surround, (seconds, dbfs, gain_db)) in enumerate(SURROUNDS.items()):
            folder = args.exp_dir / "padded" / name / surround.replace(" ", "_").replace(",", "")
            paths = padded_copies(files, folder, seconds, dbfs, gain_db, seed=index)
            for margin in margins:
                settings = bundle.decode.model_copy(update={"speech_margin_s": margin})
                results = transcribe_files(bundle, paths, settings)
                rows.append({
                    "set": name, "surround": surround, "margin": margin, "files": len(files),
                    "right": sum(r.text == ref for r, (_, ref) in zip(results, files, strict=True)),
                    "answers": [r.text or f"({r.reason})" for r in results],
                })  # fmt: skip
    if args.json:
        print(json.dumps(rows, indent=1))
        return
    table = Table(title="human commands with silence around them: right / files (beam + grammar, bundle's rejection)")
    table.add_column("set")
    table.add_column("surround")
    for margin in margins:
        table.add_column("whole file" if margin is None else f"margin {margin:g} s", justify="right")
    for name in args.sets.split(","):
        for surround in SURROUNDS:
            cells = [f"{r['right']}/{r['files']}" for r in rows if r["set"] == name and r["surround"] == surround]
            table.add_row(name, surround, *cells)
    Console().print(table)


if __name__ == "__main__":
    main()
