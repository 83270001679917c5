"""`seqx data`: make or import the corpus and print what was kept and skipped."""

from __future__ import annotations

import json
from collections import Counter
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


def data(
    recipe: RecipeArg = DEFAULT_RECIPE, overrides: SetOpt = None, force: ForceOpt = False, json_out: JsonOpt = False
) -> None:
    """Write exp/NAME/data/{train,valid,test}.jsonl: synthesize the command corpus or import a manifest."""
    from seqx.data.stage import run_data_stage

    loaded = load_for_this_machine(recipe, overrides)
    with RichReporter() as reporter:
        report = run_data_stage(loaded, reporter, force=force)
    if json_out:
        out.print_json(json.dumps(asdict(report)))
        return
    if report.fresh:
        out.print(f"data: up to date ({report.out_dir}), nothing to do")
    table = Table(title=f"data: {loaded.name} ({loaded.data.source})")
    for column in ("split", "utterances", "hours", "speakers"):
        table.add_column(column, justify="left" if column == "split" else "right")
    for split, count in report.counts.items():
        table.add_row(split, str(count), f"{report.hours[split]:.2f}", str(report.speakers[split]))
    out.print(table)
    if report.skipped:
        reasons = Counter(reason.split(" (")[0] for _, reason in report.skipped)
        skipped = Table(title=f"skipped: {len(report.skipped)}")
        skipped.add_column("reason")
        skipped.add_column("utterances", justify="right")
        for reason, count in reasons.most_common():
            skipped.add_row(reason, str(count))
        out.print(skipped)
