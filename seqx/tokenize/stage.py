"""`seqx tokenize`: train the tokenizer on the training transcripts and the grammar's words, cached.

Every word of the recipe's grammar goes into the training text once, besides the
transcripts: a word the corpus happened never to draw (a 10^8-sentence grammar has far
more sentences than any corpus) must still be spellable, or the grammar cannot be
compiled over the tokenizer's pieces for decoding.
"""

from __future__ import annotations

from dataclasses import dataclass

from seqx.data.manifest import read_manifest
from seqx.data.stage import manifests_exist, run_data_stage
from seqx.errors import SeqxError
from seqx.grammar.load import load_grammar
from seqx.lock import stage_lock
from seqx.recipe import Recipe, TokenizerSettings
from seqx.report import Collect, Reporter
from seqx.stage import fingerprint, is_fresh, mark_done, signature_in
from seqx.tokenize.tokenizer import Tokenizer, train_tokenizer


@dataclass
class TokenizeReport:
    out_dir: str
    fresh: bool
    vocab_size: int
    sentences: int


def tokenize_stage_key(recipe: Recipe, words: list[str] | None = None) -> str:
    """The tokenizer depends on its settings, the training transcripts and the grammar's words."""
    words = grammar_words(recipe) if words is None else words
    # `merge_repeats` came later: off, a tokenizer trained before it stays fresh
    settings = recipe.tokenizer.model_dump(
        mode="json", exclude=set() if recipe.tokenizer.merge_repeats else {"merge_repeats"}
    )
    return fingerprint(settings, signature_in(recipe.data_dir / "train.jsonl", recipe.root), words)


def run_tokenize_stage(recipe: Recipe, reporter: Reporter | None = None, force: bool = False) -> TokenizeReport:
    reporter = reporter or Collect()
    with stage_lock(recipe.root, reporter):  # one run at a time per experiment folder
        return _run_tokenize_stage(recipe, reporter, force)


def _run_tokenize_stage(recipe: Recipe, reporter: Reporter, force: bool) -> TokenizeReport:
    if not manifests_exist(recipe):
        run_data_stage(recipe, reporter)
    train_manifest = recipe.data_dir / "train.jsonl"
    out_dir = recipe.tokenizer_dir
    texts = [u.text for u in read_manifest(train_manifest)]
    words = grammar_words(recipe)
    key = tokenize_stage_key(recipe, words)
    if not force and is_fresh(out_dir, key):
        try:
            return TokenizeReport(str(out_dir), True, Tokenizer.load(out_dir).vocab_size, len(texts))
        except SeqxError as err:  # damaged since: train it again (the same text gives the same model)
            reporter.warn(f"{err}; training the tokenizer again")
    settings = resolved_settings(recipe, words)
    # merge_repeats makes whole only the grammar's words (all of a manifest corpus's: it has no grammar)
    tokenizer = train_tokenizer(texts + words, out_dir, settings, answers=words or None)
    wanted = settings.vocab_size
    if recipe.tokenizer.kind != "char" and tokenizer.vocab_size < wanted and recipe.tokenizer.vocab_size != "auto":
        reporter.warn(
            f"tokenizer.vocab_size: {wanted} is more than the training text supports; "
            f"using {tokenizer.vocab_size}, the largest that works"
        )
    mark_done(out_dir, key)
    return TokenizeReport(str(out_dir), False, tokenizer.vocab_size, len(texts))


AUTO_PIECES = (128, 512)  # the least and the most pieces `auto` chooses


def auto_vocab_size(words: list[str]) -> int:
    """`tokenizer.vocab_size: auto`: the power of two at or above the grammar's word count, 128 to 512.

    Measured on two grammars (docs/benchmarks.md "Pieces for the grammar's words"): the demo's
    105 words do best at 128 pieces, the smart-home grammar's 197 at 256 (free WER lower in all
    four runs, commands right 85.9 -> 88.0% on average, one run lower). Fewer pieces spell a large grammar's words
    in 2-3 pieces each: longer outputs, more of CTC's room used by a fast voice. Without a
    grammar (a manifest corpus) it is 128, the fixed default before.
    """
    least, most = AUTO_PIECES
    return min(max(least, 1 << max(len(set(words)) - 1, 1).bit_length()), most)


def vocab_size(recipe: Recipe, words: list[str] | None = None) -> int:
    """The most pieces the recipe's tokenizer is trained with: its number, or `auto`'s choice."""
    size = recipe.tokenizer.vocab_size
    return auto_vocab_size(grammar_words(recipe) if words is None else words) if size == "auto" else size


def resolved_settings(recipe: Recipe, words: list[str] | None = None) -> TokenizerSettings:
    """The recipe's tokenizer settings with `auto` turned into its number: what training takes."""
    return recipe.tokenizer.model_copy(update={"vocab_size": vocab_size(recipe, words)})


def grammar_words(recipe: Recipe) -> list[str]:
    """The vocabulary of the recipe's grammar (none for a manifest corpus without one)."""
    if recipe.data.source != "synth":
        return []
    grammar = load_grammar(recipe)
    return grammar.vocabulary() if grammar is not None else []
