"""`seqx data`: make or import the corpus and print what was kept and skipped."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import asdict
from typing import Annotated

import typer
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
from seqx.recipe import DEFAULT_RECIPE, Recipe

SHOWN = 12  # voice names shown per engine in the table (--json has them all)


VoicesOpt = Annotated[
    bool, typer.Option("--voices", help="List every voice of every installed speech engine; make nothing.")
]


def data(
    recipe: RecipeArg = DEFAULT_RECIPE,
    overrides: SetOpt = None,
    force: ForceOpt = False,
    json_out: JsonOpt = False,
    voices: VoicesOpt = False,
) -> None:
    """Write exp/NAME/data/{train,valid,test}.jsonl: synthesize the command corpus or import a manifest."""
    from seqx.data.stage import run_data_stage

    loaded = load_for_this_machine(recipe, overrides)
    if voices:
        _print_voices(loaded, json_out)
        return
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


def _print_voices(recipe: Recipe, json_out: bool) -> None:
    from seqx.data.engines import voice_inventory
    from seqx.data.voices import all_voices

    rows = voice_inventory(all_voices(recipe.data.synth) if recipe.data.source == "synth" else [])
    if json_out:
        out.print_json(json.dumps([asdict(r) for r in rows]))
        return
    table = Table(title=f"speech engines and their voices ({recipe.name} uses those marked *)")
    for column in ("engine", "voices", "in recipe", "names"):
        table.add_column(column, justify="right" if column in ("voices", "in recipe") else "left")
    for row in rows:
        if not row.installed:
            table.add_row(row.engine, "-", str(len(row.in_recipe)), f"[yellow]{row.note}[/]")
            continue
        used = set(row.in_recipe)
        names = [f"{n}*" if n in used else n for n in sorted(row.voices, key=lambda n: n not in used)]
        shown = ", ".join(names[:SHOWN]) + (f" ... (+{len(names) - SHOWN})" if len(names) > SHOWN else "")
        table.add_row(row.engine, str(len(row.voices)), str(len(used)), shown + (f"\n{row.note}" if row.note else ""))
    out.print(table)
