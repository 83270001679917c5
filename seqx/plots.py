"""Pictures of a run: an utterance's features, the cross-attention alignment, the training curves.

matplotlib with the Agg backend, so it works on a headless machine. Each
function writes one PNG and returns its path; nothing is shown on screen.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from seqx.errors import SeqxError  # noqa: E402
from seqx.recipe import Recipe  # noqa: E402
from seqx.stage import atomic_write  # noqa: E402

if TYPE_CHECKING:
    from seqx.decode.bundle import Bundle


def plot_features(feats: np.ndarray, path: Path, title: str, hop_seconds: float) -> Path:
    """(T, F) feature frames as an image: time across, feature dimension up."""
    fig, ax = plt.subplots(figsize=(10, 3.2))
    extent = (0.0, feats.shape[0] * hop_seconds, 0, feats.shape[1])
    image = ax.imshow(feats.T, origin="lower", aspect="auto", cmap="magma", extent=extent, interpolation="nearest")
    ax.set_xlabel("time (s)")
    ax.set_ylabel("feature")
    ax.set_title(title)
    fig.colorbar(image, ax=ax, pad=0.01)
    return _save(fig, path)


def plot_alignment(weights: list[np.ndarray], tokens: list[str], path: Path, title: str) -> Path:
    """Cross-attention per decoder layer: output tokens (rows) x encoder frames (columns)."""
    if not weights:
        raise SeqxError(f"{path}: no attention weights to plot")
    fig, axes = plt.subplots(1, len(weights), figsize=(4.2 * len(weights), 0.35 * len(tokens) + 2.0), squeeze=False)
    for layer, (ax, w) in enumerate(zip(axes[0], weights)):
        ax.imshow(w, origin="upper", aspect="auto", cmap="viridis", interpolation="nearest")
        ax.set_title(f"layer {layer + 1}")
        ax.set_xlabel("encoder frame")
        ax.set_yticks(range(len(tokens)))
        ax.set_yticklabels(tokens if layer == 0 else [""] * len(tokens), fontsize=8)
    fig.suptitle(title)
    return _save(fig, path)


def read_train_log(path: Path) -> list[dict[str, float]]:
    if not path.is_file():
        raise SeqxError(f"{path}: no training log; train a model first (`seqx train RECIPE`)")
    rows = []
    for line in path.read_text().splitlines():
        if line.strip():
            rows.append(json.loads(line))
    return rows


def plot_training_curves(rows: list[dict[str, float]], path: Path, title: str) -> Path:
    """Training loss and learning rate by step; validation loss and WER by epoch end."""
    step_rows = [r for r in rows if r.get("loss") is not None]
    valid_rows = [r for r in rows if r.get("valid_wer") is not None]
    fig, (ax_loss, ax_lr, ax_wer) = plt.subplots(1, 3, figsize=(14, 3.6))
    if step_rows:
        steps = [r["step"] for r in step_rows]
        ax_loss.plot(steps, [r["loss"] for r in step_rows], lw=0.8, label="train")
        ax_lr.plot(steps, [r.get("lr", float("nan")) for r in step_rows], lw=1.0, color="tab:orange")
    if valid_rows:
        steps = [r["step"] for r in valid_rows]
        if any(r.get("valid_loss") is not None for r in valid_rows):
            ax_loss.plot(steps, [r.get("valid_loss", float("nan")) for r in valid_rows], "o-", ms=3, label="valid")
        ax_wer.plot(steps, [100 * r["valid_wer"] for r in valid_rows], "o-", ms=3, color="tab:green")
    ax_loss.set(title="loss", xlabel="step")
    ax_loss.legend()
    ax_lr.set(title="learning rate", xlabel="step")
    ax_wer.set(title="valid WER % (greedy)", xlabel="step")
    for ax in (ax_loss, ax_lr, ax_wer):
        ax.grid(alpha=0.3)
    fig.suptitle(title)
    return _save(fig, path)


def _save(fig: plt.Figure, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    with atomic_write(path) as tmp:
        fig.savefig(tmp, dpi=110, format=path.suffix.lstrip(".") or "png")
    plt.close(fig)
    return path


def plot_run(recipe: Recipe, bundle: Bundle, target: Path, file: Path | None = None) -> list[Path]:
    """features.png, alignment.png (greedy transcript of `file`) and, once trained, curves.png.

    `file` defaults to the first test utterance with speech. Returns the paths written.
    """
    from seqx.data.manifest import read_manifest
    from seqx.decode.alignment import cross_attention_weights
    from seqx.decode.transcribe import featurize, search
    from seqx.featurize.audio import load_audio

    if file is None:
        speech = [u for u in read_manifest(recipe.data_dir / "test.jsonl") if u.text.strip()]
        if not speech:
            raise SeqxError(f"{recipe.data_dir / 'test.jsonl'}: no utterance with speech to draw")
        file = Path(speech[0].audio)
    wave = load_audio(file, bundle.sample_rate)
    title = f"{file.name}: {bundle.features.kind}"
    written = [plot_features(bundle.extractor(wave).numpy(), target / "features.png", title, bundle.extractor.hop_seconds)]
    feats = featurize(bundle, wave)
    nbests, _ = search(bundle, [feats], bundle.decode.merged(greedy=True))
    hyp = nbests[0][0]
    weights, _ = cross_attention_weights(bundle.model, feats, hyp.tokens)
    labels = [bundle.tokenizer.decode([t]) or "·" for t in hyp.tokens] + ["</s>"]
    text = bundle.tokenizer.decode(hyp.tokens)
    written.append(plot_alignment([w.numpy() for w in weights], labels, target / "alignment.png", f'"{text}"'))
    log = recipe.root / "train_log.jsonl"
    if log.is_file():
        written.append(plot_training_curves(read_train_log(log), target / "curves.png", f"training: {recipe.name}"))
    return written
