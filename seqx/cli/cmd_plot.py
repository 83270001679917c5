"""`seqx plot`: PNGs of an utterance's features, its cross-attention alignment and the training curves."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from seqx.cli.common import RecipeArg, SetOpt, load_for_this_machine, out
from seqx.recipe import DEFAULT_RECIPE


def plot(
    recipe: RecipeArg = DEFAULT_RECIPE,
    file: Annotated[
        Optional[Path], typer.Option("--file", "-f", help="Audio to draw (default: the first test utterance with speech).")
    ] = None,
    model: Annotated[Optional[Path], typer.Option("--model", "-m", help="Bundle folder (default: the recipe's).")] = None,
    out_dir: Annotated[Optional[Path], typer.Option("--out", help="Where the PNGs go (default: exp/NAME/plots).")] = None,
    overrides: SetOpt = None,
) -> None:
    """Write features.png, alignment.png and curves.png for a trained recipe."""
    from seqx.decode.bundle import load_bundle, locate_bundle
    from seqx.plots import plot_run

    loaded = load_for_this_machine(recipe, overrides)
    bundle = load_bundle(locate_bundle(model, loaded.bundle_dir, recipe), device="cpu")
    for path in plot_run(loaded, bundle, out_dir or loaded.root / "plots", file):
        out.print(str(path), highlight=False)
