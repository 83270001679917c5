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


def as_recipe_default(recipe: Recipe) -> Recipe:
    """The default recipe's model shape: the linear front-end and the convolution module."""
    return recipe.model_copy(update={"model": recipe.model.model_copy(update={"conv_kernel": 3, "frontend": "linear"})})


def _losses(root: Path) -> list[float]:
    rows = [json.loads(line) for line in (root / "exp/tiny/train_log.jsonl").read_text().splitlines()]
    return [r["loss"] for r in rows if "loss" in r]


def test_a_compiled_step_learns_what_the_eager_step_learns(tmp_path: Path) -> None:
    # five files in batches of 3 and 2 every epoch (lengths differ too): no one-utterance batch, which
    # dynamo would give a graph of its own (it specializes sizes of 1)
    rows = speak(tmp_path / "audio", PHRASES[:5])
    settings = {"epochs": 4, "max_frames": 400, "deterministic": False}
    # with the convolution module: compiled, its depthwise convolution is a shifted sum (inductor
    # cannot compile the Conv1d with dynamic shapes)
    eager, compiled = (
        as_recipe_default(tiny_recipe(tmp_path / name, rows, compile=name == "compiled", **settings))
        for name in ("eager", "compiled")
    )
    assert compiled.train.compile and not eager.train.compile
    run_train_stage(eager, device="cpu")
    counters.clear()
    run_train_stage(compiled, device="cpu")
    # the step ran through torch.compile, compiled once for every batch shape: batch, frames and tokens
    # symbolic from the first step (left to dynamic=None, the first batch's static graph was followed by
    # a second, symbolic one: 114 s of compiling here against 71 s)
    assert counters["stats"]["unique_graphs"] == 1
    plain, fused = _losses(tmp_path / "eager"), _losses(tmp_path / "compiled")
    assert len(plain) == len(fused) >= 4
    # the same weights and batches: the same losses to float rounding (fused kernels sum in another order)
    assert fused == pytest.approx(plain, rel=2e-3)
    assert fused[-1] < fused[0]
    switched_off = compiled.model_copy(update={"train": compiled.train.model_copy(update={"compile": False})})
    assert run_key(switched_off) == run_key(compiled)  # its checkpoints stay its own either way
