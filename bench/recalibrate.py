"""Choose a trained bundle's rejection thresholds on the valid split, as `seqx train` does at its end.

Usage:
    python bench/recalibrate.py recipes/commands.yaml --set exp_dir=/tmp/gpu/exp --set name=gpufull \\
        --set data.size=3000 --set features.embed_views=1

For a bundle trained where the audio was not (bench/train_from_stores.py on a lent GPU) and put in
exp/NAME/model beside its corpus; or to choose again after the rule changed. It decodes valid's
commands and their out-of-grammar and noise negatives (made once under exp/NAME/eval/), then
writes decode.reject_margin and reject_distance (when `auto`) into the bundle's config.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from seqx.grammar.load import load_grammar  # noqa: E402
from seqx.errors import RecipeError, SeqxError  # noqa: E402
from seqx.recipe import load_recipe  # noqa: E402
from seqx.report import Collect  # noqa: E402
from seqx.train.stage import choose_reject_thresholds  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("recipe")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()
    recipe = load_recipe(args.recipe, args.set)
    grammar = load_grammar(recipe)
    if grammar is None:
        raise SystemExit(f"{args.recipe}: no grammar, so nothing is rejected against one")
    said = Collect()
    choose_reject_thresholds(recipe, grammar, said, torch.device(args.device))
    print(*said.infos, *(f"warning: {w}" for w in said.warnings), sep="\n")


if __name__ == "__main__":
    try:
        main()
    except (SeqxError, RecipeError) as err:  # a bad recipe key, a missing file: one line, as the seqx command says it
        raise SystemExit(f"error: {err}") from None
