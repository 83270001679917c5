"""The sentencepiece tokenizer with its special tokens fixed up front.

Ids are fixed when the model is trained (pad 0, unk 1, bos 2, eos 3, CTC blank 4)
and looked up by name afterwards, so a model and its tokenizer can never
disagree about which id means what.
"""

from __future__ import annotations

import io
import json
import re
from collections.abc import Collection, Iterable, Sequence
from itertools import pairwise
from pathlib import Path

import sentencepiece as spm

from seqx.errors import SeqxError
from seqx.faults import fault_point
from seqx.recipe import TokenizerSettings
from seqx.stage import atomic_write, atomic_write_text
from seqx.tokenize.text import normalize_text

PAD, UNK, BOS, EOS, BLANK = "<pad>", "<unk>", "<s>", "</s>", "<blank>"
MODEL_NAME, SETTINGS_NAME = "bpe.model", "tokenizer.json"


class Tokenizer:
    def __init__(self, model_path: str | Path, settings: TokenizerSettings) -> None:
        self.model_path = Path(model_path)
        self.settings = settings
        try:
            self.sp = spm.SentencePieceProcessor(model_file=str(self.model_path))
        except (OSError, RuntimeError) as err:
            first = str(err).splitlines()[0] if str(err) else type(err).__name__
            raise SeqxError(f"{self.model_path}: not a readable sentencepiece model ({first})") from None
        self.pad_id = self.sp.piece_to_id(PAD)
        self.unk_id = self.sp.piece_to_id(UNK)
        self.bos_id = self.sp.piece_to_id(BOS)
        self.eos_id = self.sp.piece_to_id(EOS)
        self.blank_id = self.sp.piece_to_id(BLANK)
        self.special_ids = {self.pad_id, self.unk_id, self.bos_id, self.eos_id, self.blank_id}

    @classmethod
    def load(cls, folder: str | Path) -> Tokenizer:
        folder = Path(folder)
        path = folder / SETTINGS_NAME
        try:
            settings = TokenizerSettings.model_validate_json(path.read_text())
        except FileNotFoundError:
            raise SeqxError(f"{path}: missing; run `seqx tokenize`") from None
        except ValueError as err:  # pydantic's ValidationError too
            raise SeqxError(f"{path}: corrupt tokenizer settings ({str(err).splitlines()[0]})") from None
        return cls(folder / MODEL_NAME, settings)

    @property
    def vocab_size(self) -> int:
        return self.sp.get_piece_size()

    def normalize(self, text: str) -> str:
        return normalize_text(text, self.settings)

    def encode(self, text: str) -> list[int]:
        """Normalized text -> ids (no bos/eos)."""
        return self.sp.encode(self.normalize(text))

    def decode(self, ids: Iterable[int]) -> str:
        return self.sp.decode([int(i) for i in ids if int(i) not in self.special_ids])

    def pieces(self, text: str) -> list[str]:
        return self.sp.encode(self.normalize(text), out_type=str)

    def id_to_piece(self, token: int) -> str:
        return self.sp.id_to_piece(int(token))


def train_tokenizer(
    texts: Iterable[str], out_dir: str | Path, settings: TokenizerSettings, answers: Collection[str] | None = None
) -> Tokenizer:
    """Train on normalized, non-empty texts; write bpe.model + tokenizer.json under out_dir.

    `answers`: the words `merge_repeats` may make whole, the grammar's (None: every word of the
    texts). Not the everyday English of out-of-grammar strings: on a grammar of a few words those
    are most of the text, and twenty of them made whole would take the merges that spell the
    grammar's own words (cards' "eight" as `▁ e i g h t`).

    `vocab_size` is the most pieces: a text too small to support that many (a grammar of a
    dozen words cannot fill the default 128) gets the largest size that works, and the
    settings written say so. The caller compares and tells the user.
    """
    out_dir = Path(out_dir)
    if settings.vocab_size == "auto":  # resolved from the grammar by the caller (seqx/tokenize/stage.py)
        raise SeqxError(f"{out_dir}: tokenizer.vocab_size auto needs the grammar's words: use resolved_settings()")
    out_dir.mkdir(parents=True, exist_ok=True)
    lines = [t for t in (normalize_text(x, settings) for x in texts) if t]
    if not lines:
        raise SeqxError(f"{out_dir}: no non-empty training transcripts to train a tokenizer on")
    try:
        model = _train_pieces(lines, settings, answers)
    except _TooManyPieces as err:
        settings = settings.model_copy(update={"vocab_size": err.largest})
        model = _train_pieces(lines, settings, answers)
    with atomic_write(out_dir / MODEL_NAME) as tmp:
        tmp.write_bytes(model)
    fault_point("tokenize")
    atomic_write_text(out_dir / SETTINGS_NAME, json.dumps(settings.model_dump(), indent=1))
    return Tokenizer(out_dir / MODEL_NAME, settings)


