"""`seqx export`: parse, call seqx.export, print what was written."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.table import Table

from seqx.cli.common import JsonOpt, load_for_this_machine, out
from seqx.recipe import DEFAULT_RECIPE


def export(
    named: Annotated[
        Optional[Path],
        typer.Argument(metavar="[RECIPE|MODEL]", help="A recipe (its trained bundle) or a bundle folder; same as --model."),
    ] = None,
    model: Annotated[
        Optional[Path],
        typer.Option("--model", "-m", help="Model bundle folder or recipe (default: the one `seqx train "
                     "recipes/commands.yaml` wrote)."),
    ] = None,
    out_dir: Annotated[
        Optional[Path], typer.Option("--out", "-o", help="Folder to write (default: next to the bundle, onnx/ or onnx-int8/).")
    ] = None,
    int8: Annotated[bool, typer.Option("--int8", help="Dynamic int8 quantization of the linear layers.")] = False,
    grammar: Annotated[
        Optional[str],
        typer.Option("--grammar", "-g", help="The grammar the export decodes with: a grammar file "
                     "(.yaml/.jsgf/.gram/.txt/.json/.ini), `recipe` (the model's) or `none` (default: the bundle's decode.grammar)."),
    ] = None,
    wake_word: Annotated[
        Optional[str],
        typer.Option("--wake-word", "-w", help="Carry a wake word for `seqx listen --model DIR` (alexa, 'hey jarvis', "
                     "'hey mycroft', 'hey rhasspy' or an openWakeWord .onnx file): it listens for it by default."),
    ] = None,
    json_out: JsonOpt = False,
) -> None:
    """Export a trained model to ONNX (encoder + one decoder step); `seqx transcribe --model DIR` runs it without torch."""
    from seqx.decode.bundle import load_bundle, locate_bundle
    from seqx.export.onnx_export import export_bundle

    model = model or named
    default = model or load_for_this_machine(DEFAULT_RECIPE, None, "cpu").bundle_dir
    bundle = load_bundle(locate_bundle(model, default, DEFAULT_RECIPE), device="cpu")
    if grammar is not None:  # stored in the export as data and as a token automaton (seqx/export/decoding.py)
        bundle.decode = bundle.decode.merged(grammar=grammar)
    target = out_dir or bundle.folder.parent / ("onnx-int8" if int8 else "onnx")
    report = export_bundle(bundle, target, int8=int8, wake_word=wake_word)
    if json_out:
        out.print_json(json.dumps({
            "folder": str(report.folder), "int8": report.int8, "sizes": report.sizes,
            "total_bytes": report.total_bytes, "max_abs_diff": report.max_abs_diff,
        }))  # fmt: skip
        return
    table = Table(title=f"{report.folder} ({'int8' if int8 else 'fp32'})")
    table.add_column("file")
    table.add_column("size", justify="right")
    for name, size in report.sizes.items():
        table.add_row(name, f"{size / 1e6:.2f} MB")
    table.add_row("total", f"{report.total_bytes / 1e6:.2f} MB")
    out.print(table)
    diffs = ", ".join(f"{k} {v:.1e}" for k, v in report.max_abs_diff.items())
    out.print(f"onnxruntime vs torch, largest difference: {diffs}", highlight=False)
