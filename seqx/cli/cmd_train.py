"""`seqx train`: the whole pipeline up to a model bundle, resumable."""

from __future__ import annotations

import json
import os
from dataclasses import asdict
from typing import TYPE_CHECKING, Annotated, Optional

import typer
from rich.table import Table

from seqx.cli.common import JsonOpt, RecipeArg, RichReporter, SetOpt, out
from seqx.recipe import DEFAULT_RECIPE

if TYPE_CHECKING:
    from seqx.train.loop import TrainReport


def train(
    recipe: RecipeArg = DEFAULT_RECIPE,
    overrides: SetOpt = None,
    device: Annotated[Optional[str], typer.Option("--device", help="cpu, cuda, cuda:N or auto (default: train.device).")] = None,
    restart: Annotated[bool, typer.Option("--restart", help="Discard checkpoints and start over.")] = False,
    json_out: JsonOpt = False,
) -> None:
    """Train the model (running data, featurize and tokenize first when needed); resumes after an interruption."""
    from seqx.recipe import load_recipe
    from seqx.train.stage import run_train_stage

    loaded = load_recipe(recipe, overrides)
    main_rank = os.environ.get("RANK", "0") == "0"  # under torchrun only rank 0 draws and prints
    if not main_rank:
        run_train_stage(loaded, None, device=device, restart=restart)
        return
    with RichReporter() as reporter:
        report = run_train_stage(loaded, reporter, device=device, restart=restart)
    if json_out:
        out.print_json(json.dumps(asdict(report)))
        return
    if report.fresh:
        out.print(f"train: model up to date ({report.bundle_dir}), nothing to do (--restart to train again)")
        return
    table = Table(title=f"trained: {loaded.name}")
    table.add_column("")
    table.add_column("", justify="right")
    wer = "n/a" if report.best_valid_wer is None else f"{100 * report.best_valid_wer:.2f}% (epoch {report.best_epoch})"
    for name, value in [
        ("device", report.device if report.world_size == 1 else f"{report.device} x {report.world_size} processes"),
        ("parameters", f"{report.parameters:,}"),
        ("epochs", str(report.epochs)),
        ("steps", str(report.steps)),
        ("best valid WER (greedy)", wer),
        ("bundle valid WER (averaged)", "n/a" if report.bundle_valid_wer is None else f"{100 * report.bundle_valid_wer:.2f}%"),
        *([("CPU threads", cpu_threads(report))] if report.cpu_threads else []),
        ("skipped non-finite batches", str(report.skipped_batches)),
        ("wall time", f"{report.wall_seconds:.0f} s"),
        ("averaged", ", ".join(report.averaged)),
        *([("left out (their mean validated worse)", ", ".join(report.left_out))] if report.left_out else []),
        ("bundle", report.bundle_dir),
    ]:
        table.add_row(name, value)
    out.print(table)


def cpu_threads(report: TrainReport) -> str:
    """'2', or '2 (1 for 66 s: other programs busy)': the trainer gives way to other programs (seqx/torch_threads.py)."""
    if report.fewest_threads >= report.cpu_threads:
        return str(report.cpu_threads)
    return f"{report.cpu_threads} ({report.fewest_threads} for {report.fewer_threads_seconds:.0f} s: other programs busy)"
