"""Running real `seqx` processes on a tiny recipe, for the fault tests and bench/faults.py.

Each run is a fresh `python -m seqx` process (so `kill -9`, locks and file-size limits are
real), one torch thread, this checkout first on the path. `SEQX_KILL_AT=POINT[:N]` (see
seqx/faults.py) stops a run at an exact moment; `fsize` runs it under RLIMIT_FSIZE, where a
write past the limit fails with EFBIG as a full disk fails with ENOSPC.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_train_corpus import PHRASES, speak, tiny_recipe  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
BUNDLE_FILES = ("config.json", "model.safetensors", "tokenizer.model")
KILL_POINTS = ("data", "featurize", "tokenize", "step", "checkpoint_write", "average", "bundle")


def make_recipe(root: Path, wavs: Path) -> Path:
    """A tiny manifest recipe under `root` (exp under root/exp): 6 espeak-ng commands, 3 epochs,
    a mid-epoch checkpoint every 2 steps, dropout and SpecAugment on (so RNG states matter)."""
    rows = speak(wavs, PHRASES)
    recipe = tiny_recipe(root, rows, epochs=3, max_frames=400, save_every_steps=2, keep_last=2, average_best=2)
    raw: dict[str, Any] = recipe.model_dump(mode="json")
    raw["model"]["dropout"] = 0.1
    raw["features"]["specaugment"] = True
    raw["features"]["spec"] = {**raw["features"]["spec"], "freq_mask_width": 5, "time_mask_width": 10}
    path = root / "tiny.yaml"
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    return path


def seqx_env(kill_at: str | None = None) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("SEQX_KILL_AT", None)
    env.update(PYTHONPATH=str(REPO), OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", COLUMNS="400")
    if kill_at:
        env["SEQX_KILL_AT"] = kill_at
    return env


def _limit(fsize: int | None):  # noqa: ANN202
    if fsize is None:
        return None
    return lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))


def start(args: list[str], cwd: Path, kill_at: str | None = None, fsize: int | None = None) -> subprocess.Popen:
    """Start `python -m seqx ARGS...` (stdout and stderr captured as text)."""
    return subprocess.Popen(
        [sys.executable, "-m", "seqx", *args], cwd=cwd, env=seqx_env(kill_at), preexec_fn=_limit(fsize),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )


def run(args: list[str], cwd: Path, kill_at: str | None = None, fsize: int | None = None,
        timeout: float = 300) -> subprocess.CompletedProcess:
    proc = start(args, cwd, kill_at, fsize)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def error_lines(result: subprocess.CompletedProcess) -> list[str]:
    return [line for line in (result.stdout + result.stderr).splitlines() if line.startswith("error:")]


def warning_lines(result: subprocess.CompletedProcess) -> list[str]:
    return [line for line in (result.stdout + result.stderr).splitlines() if line.startswith("warning:")]


def bundle_bytes(exp: Path) -> dict[str, bytes]:
    """The bundle's files, byte for byte (missing ones left out)."""
    folder = exp / "model"
    return {name: (folder / name).read_bytes() for name in BUNDLE_FILES if (folder / name).is_file()}
