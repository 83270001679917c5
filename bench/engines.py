"""Synthesis speed of each speech engine, in utterances per second of one worker.

Usage:
    OMP_NUM_THREADS=1 .venv/bin/python bench/engines.py            # 12 commands per engine
    OMP_NUM_THREADS=1 .venv/bin/python bench/engines.py --n 30 --json

Each engine says the same commands one at a time, as a corpus worker does (`seqx data`
runs `data.workers` of these at once): espeak-ng and flite a process per utterance;
festival and piper keep their process (and its loaded voice) between utterances, and
are also timed with a fresh process per utterance (`speak_once`), the cost that saves;
hibari runs inside this process (its CPU is this process's). The wall time of a shared machine is noisy; CPU time of the engine processes is
reported beside it (a kept piper process's CPU is counted only once it ends).
"""

from __future__ import annotations

import argparse
import json
import resource
import time

from seqx.data import engines
from seqx.recipe import Voice

COMMANDS = [
    "check the battery",
    "show the program log",
    "find my files",
    "set a timer for twenty five minutes",
    "open the music folder",
    "turn the volume up",
]
VOICES = {
    "espeak-ng": Voice(engine="espeak-ng", language="en-us", variant="m3"),
    "flite": Voice(engine="flite", variant="slt"),
    "festival (kal_diphone)": Voice(engine="festival", variant="kal_diphone"),
    "festival (cmu_us_slt_arctic_hts)": Voice(engine="festival", variant="cmu_us_slt_arctic_hts"),
    "piper (en_US-joe-medium)": Voice(engine="piper", language="en_US-joe-medium"),
    "hibari (heart)": Voice(engine="hibari", language="en-us", variant="heart"),
    "pico (en-US)": Voice(engine="pico", language="en-us", variant="en-US"),
}
IN_PROCESS = {"hibari", "pico"}  # libraries, not commands: their CPU is this process's


def _cpu(who: int = resource.RUSAGE_CHILDREN) -> float:
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


def _time(work, who: int = resource.RUSAGE_CHILDREN) -> tuple[float, float, float]:
    """(wall seconds, CPU seconds of the child processes (or of `who`), seconds of audio made)."""
    cpu, start = _cpu(who), time.perf_counter()
    audio = work()
    return time.perf_counter() - start, _cpu(who) - cpu, audio


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=12, help="utterances per engine")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    texts = [COMMANDS[i % len(COMMANDS)] for i in range(args.n)]
    rows = []
    for label, voice in VOICES.items():
        if not engines.engine(voice.engine).available():
            rows.append({"engine": label, "missing": engines.engine(voice.engine).install})
            continue
        engines.speak(texts[0], voice, engines.Delivery())  # warm the page cache

        def one_each(voice: Voice = voice) -> float:
            return sum(s.size / r for s, r in (engines.speak(t, voice, engines.Delivery()) for t in texts))

        inside = voice.engine in IN_PROCESS
        wall, cpu, audio = _time(one_each, resource.RUSAGE_SELF if inside else resource.RUSAGE_CHILDREN)
        eng = engines.engine(voice.engine)
        kept = hasattr(eng, "speak_once")  # festival and piper keep their process between utterances
        if kept:  # a kept process's CPU is counted when it ends: warm-up and voice load included
            before = _cpu()
            eng.close()
            cpu = (_cpu() - before) * args.n / (args.n + 1)
        mode = "in process" if inside else "kept process" if kept else "process per utterance"
        rows.append({"engine": label, "mode": mode,
                     "utt_per_s": args.n / wall, "cpu_s_per_utt": cpu / args.n, "x_realtime": audio / wall})
        if kept:
            wall, cpu, audio = _time(
                lambda: sum(s.size / r for s, r in (eng.speak_once(t, voice, engines.Delivery()) for t in texts))
            )
            rows.append({"engine": label, "mode": "process per utterance", "utt_per_s": args.n / wall,
                         "cpu_s_per_utt": cpu / args.n, "x_realtime": audio / wall})
    if args.json:
        print(json.dumps(rows, indent=1))
        return
    print(f"{'engine':34} {'mode':26} {'utt/s':>7} {'CPU s/utt':>10} {'x real time':>12}")
    for row in rows:
        if "missing" in row:
            print(f"{row['engine']:34} not installed: {row['missing']}")
        else:
            print(f"{row['engine']:34} {row['mode']:26} {row['utt_per_s']:7.2f} {row['cpu_s_per_utt']:10.3f} "
                  f"{row['x_realtime']:12.1f}")


if __name__ == "__main__":
    main()