class _TooManyPieces(Exception):
    def __init__(self, largest: int) -> None:
        super().__init__(largest)
        self.largest = largest


MERGE_ROUNDS = 4  # each round's new whole words change the merges; one round settled every grammar tried


def _train_pieces(lines: list[str], settings: TokenizerSettings, answers: Collection[str] | None) -> bytes:
    """The sentencepiece model, with `merge_repeats` applied when the settings ask for it."""
    model = _train_sentencepiece(lines, settings)
    if not settings.merge_repeats or settings.kind == "char":  # characters repeat by design
        return model
    return merge_repeated_pieces(lines, settings, model, answers)


def merge_repeated_pieces(
    lines: list[str], settings: TokenizerSettings, model: bytes, answers: Collection[str] | None = None
) -> bytes:
    """Train again with every word that would be spelled with a piece twice in a row as one piece.

    CTC can emit the same label twice only with a blank between, so "g ra s s" needs three
    frames for its last sound; at the speech embedding's 80 ms a frame a person's "grass" often
    has two, and the CTC head then hears "g ra s" or nothing it can align (the grammar's answer
    rejected, docs/benchmarks.md). BPE merges by frequency, so a rare word keeps its doubled
    letters apart. A whole word as a user-defined piece ("▁eggs") leaves every other word's
    spelling as BPE made it, where a piece for the pair ("gg") would cut "bedroom" into "bedr oo m".
    """
    words = sorted({w for line in lines for w in line.split()})
    if answers is not None:
        answers = {normalize_text(a, settings) for a in answers}
        words = [w for w in words if w in answers]
    merged: set[str] = set()
    for _ in range(MERGE_ROUNDS):
        sp = spm.SentencePieceProcessor(model_proto=model)
        repeats = {w for w in words if repeats_a_piece(sp.encode(w, out_type=str))} - merged
        if not repeats:
            break
        try:
            model = _train_sentencepiece(lines, settings, whole_words=sorted(merged | repeats))
        except (SeqxError, _TooManyPieces):  # no room for more whole words in vocab_size: keep the last model
            break
        merged |= repeats
    return model


def repeats_a_piece(pieces: list[str]) -> bool:
    """A spelling with one piece twice in a row: what `merge_repeats` makes whole."""
    return any(a == b for a, b in pairwise(pieces))


def _train_sentencepiece(lines: list[str], settings: TokenizerSettings, whole_words: Sequence[str] = ()) -> bytes:
    model = io.BytesIO()
    try:
        spm.SentencePieceTrainer.train(
            sentence_iterator=iter(lines),
            model_writer=model,
            model_type=settings.kind,
            vocab_size=settings.vocab_size,
            character_coverage=1.0,
            pad_id=0,
            unk_id=1,
            bos_id=2,
            eos_id=3,
            pad_piece=PAD,
            unk_piece=UNK,
            bos_piece=BOS,
            eos_piece=EOS,
            user_defined_symbols=[BLANK, *("\u2581" + w for w in whole_words)],  # "▁word": only where a word starts
            hard_vocab_limit=settings.kind != "char",
            num_threads=1,  # deterministic, and the corpus is small
            minloglevel=2,
        )
    except RuntimeError as err:
        match = re.search(r"value <= (\d+)", str(err))
        if match:
            raise _TooManyPieces(int(match.group(1))) from None
        raise SeqxError(f"tokenizer: sentencepiece failed: {str(err).splitlines()[0]}") from None
    return model.getvalue()
