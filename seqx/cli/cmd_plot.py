"""`seqx plot`: PNGs of an utterance's features, its cross-attention alignment and the training curves."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from seqx.cli.app import RecipeArg, SetOpt, app, load_for_this_machine, out
from seqx.errors import SeqxError
from seqx.recipe import DEFAULT_RECIPE


@app.command()
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
    from seqx.data.manifest import read_manifest
    from seqx.decode.alignment import cross_attention_weights
    from seqx.decode.bundle import load_bundle
    from seqx.decode.transcribe import featurize, search
    from seqx.featurize.audio import load_audio
    from seqx.plots import plot_alignment, plot_features, plot_training_curves, read_train_log

    loaded = load_for_this_machine(recipe, overrides)
    folder = model or loaded.bundle_dir
    if not (folder / "config.json").is_file():
        raise SeqxError(f"{folder}: no trained model bundle here: run `seqx train {recipe}` first")
    bundle = load_bundle(folder, device="cpu")
    target = out_dir or loaded.root / "plots"
    if file is None:
        speech = [u for u in read_manifest(loaded.data_dir / "test.jsonl") if u.text.strip()]
        if not speech:
            raise SeqxError(f"{loaded.data_dir / 'test.jsonl'}: no utterance with speech to draw")
        file = Path(speech[0].audio)

    wave = load_audio(file, bundle.sample_rate)
    raw = bundle.extractor(wave)
    written = [plot_features(raw.numpy(), target / "features.png", f"{file.name}: {bundle.features.kind}", bundle.extractor.hop_seconds)]

    feats = featurize(bundle, wave)
    hyp = search(bundle, [feats], bundle.decode.model_copy(update={"beam": 1, "nbest": 1}))[0][0]
    weights, _ = cross_attention_weights(bundle.model, feats, hyp.tokens)
    labels = [bundle.tokenizer.decode([t]) or "·" for t in hyp.tokens] + ["</s>"]
    text = bundle.tokenizer.decode(hyp.tokens)
    written.append(plot_alignment([w.numpy() for w in weights], labels, target / "alignment.png", f'"{text}"'))

    log = loaded.root / "train_log.jsonl"
    if log.is_file():
        written.append(plot_training_curves(read_train_log(log), target / "curves.png", f"training: {loaded.name}"))
    for path in written:
        out.print(str(path), highlight=False)
