"""Train a recipe's model from an experiment's feature stores and tokenizer alone, without its audio.

Usage (on a lent GPU, with exp/NAME/{data/*.jsonl, feats, tokenizer} carried there):
    python bench/train_from_stores.py recipes/commands.yaml --device cuda --set exp_dir=.gpu/exp \\
        --set name=commands --set data.size=3000 --set features.embed_views=1 --json

Why: a lent GPU receives at most 64 MiB. The demo corpus's features (25 MB) fit, its audio (262 MB)
does not, and `seqx train` would featurize again there, because its stage keys sign every audio file
by path, size and time. This runs the trainer `seqx train` runs (seqx.train.stage.train_on_stores:
the same Trainer, averaging and bundle) on the stores as they are, from scratch (checkpoints already
in exp/NAME are discarded, as with `seqx train --restart`). The rejection thresholds are not
chosen (that decodes valid's audio and synthesizes negatives): choose them where the audio is, with
`bench/human.py --recalibrate`'s call or by training there, then `seqx evaluate --model`.

The recipe is applied for the device it runs on (`device_profiles`), so on a GPU it is the full
recipe; keep data.* equal to the corpus's (the cpu profile's data.size 3000 for the demo corpus)
only so that the run key records it.

--without-copies first drops the clipped and tight copies (`data.synth.clipped_share`) from every
store's index: they come on top of an otherwise unchanged corpus, so one carried corpus gives both
models of the "with and without clipped_share" comparison. The shards and cmvn.json stay as they
are (cmvn's statistics then include the copies' frames).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from seqx.data.manifest import CLIPPED_SUFFIX, TIGHT_SUFFIX  # noqa: E402
from seqx.errors import RecipeError, SeqxError  # noqa: E402
from seqx.featurize.store import INDEX, PER_UTTERANCE  # noqa: E402
from seqx.recipe import load_recipe  # noqa: E402
from seqx.report import Collect  # noqa: E402
from seqx.stage import atomic_write_text  # noqa: E402
from seqx.train.distributed import init_distributed  # noqa: E402
from seqx.train.stage import pick_device, run_key, train_on_stores  # noqa: E402


def drop_copies(feats_dir: Path) -> int:
    """Rewrite each store's index under feats_dir without the clipped and tight copies; how many went."""
    dropped = 0
    for path in sorted(feats_dir.glob(f"*/{INDEX}")):
        index = json.loads(path.read_text())
        keep = [i for i, utt in enumerate(index["ids"]) if not utt.endswith((CLIPPED_SUFFIX, TIGHT_SUFFIX))]
        dropped += len(index["ids"]) - len(keep)
        for key in PER_UTTERANCE:
            index[key] = [index[key][i] for i in keep]
        atomic_write_text(path, json.dumps(index))
    return dropped


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("recipe")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--device", default="auto")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--without-copies", action="store_true", help="train without the clipped and tight copies")
    args = parser.parse_args()
    device = pick_device(args.device)
    recipe = load_recipe(args.recipe, args.set).for_device(device.type)
    for needed in (recipe.feats_dir / "train", recipe.feats_dir / "cmvn.json", recipe.tokenizer_dir):
        if not needed.exists():
            raise SystemExit(f"{needed}: missing (carry the experiment's feats/ and tokenizer/)")
    said = Collect()
    if args.without_copies:
        said.info(f"{drop_copies(recipe.feats_dir)} clipped and tight copies dropped from {recipe.feats_dir}")
    started = time.monotonic()
    report = train_on_stores(recipe, device, init_distributed(device.type), said, run_key(recipe), restart=True,
                             choose_thresholds=False)
    report.wall_seconds = time.monotonic() - started
    print(*said.infos, sep="\n", file=sys.stderr)
    print(*(f"warning: {w}" for w in said.warnings), sep="\n", file=sys.stderr)
    if args.json:
        print(json.dumps(vars(report), indent=1, default=str))
    else:
        print(f"{recipe.name}: {report.steps} steps, {report.epochs} epochs in {report.wall_seconds:.0f} s on "
              f"{report.device}; best valid WER {report.best_valid_wer} (epoch {report.best_epoch}); "
              f"bundle {report.bundle_dir}")


if __name__ == "__main__":
    try:
        main()
    except (SeqxError, RecipeError) as err:  # a bad recipe key, a missing file: one line, as the seqx command says it
        raise SystemExit(f"error: {err}") from None
