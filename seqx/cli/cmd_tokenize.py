"""`seqx tokenize`: train the BPE tokenizer, or show how it splits a sentence."""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Annotated, Optional

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
from seqx.recipe import DEFAULT_RECIPE


def tokenize(
    recipe: RecipeArg = DEFAULT_RECIPE,
    show: Annotated[Optional[str], typer.Option("--show", help="Print the pieces and ids of this text.")] = None,
    overrides: SetOpt = None,
    force: ForceOpt = False,
    json_out: JsonOpt = False,
) -> None:
    """Train the sentencepiece tokenizer (BPE by default) on the training transcripts."""
    from seqx.tokenize.stage import run_tokenize_stage
    from seqx.tokenize.tokenizer import Tokenizer

    loaded = load_for_this_machine(recipe, overrides)
    with RichReporter() as reporter:
        report = run_tokenize_stage(loaded, reporter, force=force)
    if show is not None:
        tokenizer = Tokenizer.load(loaded.tokenizer_dir)
        pieces, ids = tokenizer.pieces(show), tokenizer.encode(show)
        if json_out:
            out.print_json(json.dumps({"text": tokenizer.normalize(show), "pieces": pieces, "ids": ids}))
            return
        table = Table(title=f'"{tokenizer.normalize(show)}"')
        table.add_column("piece")
        table.add_column("id", justify="right")
        for piece, token in zip(pieces, ids):
            table.add_row(piece, str(token))
        out.print(table)
        return
    if json_out:
        out.print_json(json.dumps(asdict(report)))
        return
    state = "up to date, nothing to do" if report.fresh else f"trained on {report.sentences} transcripts"
    out.print(f"tokenizer: {loaded.tokenizer.kind}, {report.vocab_size} pieces, {state} ({report.out_dir})")
