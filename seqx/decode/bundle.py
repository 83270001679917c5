"""The model bundle: everything decoding needs, in one folder, without the recipe.

    config.json        dims, feature settings, sample rate, CMVN, tokenizer settings, decode settings
    model.safetensors  the (averaged) weights
    tokenizer.model    the sentencepiece model

`load_bundle` rebuilds the model from `dims` alone (the constructor takes that one
object), so a bundle always loads into the code that made it.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path

import torch
from safetensors.torch import load_model, save_model

from seqx import __version__
from seqx.device import resolve_device
from seqx.errors import SeqxError
from seqx.featurize import embedding
from seqx.featurize.cmvn import Cmvn
from seqx.featurize.features import FeatureExtractor
from seqx.model.transformer import ModelDimensions, Seq2SeqTransformer
from seqx.recipe import DecodeSettings, FeatureSettings, TokenizerSettings
from seqx.stage import atomic_write, atomic_write_text
from seqx.tokenize.tokenizer import Tokenizer

CONFIG, WEIGHTS, TOKENIZER = "config.json", "model.safetensors", "tokenizer.model"


@dataclass
class Bundle:
    model: Seq2SeqTransformer
    dims: ModelDimensions
    features: FeatureSettings
    sample_rate: int
    cmvn: Cmvn
    tokenizer: Tokenizer
    extractor: FeatureExtractor
    decode: DecodeSettings
    folder: Path

    @property
    def device(self) -> torch.device:
        """Where the model's weights are (and so where decoding runs)."""
        return next(self.model.parameters()).device


def save_bundle(
    folder: str | Path,
    model: Seq2SeqTransformer,
    features: FeatureSettings,
    sample_rate: int,
    cmvn: Cmvn,
    tokenizer: Tokenizer,
    decode: DecodeSettings,
    extra: dict[str, object] | None = None,
) -> Path:
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    config = {
        "seqx_version": __version__,
        "dims": model.dims.to_dict(),
        "features": features.model_dump(),
        "sample_rate": sample_rate,
        "cmvn": cmvn.to_dict(),
        "tokenizer": tokenizer.settings.model_dump(),
        "decode": decode.model_dump(),
        **(extra or {}),
    }
    if features.is_embedding:  # the features depend on the ONNX files of this package version
        config["feature_model"] = {"package": embedding.PACKAGE, "version": embedding.model_version()}
    # save_model handles the tied embedding/output weights (one tensor, two names)
    with atomic_write(folder / WEIGHTS) as tmp:
        save_model(model, str(tmp))
    with atomic_write(folder / TOKENIZER) as tmp:
        shutil.copyfile(tokenizer.model_path, tmp)
    atomic_write_text(folder / CONFIG, json.dumps(config, indent=1))  # written last: its presence means complete
    return folder


def locate_bundle(folder: Path | None, default: Path, recipe: str | Path) -> Path:
    """The bundle to decode with: `folder` when the user named one, else `default` (what
    `seqx train RECIPE` writes); the one place that says there is no bundle there."""
    found = folder or default
    if not (found / CONFIG).is_file():
        hint = "" if folder else f": run `seqx train {recipe}` first, or pass --model DIR"
        raise SeqxError(f"{found}: no trained model bundle here{hint}")
    return found


def load_bundle(folder: str | Path, device: str | torch.device = "cpu") -> Bundle:
    folder = Path(folder)
    device = resolve_device(device) if isinstance(device, str) else device
    path = folder / CONFIG
    if not path.is_file():
        raise SeqxError(f"{folder}: not a seqx model bundle (no {CONFIG})")
    config = json.loads(path.read_text())
    dims = ModelDimensions.from_dict(config["dims"])
    model = Seq2SeqTransformer(dims)
    load_model(model, str(folder / WEIGHTS), device="cpu")
    model.to(device).eval()
    features = FeatureSettings.model_validate(config["features"])
    if "feature_model" in config and config["feature_model"]["version"] != embedding.model_version():
        made = config["feature_model"]
        raise SeqxError(
            f"{path}: trained on {made['package']} {made['version']}'s speech embedding, "
            f"installed is {embedding.model_version()} (pip install {made['package']}=={made['version']})"
        )
    return Bundle(
        model=model,
        dims=dims,
        features=features,
        sample_rate=int(config["sample_rate"]),
        cmvn=Cmvn.from_dict(config["cmvn"]),
        tokenizer=Tokenizer(folder / TOKENIZER, TokenizerSettings.model_validate(config["tokenizer"])),
        extractor=FeatureExtractor(features, int(config["sample_rate"])),
        decode=DecodeSettings.model_validate(config["decode"]),
        folder=folder,
    )
