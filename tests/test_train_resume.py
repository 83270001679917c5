"""Resumed = uninterrupted: a run stopped by Ctrl-C mid-epoch and run again ends with the same weights, bitwise."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import torch
from safetensors.torch import load_file
from test_train_corpus import PHRASES, one_thread, speak, tiny_recipe  # noqa: F401

from seqx.recipe import Recipe
from seqx.report import Collect
from seqx.train.checkpoint import MEAN_SLACK, MEAN_SLACK_ABS, load_checkpoint
from seqx.train.stage import run_train_stage


class CtrlC(Collect):
    """Raises KeyboardInterrupt (what Ctrl-C raises) after `after` training batches."""

    def __init__(self, after: int) -> None:
        super().__init__()
        self.left = after

    def task(self, description: str, total: float | None, unit: str = "utt") -> Any:
        outer = self

        class _Task:
            def advance(self, n: float = 1, **fields: Any) -> None:
                if description.startswith("train epoch") and "loss" in fields:
                    outer.left -= n
                    if outer.left <= 0:
                        raise KeyboardInterrupt

            def close(self) -> None:
                pass

        return _Task()


def _settings() -> dict[str, Any]:
    # dropout and SpecAugment on: the RNG states must be restored too, not only the weights
    return {"epochs": 3, "max_frames": 400, "save_every_steps": 2, "keep_last": 3, "average_best": 2}


def _recipe(root: Path, rows: list[dict[str, Any]]):
    recipe = tiny_recipe(root, rows, **_settings())
    data = recipe.model_dump()
    data["model"]["dropout"] = 0.1
    data["features"]["specaugment"] = True
    data["features"]["spec"] = {"freq_mask_width": 5, "time_mask_width": 10}
    from seqx.recipe import recipe_from_dict

    return recipe_from_dict(data)


pytestmark = pytest.mark.usefixtures("one_thread")


def _an_up_to_date_run_imports_no_compiler(recipe: Recipe) -> None:
    """`seqx train` with nothing to do, in a new process, loads neither torch's compiler (2.1 s
    through `torch.use_deterministic_algorithms`) nor scipy.signal (1.2 s): what every run's start
    and end cost before they were left to the runs that use them."""
    check = (
        "import json, sys; from seqx.recipe import recipe_from_dict; from seqx.train.stage import run_train_stage; "
        "assert run_train_stage(recipe_from_dict(json.loads(sys.argv[1]))).fresh; "
        "print(sorted(m for m in ('torch._inductor', 'torch._dynamo', 'scipy.signal') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", check, json.dumps(recipe.model_dump(mode="json"))],
                         capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]", out


def test_resumed_run_matches_uninterrupted_run_bitwise(tmp_path: Path) -> None:
    rows = speak(tmp_path / "wav", PHRASES)
    straight = _recipe(tmp_path / "a", rows)
    torch.use_deterministic_algorithms(False, warn_only=True)  # the caller's setting, put back after the run
    report = run_train_stage(straight, Collect())
    assert report.steps >= 6, "the corpus must give several batches per epoch for this test to mean anything"
    # the bundle is never clearly worse on valid than the best checkpoint (seqx.train.checkpoint.bundle_weights)
    assert report.bundle_valid_wer is not None and report.best_valid_wer is not None
    assert report.bundle_valid_wer <= report.best_valid_wer * (1 + MEAN_SLACK) + MEAN_SLACK_ABS, report
    assert not torch.are_deterministic_algorithms_enabled() and torch.is_deterministic_algorithms_warn_only_enabled()
    torch.use_deterministic_algorithms(False)
    _an_up_to_date_run_imports_no_compiler(straight)

    broken = _recipe(tmp_path / "b", rows)
    stopped_at = report.steps // 2 + 1  # mid-epoch, after a mid-epoch checkpoint
    try:
        run_train_stage(broken, CtrlC(after=stopped_at))
    except KeyboardInterrupt:
        pass
    else:
        raise AssertionError("the run was not interrupted")
    last = load_checkpoint(broken.checkpoint_dir / "last.pt")
    assert 0 < last["state"]["step"] < report.steps
    assert not (broken.bundle_dir / "model.safetensors").exists()
    assert not list(broken.checkpoint_dir.glob("*.tmp*")), "a temporary checkpoint was left behind"

    resumed = run_train_stage(broken, Collect())
    assert resumed.steps == report.steps and resumed.resumed_from_step == last["state"]["step"]
    want = load_checkpoint(straight.checkpoint_dir / "last.pt")
    got = load_checkpoint(broken.checkpoint_dir / "last.pt")
    for name, tensor in want["model"].items():
        assert torch.equal(tensor, got["model"][name]), name
    a, b = load_file(straight.bundle_dir / "model.safetensors"), load_file(broken.bundle_dir / "model.safetensors")
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    # the training log has each step once, as if the run had never stopped

    def log(r) -> list[dict]:  # noqa: ANN001
        return [json.loads(x) for x in (r.root / "train_log.jsonl").read_text().splitlines()]

    steps = [row["step"] for row in log(broken) if "loss" in row]
    assert steps == [row["step"] for row in log(straight) if "loss" in row]

    # a third run finds the bundle up to date; --restart trains from scratch, to the same weights
    assert run_train_stage(broken, Collect()).fresh
    redone = run_train_stage(broken, Collect(), restart=True)
    assert not redone.fresh and redone.resumed_from_step is None and redone.steps == report.steps
    c = load_file(broken.bundle_dir / "model.safetensors")
    assert all(torch.equal(a[k], c[k]) for k in a)
