"""`seqx grammar`: what a grammar (a recipe's, a .jsgf/.gram, a .txt phrase list, a Vosk .json, a Rhasspy .ini, a .yaml) holds."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from seqx.cli.common import JsonOpt, SetOpt, out
from seqx.recipe import DEFAULT_RECIPE


def grammar(
    path: Annotated[Path, typer.Argument(help="A recipe, or a grammar file: .jsgf/.gram, .txt (phrases), .json (Vosk), .ini (Rhasspy), .yaml (seqx, Home Assistant, Rhino).")] = (
        DEFAULT_RECIPE
    ),
    show: Annotated[bool, typer.Option("--show", help="Intents, slot sizes, vocabulary, sentence count.")] = False,
    sample: Annotated[int, typer.Option("--sample", min=0, help="Print N random sentences with their parse.")] = 0,
    seed: Annotated[int, typer.Option("--seed", help="Seed of --sample.")] = 0,
    overrides: SetOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Show a command grammar (sentences counted, never listed) or sample sentences with their parse."""
    import numpy as np

    from seqx.grammar.load import open_grammar
    from seqx.grammar.model import output_text
    from seqx.grammar.summary import shared_warning, summarize

    loaded = open_grammar(path, overrides)
    show = show or not sample
    result: dict[str, object] = {}
    summary = summarize(loaded) if show else None
    rng = np.random.default_rng(seed)
    parses = [loaded.sample(rng) for _ in range(sample)]
    if json_out:
        if summary is not None:
            result["summary"] = summary.to_json()
        if sample:
            result["samples"] = [p.to_json() for p in parses]
        out.print_json(json.dumps(result))
        return
    if summary is not None:
        table = Table(title=f"grammar {summary.name}: {summary.sentences:,} sentences, "
                            f"{summary.vocabulary} words, word DFA {summary.dfa_states} states")
        table.add_column("intent")
        table.add_column("templates", justify="right")
        table.add_column("sentences", justify="right")
        for name, info in summary.intents.items():
            table.add_row(name, str(info["templates"]), f"{info['sentences']:,}")
        out.print(table)
        if summary.slots:
            slots = Table(title="slots")
            slots.add_column("slot")
            slots.add_column("values", justify="right")
            for name, size in summary.slots.items():
                slots.add_row(name, str(size))
            out.print(slots)
        if summary.fixed:  # said by no word: a template reports them
            fixed = Table(title="slots reported unsaid")
            fixed.add_column("slot")
            fixed.add_column("values")
            for name, values in summary.fixed.items():
                fixed.add_row(name, ", ".join(output_text(v) for v in values))
            out.print(fixed)
        for group in summary.sound_alike:
            out.print(f"[yellow]warning:[/] {' / '.join(repr(w) for w in group)} sound alike where the grammar takes "
                      "either: a recognizer cannot tell which was said (word one of them otherwise)", highlight=False)
        for found in summary.shared:
            out.print(f"[yellow]warning:[/] {escape(shared_warning(*found))}", highlight=False)
        for advice in [*summary.short_forms, *summary.notes]:
            out.print(f"[yellow]warning:[/] {escape(advice)}", highlight=False)
    if parses:
        from seqx.decode.result import command_text
    for parse in parses:
        out.print(f"{parse.text}  [dim]->[/] {escape(command_text(parse.intent, parse.slots))}", highlight=False)
