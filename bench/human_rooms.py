"""Human commands spoken in a room, into a far or cheap microphone: does seqx still hear them?

Usage:
    python bench/human_rooms.py --exp-dir DIR [--exp-dir DIR2 ...] [--sets cards,goforward,alsa] [--draws 3]
                                [--conditions rooms|talkers|all] [--set decode.KEY=VALUE] [--json]

The recordings `bench/human.py` checks on are close-talk and dry; the people seqx is for speak
across a room to a laptop. Each command recording is played into rooms that pyroomacoustics'
image-source method simulates (a shoebox of drawn size and reverberation time, talker and
microphone at a drawn distance): another generator than the exponential-decay impulse
responses `data.synth.augment.reverb` trains with, so a model that learned those tails is not
scored on them. A condition may add a cheap microphone's band (a Butterworth band-pass) and
steady noise (pink, as from a fan or a road) at a drawn SNR. `--draws` rooms per file and
condition, seeded, the same for every model. `--conditions talkers` changes the talker and
the level instead: slower or faster with the pitch moving too (resampled, Kaldi's speed
perturbation), slower or faster at the same pitch (librosa's phase-vocoder time stretch, which
adds some phasiness of its own), and 30 dB quieter. Every `--exp-dir` is a folder of set models
that `bench/human.py --exp-dir DIR` trained; nothing is trained here, and each model decodes as its
bundle decides (beam, grammar, rejection), and again with every rejection check off. The
simulated copies go under the first EXP_DIR/rooms/; the recordings themselves are only read.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import soundfile as sf
from rich.console import Console
from rich.table import Table

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from human import as_wav, human_sets, load_set_bundle  # noqa: E402

from seqx.decode.reject import without_rejection  # noqa: E402
from seqx.decode.transcribe import transcribe_files  # noqa: E402
from seqx.featurize.audio import load_audio  # noqa: E402
from seqx.librosa_import import import_librosa  # noqa: E402

RATE = 16000


@dataclass(frozen=True)
class Room:
    """Ranges a condition draws from; None where the condition has no such part."""

    rt60_s: tuple[float, float] | None = None
    distance_m: tuple[float, float] | None = None
    size_m: tuple[tuple[float, float], tuple[float, float], tuple[float, float]] = ((3.0, 4.5), (3.0, 5.0), (2.4, 2.8))
    band_hz: tuple[float, float] | None = None  # the microphone's pass band
    snr_db: tuple[float, float] | None = None  # pink noise under the speech
    speed: tuple[float, float] | None = None  # resampled: duration / factor, pitch * factor
    tempo: tuple[float, float] | None = None  # time-stretched: duration / factor, pitch kept
    gain_db: float = 0.0  # level against the recording's own

    @property
    def drawn(self) -> bool:
        return any(x is not None for x in (self.rt60_s, self.snr_db, self.speed, self.tempo))


ROOMS = {
    "as recorded": Room(),
    "small room, 0.2-0.4 s, 1 m": Room(rt60_s=(0.2, 0.4), distance_m=(0.7, 1.3)),
    "living room, 0.5-0.7 s, 2 m": Room(
        rt60_s=(0.5, 0.7), distance_m=(1.5, 2.5), size_m=((4.0, 7.0), (5.0, 8.0), (2.5, 3.0))
    ),
    "laptop: 0.3-0.5 s, 0.6 m, 200-6000 Hz, fan 15-25 dB": Room(
        rt60_s=(0.3, 0.5), distance_m=(0.4, 0.8), band_hz=(200.0, 6000.0), snr_db=(15.0, 25.0)
    ),
    "noisy: 0.3-0.5 s, 1 m, 5-10 dB": Room(rt60_s=(0.3, 0.5), distance_m=(0.7, 1.3), snr_db=(5.0, 10.0)),
}
TALKERS = {
    "as recorded": Room(),
    "slower, lower: speed 0.8-0.9": Room(speed=(0.8, 0.9)),
    "faster, higher: speed 1.1-1.2": Room(speed=(1.1, 1.2)),
    "slower, same pitch: tempo 0.75-0.85": Room(tempo=(0.75, 0.85)),
    "faster, same pitch: tempo 1.2-1.3": Room(tempo=(1.2, 1.3)),
    "quiet microphone: -30 dB": Room(gain_db=-30.0),
}
CONDITIONS = {"rooms": ROOMS, "talkers": TALKERS, "all": {**ROOMS, **TALKERS}}


def impulse_response(room: Room, rng: np.random.Generator) -> np.ndarray:
    """A shoebox room's impulse response from pyroomacoustics' image-source method."""
    import pyroomacoustics as pra

    assert room.rt60_s is not None and room.distance_m is not None
    size = np.array([rng.uniform(*r) for r in room.size_m])
    rt60 = rng.uniform(*room.rt60_s)
    try:
        absorption, max_order = pra.inverse_sabine(rt60, size)
    except ValueError:  # a room too small for that reverberation time: the most it can have
        absorption, max_order = 0.05, 60
    shoebox = pra.ShoeBox(size, fs=RATE, materials=pra.Material(absorption), max_order=min(max_order, 60))
    talker = np.array([rng.uniform(0.5, size[0] - 0.5), rng.uniform(0.5, size[1] - 0.5), rng.uniform(1.2, 1.8)])
    for _ in range(100):  # a microphone at the drawn distance, inside the room
        direction = rng.standard_normal(3) * np.array([1.0, 1.0, 0.3])
        mic = talker + direction / np.linalg.norm(direction) * rng.uniform(*room.distance_m)
        if np.all(mic > 0.2) and np.all(mic < size - 0.2):
            break
    else:
        mic = size / 2
    shoebox.add_source(talker)
    shoebox.add_microphone(mic)
    shoebox.compute_rir()
    return np.asarray(shoebox.rir[0][0], dtype=np.float64)


def pink_noise(n: int, rng: np.random.Generator) -> np.ndarray:
    spectrum = np.fft.rfft(rng.standard_normal(n))
    spectrum /= np.sqrt(np.maximum(np.arange(spectrum.size), 1))
    noise = np.fft.irfft(spectrum, n)
    return noise / (np.sqrt(np.mean(noise**2)) + 1e-12)


def in_room(wave: np.ndarray, room: Room, rng: np.random.Generator) -> np.ndarray:
    """The recording as a microphone in `room` hears it (the talker changed first, where the
    condition says), at the recording's own peak level plus `gain_db`."""
    from scipy.signal import butter, fftconvolve, sosfilt

    peak = float(np.max(np.abs(wave))) or 1.0
    out = wave.astype(np.float64)
    if room.speed is not None:
        from seqx.data.augment import speed

        out = speed(out.astype(np.float32), rng.uniform(*room.speed), RATE).astype(np.float64)
    if room.tempo is not None:
        librosa = import_librosa()

        out = librosa.effects.time_stretch(out, rate=rng.uniform(*room.tempo))
    if room.rt60_s is not None:
        out = fftconvolve(out, impulse_response(room, rng))[: out.size + RATE // 2]
    if room.band_hz is not None:
        out = sosfilt(butter(4, room.band_hz, btype="bandpass", fs=RATE, output="sos"), out)
    if room.snr_db is not None:
        speech_rms = np.sqrt(np.mean(out[np.abs(out) > 0.05 * np.max(np.abs(out))] ** 2))
        out = out + pink_noise(out.size, rng) * speech_rms * 10 ** (-rng.uniform(*room.snr_db) / 20)
    return (out * peak / (np.max(np.abs(out)) + 1e-12) * 10 ** (room.gain_db / 20)).astype(np.float32)


def room_copies(files: list[tuple[str, str]], folder: Path, room: Room, draws: int, seed: int) -> list[str]:
    folder.mkdir(parents=True, exist_ok=True)
    waves = [load_audio(as_wav(audio, folder), RATE).numpy() for audio, _ in files]
    out = []
    for draw in range(draws if room.drawn else 1):
        for index, ((audio, _), wave) in enumerate(zip(files, waves, strict=True)):
            rng = np.random.default_rng([seed, draw, index])
            out.append(str(folder / f"{Path(audio).stem}-{draw}.wav"))
            sf.write(out[-1], in_room(wave, room, rng), RATE)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--exp-dir", type=Path, action="append", required=True, help="bench/human.py's --exp-dir")
    parser.add_argument("--sets", default="cards,goforward,alsa")
    parser.add_argument("--draws", type=int, default=3, help="rooms drawn per file and condition")
    parser.add_argument("--kind", default="speech_embedding", help="the feature kind the models were trained with")
    parser.add_argument("--conditions", choices=sorted(CONDITIONS), default="rooms",
                        help="rooms and microphones, other talkers' pace, pitch and level, or both")
    parser.add_argument("--set", action="append", default=[], metavar="decode.KEY=VALUE",
                        help="a decode setting over each bundle's own (bench/human.py's --set)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    conditions = CONDITIONS[args.conditions]
    rows: list[dict] = []
    for name in args.sets.split(","):
        hs = human_sets()[name]
        files = [(a, ref) for a, ref in hs.files if ref]  # commands only (alsa's Noise.wav says nothing)
        bundles = {str(exp_dir): load_set_bundle(exp_dir, name, args.kind, args.set) for exp_dir in args.exp_dir}
        for condition, room in conditions.items():
            index = list(CONDITIONS["all"]).index(condition)  # the same copies whichever --conditions
            folder = args.exp_dir[0] / "rooms" / name / f"c{index}"
            paths = room_copies(files, folder, room, args.draws, seed=index)
            refs = [files[i % len(files)][1] for i in range(len(paths))]
            for exp_dir, bundle in bundles.items():
                results = transcribe_files(bundle, paths, bundle.decode)
                open_results = transcribe_files(bundle, paths, without_rejection(bundle.decode))
                rows.append({
                    "set": name, "condition": condition, "exp_dir": exp_dir, "files": len(paths),
                    "right": sum(r.text == ref for r, ref in zip(results, refs, strict=True)),
                    "rejected": sum(not r.text for r in results),
                    "right_no_rejection": sum(r.text == ref for r, ref in zip(open_results, refs, strict=True)),
                    "answers": [r.text or f"({r.reason})" for r in results],
                })  # fmt: skip
    if args.json:
        print(json.dumps(rows, indent=1))
        return
    table = Table(
        title=f"human commands, {args.conditions}: right / files (rejected) as each bundle decides; "
        "right with no rejection"
    )
    table.add_column("condition")
    for exp_dir in args.exp_dir:
        table.add_column(str(exp_dir), justify="right")
    for condition in conditions:
        cells = []
        for exp_dir in args.exp_dir:
            mine = [r for r in rows if r["condition"] == condition and r["exp_dir"] == str(exp_dir)]
            right, files, rejected, open_right = (
                sum(r[k] for r in mine) for k in ("right", "files", "rejected", "right_no_rejection")
            )
            cells.append(f"{right}/{files} ({rejected}); {open_right}")
        table.add_row(condition, *cells)
    Console().print(table)


if __name__ == "__main__":
    main()
