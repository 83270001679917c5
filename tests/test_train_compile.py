"""`train.compile`: the compiled training step learns what the eager one learns, and a run keeps its
checkpoints whichever way it is switched (it changes speed, not the weights' recipe)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from test_train_corpus import PHRASES, one_thread, speak, tiny_recipe  # noqa: F401
from torch._dynamo.utils import counters

from seqx.recipe import Recipe
from seqx.train.stage import run_key, run_train_stage

pytestmark = [
    pytest.mark.usefixtures("one_thread"),
    # inductor compiles C++ for a CPU graph
    pytest.mark.skipif(shutil.which("g++") is None and shutil.which("c++") is None, reason="no C++ compiler"),
]


def with_convolution(recipe: Recipe) -> Recipe:
    return recipe.model_copy(update={"model": recipe.model.model_copy(update={"conv_kernel": 3})})


def _losses(root: Path) -> list[float]:
    rows = [json.loads(line) for line in (root / "exp/tiny/train_log.jsonl").read_text().splitlines()]
    return [r["loss"] for r in rows if "loss" in r]


def test_a_compiled_step_learns_what_the_eager_step_learns(tmp_path: Path) -> None:
    rows = speak(tmp_path / "audio", PHRASES[:4])
    settings = {"epochs": 4, "max_frames": 400, "deterministic": False}
    # with the convolution module: compiled, its depthwise convolution is a shifted sum (inductor
    # cannot compile the Conv1d with dynamic shapes)
    eager, compiled = (
        with_convolution(tiny_recipe(tmp_path / name, rows, compile=name == "compiled", **settings))
        for name in ("eager", "compiled")
    )
    assert compiled.train.compile and not eager.train.compile
    run_train_stage(eager, device="cpu")
    counters.clear()
    run_train_stage(compiled, device="cpu")
    assert counters["stats"]["unique_graphs"] >= 1  # the step did run through torch.compile
    plain, fused = _losses(tmp_path / "eager"), _losses(tmp_path / "compiled")
    assert len(plain) == len(fused) >= 4
    # the same weights and batches: the same losses to float rounding (fused kernels sum in another order)
    assert fused == pytest.approx(plain, rel=2e-3)
    assert fused[-1] < fused[0]
    switched_off = compiled.model_copy(update={"train": compiled.train.model_copy(update={"compile": False})})
    assert run_key(switched_off) == run_key(compiled)  # its checkpoints stay its own either way
