"""The model bundle: everything decoding needs, in one folder, without the recipe.

    config.json        dims, feature settings, sample rate, CMVN, tokenizer settings, decode settings,
                       and the training grammar (`grammar`, its YAML form) when the recipe had one;
                       with intent/slot heads their classes (`slot_heads`, seqx/decode/slot_rescore.py)
    model.safetensors  the (averaged) weights
    tokenizer.model    the sentencepiece model

`load_bundle` rebuilds the model from `dims` alone (the constructor takes that one
object), so a bundle always loads into the code that made it.

config.json states the seqx version and bundle `format` that wrote it (none: format 1)
and, from format 2, the size and SHA-256 of the other two files: a bundle from a newer
seqx is refused with the version to use, and a damaged file is one line naming it.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import torch
from safetensors import SafetensorError
from safetensors.torch import load_model, save_model

from seqx import __version__, faults
from seqx.decode.slot_rescore import HeadLayout
from seqx.device import resolve_device
from seqx.errors import SeqxError
from seqx.featurize import embedding
from seqx.featurize.cmvn import Cmvn
from seqx.featurize.features import FeatureExtractor
from seqx.grammar.model import Grammar
from seqx.grammar.tokens import TokenAutomaton
from seqx.model.transformer import ModelDimensions, Seq2SeqTransformer
from seqx.recipe import DecodeSettings, FeatureSettings, TokenizerSettings
from seqx.stage import atomic_write, atomic_write_text
from seqx.tokenize.tokenizer import Tokenizer

CONFIG, WEIGHTS, TOKENIZER = "config.json", "model.safetensors", "tokenizer.model"
FORMAT = 2  # 1: no format/version fields, no checksums; 2: "format", "files" (size and sha256 of each)


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
    grammar: Grammar | None = None  # the grammar the model was trained from
    heads: HeadLayout | None = None  # the intent/slot heads' classes (config "slot_heads"); None without heads
    automata: dict[str, TokenAutomaton] = field(default_factory=dict, repr=False)  # compiled, by grammar

    @property
    def device(self) -> torch.device:
        """Where the model's weights are (and so where decoding runs)."""
        return next(self.model.parameters()).device

    def decode_grammar(self, choice: str | None = None) -> Grammar | None:
        """The grammar `decode.grammar` (or `choice`) names: `recipe` = the training grammar
        (None when there was none), `none` = free decoding, else a grammar file."""
        from seqx.grammar.load import grammar_from_file

        choice = self.decode.grammar if choice is None else choice
        if choice == "recipe":
            return self.grammar
        if choice == "none":
            return None
        return grammar_from_file(choice).spoken(self.tokenizer.normalize)

    def automaton(self, grammar: Grammar) -> TokenAutomaton:
        """The grammar over this bundle's tokenizer, on its device; compiled once per grammar.

        A word the tokenizer cannot spell is a GrammarError naming it.
        """
        from seqx.grammar.tokens import compile_tokens

        key = grammar.to_json()
        if key not in self.automata:
            self.automata[key] = compile_tokens(grammar, self.tokenizer).to(self.device)
        return self.automata[key]


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
        "format": FORMAT,
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
    weights = sum(t.numel() * t.element_size() for t in model.state_dict().values())
    with atomic_write(folder / WEIGHTS, need=weights) as tmp:
        save_model(model, str(tmp))
    faults.fault_point("bundle")
    with atomic_write(folder / TOKENIZER, need=Path(tokenizer.model_path).stat().st_size) as tmp:
        shutil.copyfile(tokenizer.model_path, tmp)
    config["files"] = file_checksums(folder)
    atomic_write_text(folder / CONFIG, json.dumps(config, indent=1))  # written last: its presence means complete
    return folder


def locate_bundle(folder: Path | None, default: Path, recipe: str | Path) -> Path:
    """The bundle to decode with: `folder` when the user named one (a recipe file names the bundle
    `seqx train` wrote for it), else `default` (what `seqx train RECIPE` writes); the one place that
    says there is no bundle there."""
    if folder is not None and folder.suffix.lower() in (".yaml", ".yml"):
        from seqx.recipe import load_recipe

        if not folder.is_file():
            raise SeqxError(f"{folder}: no such recipe file")
        folder, recipe = load_recipe(folder).bundle_dir, folder
        if not (folder / CONFIG).is_file():
            raise SeqxError(f"{folder}: no trained model bundle here: run `seqx train {recipe}` first")
    found = folder or default
    if not (found / CONFIG).is_file():
        hint = "" if folder else f": run `seqx train {recipe}` first, or pass --model DIR"
        raise SeqxError(f"{found}: no trained model bundle here{hint}")
    return found


def file_checksums(folder: Path) -> dict[str, dict[str, object]]:
    """The `files` entry of a bundle's config: size and sha256 of its weights and tokenizer, which
    loading checks (also rewritten by bench/halve_bundle.py after it stores the weights smaller)."""
    return {name: _describe_file(folder / name) for name in (WEIGHTS, TOKENIZER)}


