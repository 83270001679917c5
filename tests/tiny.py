"""The tiny model the decoding tests train once per module (about a minute on one core).

One espeak-ng voice per split and a handful of sentences: the model memorizes its training
files, which is the point, since these tests check the machinery around the model (search,
grammar, rejection, listening, export), not what it learns. Each test file adds its corpus
(templates or grammar, size, empty share, epochs, features) after TINY_BASE; later keys win.
"""

from __future__ import annotations

from pathlib import Path

import torch
from conftest import ESPEAK_ONLY

from seqx.decode.bundle import Bundle, load_bundle
from seqx.recipe import Recipe, load_recipe
from seqx.train.stage import run_train_stage

REPO = Path(__file__).resolve().parents[1]
TINY_BASE = [
    "device_profiles={}",
    *ESPEAK_ONLY,  # whatever the default mix is: the cheapest engine, one voice
    "data.synth.accents=[en-us]",
    "data.synth.variants=['', m3, f2]",  # one voice per split: memorizing is the point here
    "data.synth.valid_voices=1",
    "data.synth.test_voices=1",
    "data.synth.heldout_command_share=0",
    "data.synth.noise_share=0",
    "data.synth.clipped_share=0",  # the full recipe's clipped copies: only where a test asks for them
    "data.synth.pause_share=0",  # files said the same way every epoch: memorizing is the point (above)
    "data.synth.augment.lengthen.share=0",  # the same
    "data.synth.rate_wpm=[170, 170]",
    "features.n_mels=40",
    "features.specaugment=false",
    "tokenizer.kind=char",
    "model.d_model=48",
    "model.heads=2",
    "model.enc_layers=2",
    "model.dec_layers=1",
    "model.d_ff=96",
    # no convolution module: which out-of-grammar sentences a model of a few memorized files rejects,
    # and whether it hears an endpointer's cut of a file as the file, is its luck; these tests were
    # set up on the plain Transformer's. The convolution is trained in test_cli_demo.py and checked
    # for padding and export parity in test_model.py and test_runtime.py.
    "model.conv_kernel=0",
    "model.dropout=0",
    "train.lr=0.005",
    "train.label_smoothing=0",
    "train.warmup_steps=10",
    "train.max_frames=600",
    "train.workers=0",
    "train.valid_max_utts=8",
    "train.device=cpu",
    "decode.max_len=40",
    "decode.max_len_ratio=1.5",
    "decode.beam=4",
]
# the three-template corpus of the first decoding tests: commands only, no out-of-grammar strings
TEMPLATES = [
    "data.synth.templates=['open the {app}', 'check the battery', 'scroll {way}']",
    "data.synth.slots={app: [terminal, browser], way: [up, down]}",
    "data.synth.oog_share=0",
]
# the cheapest features and the front-end that goes with them
FBANK = ["features.kind=fbank", "model.frontend=conv2d"]


def tiny_recipe(root: Path, overrides: list[str]) -> Recipe:
    return load_recipe(REPO / "recipes/commands.yaml", [f"exp_dir={root}", *TINY_BASE, *overrides])


def train_tiny(root: Path, overrides: list[str]) -> tuple[Recipe, Bundle]:
    """Train the tiny recipe with `overrides` under `root` on one thread (much faster for a model
    this small on a shared box) and load its bundle."""
    recipe = tiny_recipe(root, overrides)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        run_train_stage(recipe, device="cpu")
    finally:
        torch.set_num_threads(threads)
    return recipe, load_bundle(recipe.bundle_dir)
