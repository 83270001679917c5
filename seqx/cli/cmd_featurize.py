"""`seqx featurize`: features for every split, with a summary table."""

from __future__ import annotations

import json
from dataclasses import asdict

from rich.table import Table

from seqx.cli.common import (
    ForceOpt,
    JsonOpt,
    RecipeArg,
    RichReporter,
    SetOpt,
    load_for_this_machine,
    out,
)
from seqx.recipe import DEFAULT_RECIPE


def featurize(
    recipe: RecipeArg = DEFAULT_RECIPE,
    overrides: SetOpt = None,
    force: ForceOpt = False,
    json_out: JsonOpt = False,
) -> None:
    """Compute the features (the speech embedding by default; log-Mel or MFCC) and their normalization for every
    split; runs the data stage first if needed."""
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