def _describe_file(path: Path) -> dict[str, object]:
    return {"size": path.stat().st_size, "sha256": _sha256(path)}


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def check_bundle(folder: str | Path) -> dict:
    """Read config.json and check the bundle's format and files; returns the config.

    Raises SeqxError with one line naming the file and the problem: missing, not JSON, a
    format newer than this seqx reads (with the version to use), a size or checksum that
    differs from what config.json recorded (truncated or corrupt).
    """
    folder = Path(folder)
    path = folder / CONFIG
    if not path.is_file():
        raise SeqxError(f"{folder}: not a seqx model bundle (no {CONFIG})")
    try:
        config = json.loads(path.read_text())
        if not isinstance(config, dict):
            raise ValueError("not a JSON object")
    except (ValueError, UnicodeDecodeError) as err:
        raise SeqxError(f"{path}: corrupt bundle config ({str(err).splitlines()[0]})") from None
    fmt, wrote = config.get("format", 1), config.get("seqx_version", "?")
    if not isinstance(fmt, int) or fmt > FORMAT or fmt < 1:
        raise SeqxError(
            f"{path}: bundle format {fmt} written by seqx {wrote}; this seqx ({__version__}) reads formats 1 to "
            f"{FORMAT}: use seqx {wrote} or newer, or train the model again with this one"
        )
    missing = [k for k in ("dims", "features", "sample_rate", "cmvn", "tokenizer", "decode") if k not in config]
    if missing:
        raise SeqxError(f"{path}: corrupt bundle config (no {', '.join(missing)})")
    for name in (WEIGHTS, TOKENIZER):
        file = folder / name
        if not file.is_file():
            raise SeqxError(f"{file}: missing from the bundle")
        want = config.get("files", {}).get(name)  # format 1 bundles carry no checksums
        if want and file.stat().st_size != want["size"]:
            size = file.stat().st_size
            raise SeqxError(f"{file}: {size} bytes, the bundle wrote {want['size']} (truncated or corrupt)")
        if want and _sha256(file) != want["sha256"]:
            raise SeqxError(f"{file}: checksum mismatch: corrupt, or changed since the bundle was written")
    return config


def load_bundle(folder: str | Path, device: str | torch.device = "cpu") -> Bundle:
    try:
        return _load_bundle(Path(folder), device)
    except (ValueError, KeyError, TypeError) as err:  # pydantic's ValidationError is a ValueError
        raise SeqxError(f"{Path(folder) / CONFIG}: bad bundle config ({str(err).splitlines()[0]})") from None


def _load_weights(model: Seq2SeqTransformer, path: Path) -> None:
    try:
        load_model(model, str(path), device="cpu")
    except (SafetensorError, RuntimeError, OSError) as err:
        raise SeqxError(f"{path}: cannot load the weights ({str(err).splitlines()[0][:160]})") from None


def _load_bundle(folder: Path, device: str | torch.device) -> Bundle:
    device = resolve_device(device) if isinstance(device, str) else device
    path = folder / CONFIG
    config = check_bundle(folder)  # one line naming a missing, damaged or too new file
    dims = ModelDimensions.from_dict(config["dims"])
    heads = HeadLayout.from_json(config.get("slot_heads"))  # bundles from before the heads have none
    if (heads.sizes if heads is not None else ()) != dims.slot_classes:
        raise SeqxError(f"{path}: the intent/slot heads' classes (slot_heads) do not match dims.slot_classes")
    model = Seq2SeqTransformer(dims)
    _load_weights(model, folder / WEIGHTS)
    model.to(device).eval()
    features = FeatureSettings.model_validate(config["features"])
    if "feature_model" in config and config["feature_model"]["version"] != embedding.model_version():
        made = config["feature_model"]
        raise SeqxError(
            f"{path}: trained on {made['package']} {made['version']}'s speech embedding, "
            f"installed is {embedding.model_version()} (pip install {made['package']}=={made['version']})"
        )
    tokenizer = Tokenizer(folder / TOKENIZER, TokenizerSettings.model_validate(config["tokenizer"]))
    return Bundle(
        model=model,
        dims=dims,
        features=features,
        sample_rate=int(config["sample_rate"]),
        cmvn=Cmvn.from_dict(config["cmvn"]),
        tokenizer=tokenizer,
        extractor=FeatureExtractor(features, int(config["sample_rate"])),
        # a bundle from before the distance slack keeps the rule its thresholds were chosen under, and
        # one from before the no-speech gate had its own setting gates at vad_threshold
        decode=DecodeSettings.model_validate(
            {"reject_distance_slack": 0, "vad_gate": None, "floor_snr_db": None, **config["decode"]}
        ),
        folder=folder,
        # as decoded texts spell its words (a grammar of "TURN ON" parses "turn on")
        grammar=Grammar.from_dict(config["grammar"]).spoken(tokenizer.normalize) if config.get("grammar") else None,
        heads=heads,
    )


def update_config(folder: str | Path, decode: DecodeSettings | None = None, **extra: object) -> None:
    """Rewrite a bundle's config.json with new decode settings and/or extra entries (what
    training's last step, choosing decode.reject_margin, adds to a bundle already written)."""
    path = Path(folder) / CONFIG
    config = json.loads(path.read_text())
    if decode is not None:
        config["decode"] = decode.model_dump()
    config.update(extra)
    atomic_write_text(path, json.dumps(config, indent=1))
