"""`seqx serve` measured as Home Assistant uses it: answers over a real socket against `seqx transcribe`.

Usage:
    python bench/serve.py --model exp/commands/model [--recipe recipes/commands.yaml] [--files 60] [--json]

Starts the real command (`python -m seqx serve --model DIR --uri tcp://127.0.0.1:PORT`), then, for
the first `--files` commands of the recipe's test split (voices never trained on) and as many
seconds of silence and of noise, sends what Home Assistant's Wyoming integration sends: `transcribe`,
`audio-start`, 16-bit 16 kHz mono chunks of 1024 samples (as fast as the socket takes them), `audio-stop`.
  - agreement: the transcript's text against `seqx transcribe --json`'s answer for the same file
    ("" when not understood), file by file; the two must be the same decoding.
  - latency: audio-stop sent -> transcript read, wall clock (what a person waits after the end of
    the audio Home Assistant sends; its own endpointing wait comes before). Median and p90.
  - commands right: the transcript's text against the file's transcript, and silence/noise answered.
Torch on the threads `OMP_NUM_THREADS` gives (default 2, as `make demo`).
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "2")

import numpy as np  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from seqx.data.manifest import read_manifest  # noqa: E402
from seqx.data.noise import make_noise  # noqa: E402
from seqx.featurize.audio import load_audio  # noqa: E402
from seqx.recipe import TokenizerSettings, load_recipe  # noqa: E402
from seqx.serve.wyoming import read_event, write_event  # noqa: E402
from seqx.tokenize.text import normalize_text  # noqa: E402

R = 16000
CHUNK = 1024  # samples per audio-chunk, as Home Assistant sends them


def start_server(model: Path) -> tuple[subprocess.Popen, int]:
    with socket.socket() as probe:  # a free port
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    server = subprocess.Popen([sys.executable, "-m", "seqx", "serve", "--model", str(model), "--uri",
                               f"tcp://127.0.0.1:{port}"], stderr=subprocess.PIPE, text=True, env=env)
    line = server.stderr.readline()  # "serving NAME at tcp://...": it is listening
    if "serving" not in line:
        raise SystemExit(f"seqx serve did not start: {line}{server.stderr.read()}")
    return server, port


def ask(conn, wave: np.ndarray) -> tuple[dict, float]:  # noqa: ANN001
    """One utterance as Home Assistant sends it; (the transcript's data, seconds from audio-stop to it)."""
    pcm = (np.clip(wave, -1, 1) * 32767).astype(np.int16).tobytes()
    audio = {"rate": R, "width": 2, "channels": 1}
    write_event(conn, "transcribe", {"language": "en"})
    write_event(conn, "audio-start", audio)
    for at in range(0, len(pcm), 2 * CHUNK):
        write_event(conn, "audio-chunk", audio, pcm[at : at + 2 * CHUNK])
    stopped = time.perf_counter()
    write_event(conn, "audio-stop")
    while (event := read_event(conn)) is not None and event.type != "transcript":
        pass
    if event is None:
        raise SystemExit("seqx serve closed the connection")
    return event.data, time.perf_counter() - stopped


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", type=Path, required=True)
    parser.add_argument("--recipe", type=Path, default=REPO / "recipes/commands.yaml")
    parser.add_argument("--files", type=int, default=60)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    recipe = load_recipe(args.recipe)
    test = [u for u in read_manifest(recipe.data_dir / "test.jsonl") if u.text][: args.files]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    run = subprocess.run([sys.executable, "-m", "seqx", "transcribe", "--model", str(args.model), "--json",
                          *[u.audio for u in test]], capture_output=True, text=True, env=env, check=True)
    transcribed = {r["path"]: (r["text"] if r["understood"] else "") for r in json.loads(run.stdout)}
    rng = np.random.default_rng(0)
    others = [("silence", np.zeros(2 * R, np.float32))] + [
        (f"noise {kind}", 0.05 * make_noise(kind, 2 * R, R, rng).astype(np.float32)) for kind in ("white", "pink", "brown")
    ]
    server, port = start_server(args.model)
    rows, waits = [], []
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=300) as sock, sock.makefile("rwb") as conn:
            for utt in test:
                said, wait = ask(conn, load_audio(utt.audio, R).numpy())
                waits.append(wait)
                truth = normalize_text(utt.text, TokenizerSettings())
                rows.append({"file": utt.audio, "truth": truth, "served": said["text"], "transcribe": transcribed[utt.audio]})
            for name, wave in others:
                said, wait = ask(conn, wave)
                rows.append({"file": name, "truth": "", "served": said["text"], "transcribe": None})
    finally:
        server.terminate()
        server.wait(30)
    commands = [r for r in rows if r["transcribe"] is not None]
    report = {
        "model": str(args.model), "files": len(commands),
        "agree_with_transcribe": sum(r["served"] == r["transcribe"] for r in commands),
        "commands_right": sum(r["served"] == r["truth"] for r in commands),
        "not_understood": sum(r["served"] == "" for r in commands),
        "silence_noise_answered": sum(bool(r["served"]) for r in rows if r["transcribe"] is None),
        "silence_noise": len(rows) - len(commands),
        "latency_ms_median": round(1000 * float(np.median(waits)), 1),
        "latency_ms_p90": round(1000 * float(np.percentile(waits, 90)), 1),
        "threads": os.environ["OMP_NUM_THREADS"],
    }
    if args.json:
        print(json.dumps({**report, "rows": rows}))
        return
    for key, value in report.items():
        print(f"{key:24} {value}")
    for r in rows:
        if r["served"] != r["transcribe"] and r["transcribe"] is not None:
            print(f"differs: {r['file']}: served {r['served']!r}, transcribe {r['transcribe']!r}")


if __name__ == "__main__":
    main()
