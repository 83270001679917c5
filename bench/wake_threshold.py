"""Each shipped wake word's threshold: how often seqx's voices saying it are heard, against how often
people who never say it wake it, at thresholds 0.3 ... 0.9.

Usage:
    python bench/wake_threshold.py [--commands 20] [--voices V,...] [--json]

Made voices: "<word>, <command>" by bench/wake_word.py's seven voices (flite's four, espeak-ng,
piper's joe, festival's kal), the commands drawn from recipes/commands.yaml's grammar (seeded), each
voice's sentences joined into one stream with room-tone gaps. People: bench/wake_word.py's stream of
every recording of a person Debian ships (none saying a wake word). Each stream is heard once per
model with no threshold (every score kept, raised as `seqx listen` raises it); a threshold's wakes are
then counted as the detector counts them (a score at or above it, 1.5 s after the last wake).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from wake_word import VOICES, joined, language, people_stream, say, woken_files  # noqa: E402

from seqx.grammar.load import load_grammar  # noqa: E402
from seqx.listen.level import StreamLevel  # noqa: E402
from seqx.listen.wake import REFRACTORY_S, SHIPPED, WakeDetector, wake_model_path  # noqa: E402
from seqx.recipe import load_recipe  # noqa: E402

R = 16000
REPO = Path(__file__).resolve().parents[1]
THRESHOLDS = (0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)


def trace(name: str, stream: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(times, scores) of every score the model gives the stream, heard as `seqx listen` hears it."""
    detector, level = WakeDetector(wake_model_path(name), threshold=1.01), StreamLevel()  # never fires
    detector.trace = []
    for i in range(0, stream.size - 511, 512):
        detector.feed(level.raise_window(stream[i : i + 512]))
    times, scores = zip(*detector.trace, strict=True)
    return np.asarray(times), np.asarray(scores)


def wakes(times: np.ndarray, scores: np.ndarray, threshold: float) -> np.ndarray:
    """The times the detector would wake at this threshold (its refractory time kept)."""
    out, last = [], -1e9
    for t, s in zip(times, scores, strict=True):
        if s >= threshold and t - last >= REFRACTORY_S:
            out.append(t)
            last = t
    return np.asarray(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--commands", type=int, default=20)
    parser.add_argument("--voices", default=",".join(VOICES))
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    grammar = load_grammar(load_recipe(REPO / "recipes" / "commands.yaml"), REPO / "recipes" / "commands.yaml")
    rng = np.random.default_rng(0)
    commands = list(dict.fromkeys(grammar.sample(rng).text for _ in range(10 * args.commands)))[: args.commands]
    voices = args.voices.split(",")

    paths, people, people_starts, speech_s = people_stream()
    print(f"people: {len(paths)} files, {speech_s}", file=sys.stderr, flush=True)

    out: dict[str, object] = {"commands": len(commands), "voices": voices, "people_files": len(paths),
                              "people_speech_s": {k: round(v, 1) for k, v in speech_s.items()}, "words": {}}
    for name in SHIPPED:
        said_as = name.replace("_", " ")
        utterances = {voice: [say(f"{said_as}, {command}", voice) for command in commands] for voice in voices}
        heard: dict[float, dict[str, int]] = {t: {} for t in THRESHOLDS}
        for voice, waves in utterances.items():
            stream, starts = joined(waves)
            times, scores = trace(name, stream)
            ends = [s + w.size / R + 0.5 for s, w in zip(starts, waves, strict=True)]
            for threshold in THRESHOLDS:
                found = wakes(times, scores, threshold)
                heard[threshold][voice] = sum(bool(((found >= s) & (found <= e)).any()) for s, e in zip(starts, ends, strict=True))
        times, scores = trace(name, people)
        rows = {}
        for threshold in THRESHOLDS:
            found = wakes(times, scores, threshold)
            woken = woken_files(paths, people_starts, list(found))
            by_language = {lang: sum(language(p) == lang for p in woken) for lang in speech_s}
            rows[str(threshold)] = {
                "heard": sum(heard[threshold].values()), "of": len(voices) * len(commands), "by_voice": heard[threshold],
                "false_wakes": len(found), **{f"{lang}_per_speech_hour": round(n * 3600 / speech_s[lang], 2)
                                              for lang, n in by_language.items()},
            }
        out["words"][name] = rows  # type: ignore[index]
        print(name, json.dumps({t: (r["heard"], r["false_wakes"]) for t, r in rows.items()}), file=sys.stderr, flush=True)
    if args.json:
        print(json.dumps(out, indent=1))
        return
    print(f"{len(voices)} voices x {len(commands)} commands; people {out['people_speech_s']} s of speech")
    for name, rows in out["words"].items():  # type: ignore[union-attr]
        for threshold, row in rows.items():
            print(f"{name:12s} {threshold:>4s}  heard {row['heard']:4d}/{row['of']}  false wakes {row['false_wakes']:3d} "
                  f"({row['english_per_speech_hour']}/h English, {row['other_per_speech_hour']}/h other)")


if __name__ == "__main__":
    main()
