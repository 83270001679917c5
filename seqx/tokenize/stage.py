"""`seqx tokenize`: train the tokenizer on the training transcripts, cached."""

from __future__ import annotations

from dataclasses import dataclass

from seqx.data.manifest import read_manifest
from seqx.data.stage import manifests_exist, run_data_stage
from seqx.recipe import Recipe
from seqx.report import Collect, Reporter
from seqx.stage import fingerprint, is_fresh, mark_done
from seqx.tokenize.tokenizer import Tokenizer, train_tokenizer


@dataclass
class TokenizeReport:
    out_dir: str
    fresh: bool
    vocab_size: int
    sentences: int


def tokenize_stage_key(recipe: Recipe) -> str:
    """The tokenizer depends on its settings and the training transcripts, nothing else."""
    return fingerprint(recipe.tokenizer, recipe.data_dir / "train.jsonl")


def run_tokenize_stage(recipe: Recipe, reporter: Reporter | None = None, force: bool = False) -> TokenizeReport:
    reporter = reporter or Collect()
    if not manifests_exist(recipe):
        run_data_stage(recipe, reporter)
    train_manifest = recipe.data_dir / "train.jsonl"
    out_dir = recipe.tokenizer_dir
    key = tokenize_stage_key(recipe)
    texts = [u.text for u in read_manifest(train_manifest)]
    if not force and is_fresh(out_dir, key):
        return TokenizeReport(str(out_dir), True, Tokenizer.load(out_dir).vocab_size, len(texts))
    tokenizer = train_tokenizer(texts, out_dir, recipe.tokenizer)
    mark_done(out_dir, key)
    return TokenizeReport(str(out_dir), False, tokenizer.vocab_size, len(texts))
