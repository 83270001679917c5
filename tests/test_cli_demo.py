"""`make demo` in miniature: the commands it runs, each without --json, as a user sees them.

`make test` never ran `make demo`, and the tables a person reads are a different code path
from --json's (a name shadowed in `seqx evaluate`'s table code once crashed the demo's last
step while every --json test passed). This runs the demo's sequence on a tiny corpus through
the real entry point (`python -m seqx`), plus the stage commands a user re-runs after it.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from conftest import REPO
from tiny import FBANK, TEMPLATES, TINY_BASE

RECIPE = str(REPO / "recipes/commands.yaml")
# the recipe's convolution module back (TINY_BASE turns it off for the memorizing models)
MINI = [*TEMPLATES, *FBANK, "data.size=24", "data.synth.empty_share=0", "train.epochs=2", "model.conv_kernel=7"]


def _seqx(exp_dir: Path, *args: str, recipe: bool = True) -> str:
    sets = [arg for key in [f"exp_dir={exp_dir}", *TINY_BASE, *MINI] for arg in ("--set", key)]
    argv = [sys.executable, "-m", "seqx", args[0], *([RECIPE, *sets] if recipe else []), *args[1:]]
    run = subprocess.run(argv, capture_output=True, text=True, cwd=REPO, timeout=600)
    assert run.returncode == 0, f"{' '.join(args)} failed:\n{run.stdout}\n{run.stderr}"
    assert "Traceback" not in run.stdout + run.stderr, run.stderr
    return run.stdout


def test_the_demo_sequence_prints_its_tables(tmp_path: Path) -> None:
    trained = _seqx(tmp_path, "train")
    for row in ("trained: commands", "parameters", "best valid WER", "bundle valid WER", "wall time", "bundle"):
        assert row in trained, trained
    bundle = tmp_path / "commands" / "model"
    wavs = sorted(str(p) for p in (tmp_path / "commands/data/audio/test").glob("*.wav"))[:2]
    said = _seqx(tmp_path, "transcribe", *wavs, "--model", str(bundle), "--device", "cpu", recipe=False)
    assert all(Path(w).name in said for w in wavs), said
    # what a user re-runs afterwards: every stage is up to date and says so in one line
    assert "up to date" in _seqx(tmp_path, "featurize")
    assert "up to date" in _seqx(tmp_path, "tokenize")
    assert "nothing to do" in _seqx(tmp_path, "train")
    exported = _seqx(tmp_path, "export", "--model", str(bundle), "--out", str(tmp_path / "onnx"), recipe=False)
    assert "largest difference" in exported, exported
