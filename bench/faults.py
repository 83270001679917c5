"""Faults survived, measured: `kill -9` at random points of `seqx train`, two runs at once, a full disk.

Usage:
    OMP_NUM_THREADS=1 python bench/faults.py                 # 10 hook kills + 10 timed kills, seed 0
    OMP_NUM_THREADS=1 python bench/faults.py --kills 10 --timed 10 --seed 0 --json

On the tiny recipe of tests/fault_harness.py (6 espeak-ng commands, 3 epochs of 3 steps, a
checkpoint every 2 steps, deterministic), each try starts from an empty experiment folder:

- hook kill: `SEQX_KILL_AT=POINT:N` (seqx/faults.py), every POINT once in a random order before any
  twice (data, featurize, tokenize, step, checkpoint_write: halfway through the file, average, bundle:
  weights written, config not), N drawn uniformly from that point's passes in an uninterrupted run;
- timed kill: SIGKILL from outside at a time drawn uniformly over an uninterrupted run's wall time;
- then `seqx train` again. Survived = it exits 0 and its bundle (config.json, model.safetensors,
  tokenizer.model) equals the uninterrupted run's byte for byte. Lost = optimizer steps done before the
  kill (the training log's last step) that the rerun had to do again (it resumed from an earlier one).

Plus two `seqx train` started together (one must train, the other exit 1 with the lock line, the bundle
that of one run) and a full disk (RLIMIT_FSIZE, EFBIG) while writing a feature shard, a checkpoint and
the bundle's weights, each followed by a run without the limit.
"""

from __future__ import annotations

import argparse
import json
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from fault_harness import bundle_bytes, error_lines, make_recipe, run, start  # noqa: E402

# passes of each kill point in an uninterrupted run of the tiny recipe: 3 manifests, 18 utterances,
# 1 tokenizer, 9 steps, 7 checkpoints (steps 2, 4, 6, 8 and 3 epoch ends), 2 averaged, 1 bundle
PASSES = {"data": 3, "featurize": 18, "tokenize": 1, "step": 9, "checkpoint_write": 7, "average": 2, "bundle": 1}
TOTAL_STEPS = 9


def where(exp: Path) -> tuple[str, int]:
    """The stage a killed run was in (from the stamps on disk) and the last step it logged."""
    log = exp / "train_log.jsonl"
    steps = [json.loads(x).get("step", 0) for x in log.read_text().splitlines()] if log.is_file() else []
    step = max(steps, default=0)
    if not (exp / "data").is_dir():
        return "start-up", step
    for stage, folder in (("data", "data"), ("featurize", "feats"), ("tokenize", "tokenizer")):
        if not (exp / folder / ".stamp.json").is_file():
            return stage, step
    if (exp / "model" / ".stamp.json").is_file():
        return "exit (bundle done)", step
    return ("train", step) if step < TOTAL_STEPS else ("average or bundle", step)


