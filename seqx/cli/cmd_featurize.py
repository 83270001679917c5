"""`seqx featurize`: features for every split, with a summary table."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.table import Table

from seqx.cli.app import load_for_this_machine, RECIPE_HELP, SET_HELP, RichReporter, app, out
from seqx.recipe import DEFAULT_RECIPE


@app.command()
def featurize(
    recipe: Annotated[Path, typer.Argument(help=RECIPE_HELP)] = DEFAULT_RECIPE,
    overrides: Annotated[Optional[list[str]], typer.Option("--set", help=SET_HELP)] = None,
    force: Annotated[bool, typer.Option("--force", help="Recompute even if up to date.")] = False,
    json_out: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """Compute MFCC or log-Mel features (and CMVN) for every split; runs the data stage first if needed."""
    from seqx.featurize.stage import run_featurize_stage

    loaded = load_for_this_machine(recipe, overrides)
    with RichReporter() as reporter:
        report = run_featurize_stage(loaded, reporter, force=force)
    if json_out:
        raw = asdict(report)
        for split, stats in report.splits.items():
            raw["splits"][split]["xrt"] = stats.xrt
        out.print_json(json.dumps(raw))
        return
    if report.fresh:
        out.print(f"featurize: up to date ({report.out_dir}), nothing to do; figures from the run that made it")
    title = f"features: {loaded.features.kind} x {report.n_feats}{' (kaldi)' if loaded.features.kaldi else ''}"
    table = Table(title=title)
    for column in ("split", "utterances", "hours", "frames", "x real time", "skipped"):
        table.add_column(column, justify="left" if column == "split" else "right")
    for split, stats in report.splits.items():
        hours = f"{stats.audio_seconds / 3600:.2f}"
        table.add_row(split, str(stats.utterances), hours, f"{stats.frames:,}", f"{stats.xrt:,.0f}", str(stats.skipped))
    out.print(table)