def rerun(root: Path, recipe: Path, exp: Path, want: dict[str, bytes], step: int) -> tuple[bool, int, str]:
    result = run(["train", str(recipe), "--json"], root)
    survived = result.returncode == 0 and bundle_bytes(exp) == want
    lost = 0
    if result.returncode == 0:
        report = json.loads(result.stdout)
        if not report["fresh"]:  # fresh: the killed run had finished, nothing to redo
            lost = max(step - (report.get("resumed_from_step") or 0), 0)
    return survived, lost, "" if survived else (result.stdout + result.stderr)[-400:]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kills", type=int, default=10, help="kills at random hook points")
    parser.add_argument("--timed", type=int, default=10, help="kills at random times")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    base = Path(tempfile.mkdtemp(prefix="seqx-faults-"))
    wavs = base / "wav"
    rows: list[dict] = []

    def fresh(name: str) -> tuple[Path, Path, Path]:
        root = base / name
        return root, make_recipe(root, wavs), root / "exp" / "tiny"

    # the reference, and the wall time a timed kill is drawn over
    root, recipe, exp = fresh("reference")
    began = time.monotonic()
    done = run(["train", str(recipe)], root)
    wall = time.monotonic() - began
    assert done.returncode == 0, done.stderr
    want = bundle_bytes(exp)
    print(f"uninterrupted run: {wall:.1f} s", file=sys.stderr)

    # every point once (in a random order) before any twice, each at a random pass
    points = [p for _ in range(args.kills // len(PASSES) + 1) for p in rng.sample(sorted(PASSES), len(PASSES))]
    for i, point in enumerate(points[: args.kills]):
        nth = rng.randint(1, PASSES[point])
        root, recipe, exp = fresh(f"kill{i}")
        killed = run(["train", str(recipe)], root, kill_at=f"{point}:{nth}")
        stage, step = where(exp)
        survived, lost, why = rerun(root, recipe, exp, want, step)
        rows.append({"case": f"kill -9 at {point}:{nth}", "kind": "hook", "killed": killed.returncode == -9,
                     "stage": stage, "step": step, "survived": survived, "lost_steps": lost, "why": why})
        print(rows[-1], file=sys.stderr)

    for i in range(args.timed):
        at = rng.uniform(0.0, wall)
        root, recipe, exp = fresh(f"timed{i}")
        proc = start(["train", str(recipe)], root)
        time.sleep(at)
        proc.send_signal(signal.SIGKILL)
        proc.communicate()
        stage, step = where(exp)
        survived, lost, why = rerun(root, recipe, exp, want, step)
        rows.append({"case": f"kill -9 at {at:.1f} s", "kind": "timed", "killed": proc.returncode == -9,
                     "stage": stage, "step": step, "survived": survived, "lost_steps": lost, "why": why})
        print(rows[-1], file=sys.stderr)

    for i in range(3):  # two runs at once
        root, recipe, exp = fresh(f"twice{i}")
        procs = [start(["train", str(recipe)], root) for _ in range(2)]
        outs = [p.communicate() for p in procs]
        codes = sorted(p.returncode for p in procs)
        refused = [o + e for (o, e), p in zip(outs, procs) if p.returncode == 1]
        ok = codes == [0, 1] and "in use by PID" in refused[0] and bundle_bytes(exp) == want
        rows.append({"case": "two seqx train at once", "kind": "lock", "survived": ok, "lost_steps": 0,
                     "why": "" if ok else str(codes)})
        print(rows[-1], file=sys.stderr)

    for name, kill_at, limit, file in [
        ("disk full: feature shard", None, 32 * 1024, "shard-00000.f16"),
        ("disk full: checkpoint", "step:5", 1024 * 1024, ".pt"),
        ("disk full: bundle weights", "bundle", 300 * 1024, "model.safetensors"),
    ]:
        root, recipe, exp = fresh(name.split()[-1].replace(" ", "_"))
        if kill_at:  # a checkpoint (or bundle) already there, the full disk meets the next write
            run(["train", str(recipe)], root, kill_at=kill_at)
        before = {p.name: p.read_bytes() for p in (exp / "checkpoints").glob("*.pt")}
        full = run(["train", str(recipe)], root, fsize=limit)
        lines = error_lines(full)
        kept = all((exp / "checkpoints" / n).read_bytes() == b for n, b in before.items())
        one_line = full.returncode == 1 and len(lines) == 1 and file in lines[0] and "disk full" in lines[0]
        survived, lost, why = rerun(root, recipe, exp, want, 0)
        rows.append({"case": name, "kind": "disk", "survived": survived and one_line and kept, "lost_steps": 0,
                     "line": lines[0] if lines else full.stderr[-300:], "why": why})
        print(rows[-1], file=sys.stderr)

    rows.extend(tmpfs_case(fresh, want))

    if args.json:
        print(json.dumps(rows, indent=1))
        return
    print(table(rows))


def tmpfs_case(fresh, want: dict[str, bytes]) -> list[dict]:  # noqa: ANN001
    """A real ENOSPC: the experiment on a 2 MB tmpfs (root only), then grown to 64 MB and run again."""
    root, recipe, exp = fresh("tmpfs")
    mount = root / "exp"
    mount.mkdir(parents=True, exist_ok=True)
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mount)], capture_output=True).returncode:
        print("tmpfs: cannot mount here (not root?), case left out", file=sys.stderr)
        return []
    try:
        full = run(["train", str(recipe)], root)
        lines = error_lines(full)
        before = {p.name: p.read_bytes() for p in (exp / "checkpoints").glob("*.pt")}
        one_line = full.returncode == 1 and len(lines) == 1 and "disk full" in lines[0]
        subprocess.run(["mount", "-o", "remount,size=64m", str(mount)], check=True)
        kept = all((exp / "checkpoints" / n).read_bytes() == b for n, b in before.items())
        survived, lost, why = rerun(root, recipe, exp, want, 0)
        row = {"case": "disk full: 2 MB tmpfs (ENOSPC)", "kind": "disk", "survived": survived and one_line and kept,
               "lost_steps": lost, "line": lines[0] if lines else full.stderr[-300:], "why": why}
        print(row, file=sys.stderr)
        return [row]
    finally:
        subprocess.run(["umount", str(mount)], capture_output=True)


_ORDER = ["hook", "timed", "lock", "disk"]


def table(rows: list[dict]) -> str:
    groups: dict[str, list[dict]] = {}
    for row in rows:
        key = row["case"] if row["kind"] in ("lock", "disk") else f"kill -9 at a random time, in {row['stage']}"
        if row["kind"] == "hook":
            key = f"kill -9 at hook `{row['case'].split()[-1].split(':')[0]}`"
        if row["kind"] == "timed" and not row["killed"]:
            key = "kill -9 at a random time after the run had ended: no fault"
        groups.setdefault(key, []).append(row)
    lines = ["| case | tries | survived | lost |", "| --- | ---: | ---: | --- |"]
    for key, group in sorted(groups.items(), key=lambda kv: _ORDER.index(kv[1][0]["kind"])):
        lost = [r["lost_steps"] for r in group]
        lost_text = "nothing" if not any(lost) else f"{sum(lost)} logged step(s) redone in all (max {max(lost)})"
        if group[0].get("stage") in ("data", "featurize", "tokenize"):
            lost_text = "the unfinished stage (redone)"
        lines.append(f"| {key} | {len(group)} | {sum(r['survived'] for r in group)} | {lost_text} |")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
