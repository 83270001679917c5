"""Text normalization, the sentencepiece tokenizer (round trip, fixed special ids, vocab-size error) and its stage."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from conftest import enumerate_sentences
from typer.testing import CliRunner

from seqx.errors import SeqxError
from seqx.grammar.load import load_grammar
from seqx.recipe import TokenizerSettings, load_recipe, recipe_from_dict
from seqx.tokenize.stage import auto_vocab_size, run_tokenize_stage, vocab_size
from seqx.tokenize.text import normalize_text, number_words, ordinal_words, spell_out
from seqx.tokenize.tokenizer import Tokenizer, _TooManyPieces, _train_sentencepiece, train_tokenizer

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def commands() -> list[str]:
    """Every command of the default recipe's grammar (332 of them): a small real corpus."""
    return sorted(enumerate_sentences(load_grammar(load_recipe(REPO / "recipes/commands.yaml"))))


@pytest.mark.parametrize(
    ("n", "words"),
    [(0, "zero"), (7, "seven"), (15, "fifteen"), (40, "forty"), (42, "forty two"), (100, "one hundred"),
     (305, "three hundred five"), (1000, "one thousand"), (2024, "two thousand twenty four"),
     (9999, "nine thousand nine hundred ninety nine")],
)  # fmt: skip
def test_number_words(n: int, words: str) -> None:
    assert number_words(n) == words


def test_normalize_text_settings() -> None:
    default = TokenizerSettings()
    assert normalize_text("Set a timer for 15 minutes!", default) == "set a timer for fifteen minutes"
    assert normalize_text("  Don't  STOP, \"now\"... ", default) == "don't stop now"
    assert normalize_text("volume-up 3", default) == "volume up three"
    assert normalize_text("", default) == ""
    keep = TokenizerSettings(lowercase=False, punctuation="keep", numbers="keep")
    assert normalize_text("Set a timer for 15 minutes!", keep) == "Set a timer for 15 minutes!"
    # idempotent: normalizing twice changes nothing (training and scoring may both apply it)
    for text in ("Set a timer for 15 minutes!", "Don't stop", "room 101, please"):
        once = normalize_text(text, default)
        assert normalize_text(once, default) == once


@pytest.mark.parametrize(
    ("written", "said"),
    [("$5.99 off", "five dollars ninety nine cents off"), ("$1", "one dollar"), ("£2.01", "two pounds one penny"),
     ("2% milk", "two percent milk"), ("2.5 %", "two point five percent"), (".5", "point five"),
     ("the 21st", "the twenty first"), ("1st 2nd 3rd 12th 40th", "first second third twelfth fortieth"),
     ("at 7:05", "at seven oh five"), ("10:00 pm", "ten o'clock p m"), ("72°F", "seventy two degrees fahrenheit"),
     ("20 °C", "twenty degrees celsius"), ("72° please", "seventy two degrees please"), ("72° F", "seventy two degrees F"),
     ("°C", "degrees celsius"), ("50 %", "fifty percent"), ("1/2 cup", "one half cup"),
     ("24/7", "twenty four seven"), ("1,000 points", "one thousand points"), ("1,2,3", "one, two, three"),
     ("-5 degrees", "minus five degrees"), ("5-10 minutes", "five to ten minutes"), ("volume-up 3", "volume-up three"),
     ("#1 hit", "number one hit"), ("salt & pepper", "salt and pepper"), ("C++", "C plus plus"),
     ("I\u2019d like", "I'd like"), ("room 101, please", "room one hundred one, please"), ("Dr. Pepper", "Dr. Pepper"),
     # short forms (short_forms.py): said long, as a person says them, not as each engine guesses
     ("wake me at 7 AM", "wake me at seven a m"), ("7am", "seven a m"), ("7:30pm", "seven thirty p m"),
     ("6 p.m. sharp", "six p m sharp"), ("AM radio", "a m radio"), ("I am home", "I am home"),
     ("I AM HOME", "I AM HOME"), ("AM I LATE", "AM I LATE"),
     ("play 80s hits", "play eighties hits"), ("the '90s", "the nineties"), ("the 1960s", "the nineteen sixties"),
     ("in 1985", "in nineteen eighty five"), ("since 1905", "since nineteen oh five"),
     ("1500 calories", "fifteen hundred calories"), ("1985-1990", "nineteen eighty five to nineteen ninety"),
     ("2024", "two thousand twenty four"), ("$1985", "one thousand nine hundred eighty five dollars"),
     ("5 km", "five kilometers"), ("1km", "one kilometer"), ("2.5kg", "two point five kilograms"),
     ("30 mph", "thirty miles per hour"), ("100km/h", "one hundred kilometers per hour"), ("3 hrs", "three hours"),
     ("20min", "twenty minutes"), ("20 min", "twenty minutes"), ("min 20", "min twenty"), ("6ft", "six feet"),
     ("12 oz: small", "twelve ounces: small"), ("6 ft tall", "six feet tall"), ("2 l", "two l"), ("call HR", "call HR"),
     ("the wizard of oz", "the wizard of oz"), ("12oz can", "twelve ounce can"), ("99¢", "ninety nine cents"),
     ("open x.com", "open x dot com"), ('a 12" pizza', "a twelve inch pizza"), ('say "7"', 'say " seven "'),
     ("1½ cups", "one and a half cups"), ("¾ full", "three quarters full"), ("burger w/ cheese", "burger with cheese"),
     ("w/o onions", "without onions"), ("10pc nuggets", "ten piece nuggets"),
     ("2L Pepsi", "two liter Pepsi"), ("L train", "L train"),
     # digit by digit (short_forms.spelled_numbers): phone numbers and codes; "No." before a number
     ("call 555-1234", "call five five five one two three four"),
     ("555-123-4567", "five five five one two three four five six seven"),
     ("(555) 123-4567", "five five five one two three four five six seven"),
     ("1-800-555-0199", "one eight hundred five five five zero one nine nine"),
     ("1-800-FLOWERS", "one eight hundred FLOWERS"), ("500-1000 calories", "five hundred to one thousand calories"),
     ("agent 007", "agent zero zero seven"), ("PIN 0420", "PIN zero four two zero"), ("0.5", "zero point five"),
     ("07:30", "seven thirty"), ("Symphony No. 5", "Symphony number five"), ("no.9", "number nine"),
     ("No, 5 more", "No, five more"), ("say no.", "say no."),
     # a fraction before a unit is a size, as a menu's is said
     ("½ lb burger", "half pound burger"), ("¼lb", "quarter pound"), ("1½ lb", "one and a half pounds"),
     ("1/2 lb burger", "half pound burger"), ("3/4 lb", "three quarter pound"),
     # a measure before the thing measured names its size; before "of", "tall", "left" it is a quantity
     ("a 12 oz latte", "a twelve ounce latte"), ("a 20 min timer", "a twenty minute timer"),
     ("5 kg bag", "five kilogram bag"), ("1 lb bag", "one pound bag"), ("2 lb of beef", "two pounds of beef"),
     ("for 20 min please", "for twenty minutes please"), ("5 km away", "five kilometers away"),
     ("$5 per lb", "five dollars per pound"), ("3 lbs", "three pounds"),
     # a half before "a"/"an" is "half" alone, and a whole number before one is "and a half" (Home Assistant's timers)
     ("timer for 1/2 an hour", "timer for half an hour"), ("add ½ a minute", "add half a minute"),
     ("1 1/2 hours", "one and a half hours"), ("2 3/4 cups", "two and three quarters cups")],
)  # fmt: skip
def test_numbers_and_their_symbols_are_spelled_as_said(written: str, said: str) -> None:
    """One spelling for what engines are told and what the transcript says: espeak-ng reads "$5" as
    "dollar five" and "1/2" as "one slash two", flite as "five dollars" and "a half"."""
    assert spell_out(written) == said
    normalized = normalize_text(written, TokenizerSettings())
    assert normalized == normalize_text(said, TokenizerSettings())
    assert spell_out(said) == said
    # a grammar's words are normalized as they stand side by side (Grammar.spoken): they must come out as
    # the sentence does, the words of a slot's value too
    from seqx.grammar import Grammar

    def said(g: Grammar) -> Grammar:
        return g.spoken(lambda text: normalize_text(text, TokenizerSettings()))

    assert said(Grammar.build({"x": ["{v}"]}, {"v": [written]})).parse(normalized), written
    if not re.search(r"[()\[\]|<>]", written):
        assert said(Grammar.build({"x": [written]})).parse(normalized), written


def test_a_measure_slot_is_heard_before_a_noun_and_alone() -> None:
    """A slot value "12 oz" is "twelve ounce" in "a 12 oz latte" (as the corpus says the sentence) and "twelve
    ounces" alone: the grammar decoding parses with holds both, each answering the value written."""
    from seqx.grammar import Grammar

    grammar = Grammar.build({"order": ["a {size} latte", "just {size}"]}, {"size": [("12 oz", "small"), "large"]})
    spoken = grammar.spoken(lambda text: normalize_text(text, TokenizerSettings()))
    assert normalize_text("a 12 oz latte", TokenizerSettings()) == "a twelve ounce latte"
    for heard in ("a twelve ounce latte", "a twelve ounces latte", "just twelve ounces"):
        assert spoken.parse(heard).slots == {"size": "small"}, heard
    assert len(spoken.slots["size"].values) == 3  # "large" is said one way


def test_ordinal_words() -> None:
    assert [ordinal_words(n) for n in (1, 2, 3, 5, 8, 9, 12, 20, 21, 100)] == [
        "first", "second", "third", "fifth", "eighth", "ninth", "twelfth", "twentieth", "twenty first", "one hundredth"]  # fmt: skip


@pytest.mark.parametrize("kind", ["bpe", "unigram", "char"])
def test_round_trip_and_special_ids(tmp_path: Path, commands: list[str], kind: str) -> None:
    raw = [c.title() + "!" for c in commands] + ["set a timer for 15 minutes", ""]  # empty lines are skipped
    tokenizer = train_tokenizer(raw, tmp_path, TokenizerSettings(kind=kind, vocab_size=100))
    # the ids are fixed up front and looked up by name, whatever the kind
    ids = (tokenizer.pad_id, tokenizer.unk_id, tokenizer.bos_id, tokenizer.eos_id, tokenizer.blank_id)
    assert ids == (0, 1, 2, 3, 4)
    assert tokenizer.id_to_piece(tokenizer.blank_id) == "<blank>"
    for text in raw:
        encoded = tokenizer.encode(text)
        assert not set(encoded) & tokenizer.special_ids  # no bos/eos/blank/unk in a training sentence
        assert tokenizer.decode(encoded) == normalize_text(text, tokenizer.settings)
    # decode skips special ids (a CTC path or a hypothesis with eos)
    hypothesis = [tokenizer.bos_id, *tokenizer.encode("scroll up"), tokenizer.blank_id, tokenizer.eos_id]
    assert tokenizer.decode(hypothesis) == "scroll up"
    loaded = Tokenizer.load(tmp_path)
    assert loaded.settings == tokenizer.settings and loaded.encode("find my files") == tokenizer.encode("find my files")


def test_special_ids_stable_across_corpora_and_sizes(tmp_path: Path, commands: list[str]) -> None:
    seen = set()
    for i, (texts, size) in enumerate([(commands, 64), (commands[::3], 96), (["hello world"] * 3 + commands[:5], 40)]):
        tok = train_tokenizer(texts, tmp_path / str(i), TokenizerSettings(vocab_size=size))
        seen.add((tok.pad_id, tok.unk_id, tok.bos_id, tok.eos_id, tok.blank_id))
    assert seen == {(0, 1, 2, 3, 4)}


@pytest.mark.parametrize("kind", ["bpe", "unigram"])
def test_too_large_vocab_gets_the_largest_that_works(tmp_path: Path, commands: list[str], kind: str) -> None:
    """A grammar of a dozen words cannot fill the default 128 pieces: train anyway, as large as it can."""
    texts = commands[:40]
    shrunk = train_tokenizer(texts, tmp_path / "a", TokenizerSettings(kind=kind, vocab_size=5000))
    largest = shrunk.vocab_size
    assert 5 < largest < 5000
    assert Tokenizer.load(tmp_path / "a").settings.vocab_size == largest  # what was written is what it is
    lines = [normalize_text(t, shrunk.settings) for t in texts]
    with pytest.raises(_TooManyPieces):  # one more is what sentencepiece refuses: it is the largest
        _train_sentencepiece(lines, TokenizerSettings(kind=kind, vocab_size=largest + 1))
    exact = train_tokenizer(texts, tmp_path / "b", TokenizerSettings(kind=kind, vocab_size=largest))
    assert exact.vocab_size == largest
    assert exact.encode("open the terminal") == shrunk.encode("open the terminal")


def test_merge_repeats_spells_no_word_with_a_piece_twice_in_a_row(tmp_path: Path, commands: list[str]) -> None:
    """CTC needs a blank between two equal labels: `merge_repeats` makes such a word one piece.

    The commands grammar spells "battery" b a t t e r y at 128 pieces, and these added words
    (rare, so BPE never merges their doubled letters) each with a piece twice in a row."""
    texts = commands + ["pizza with eggs and coffee", "grass and jazz"]
    plain = train_tokenizer(texts, tmp_path / "plain", TokenizerSettings(vocab_size=128))
    merged = train_tokenizer(texts, tmp_path / "merged", TokenizerSettings(vocab_size=128, merge_repeats=True))
    words = sorted({w for t in texts for w in normalize_text(t, merged.settings).split()})

    def repeating(tok: Tokenizer) -> list[str]:
        return [w for w in words if any(a == b for a, b in zip(tok.pieces(w), tok.pieces(w)[1:]))]

    assert {"battery", "pizza", "eggs", "coffee", "grass", "jazz"} <= set(repeating(plain))
    assert repeating(merged) == []
    assert merged.pieces("pizza") == ["\u2581pizza"] and merged.vocab_size == 128
    # every other word is spelled as before, and every text still round-trips
    others = [w for w in words if w not in repeating(plain)]
    assert sum(merged.pieces(w) == plain.pieces(w) for w in others) >= 0.9 * len(others)
    for text in texts + ["the eggs are in the grass"]:
        assert merged.decode(merged.encode(text)) == normalize_text(text, merged.settings)
    assert Tokenizer.load(tmp_path / "merged").settings.merge_repeats
    # only the grammar's words are made whole when they are named: everyday English said around a
    # small grammar must not take the merges that spell its own words
    grammar = {w for c in commands for w in c.split()}
    answers = train_tokenizer(texts, tmp_path / "answers", TokenizerSettings(vocab_size=128, merge_repeats=True),
                              answers=grammar)  # fmt: skip
    assert repeating(answers) == ["coffee", "eggs", "grass", "jazz", "pizza"]
    assert answers.pieces("battery") == ["\u2581battery"]


def test_stage_says_when_the_vocabulary_shrank(tmp_path: Path, commands: list[str]) -> None:
    from seqx.report import Collect

    recipe = _recipe(tmp_path, vocab_size=5000)
    _write_manifests(recipe, commands[:40])
    said = Collect()
    report = run_tokenize_stage(recipe, said)
    assert report.vocab_size < 5000
    assert said.warnings == [
        f"tokenizer.vocab_size: 5000 is more than the training text supports; using {report.vocab_size}, "
        "the largest that works"
    ]


def test_auto_pieces_follow_the_grammar_words() -> None:
    """`vocab_size: auto`: the power of two at or above the grammar's word count, 128 to 512, and
    the shipped grammars get what was measured best for them (demo 128, smart home 256)."""
    words = [f"w{i}" for i in range(600)]
    assert [auto_vocab_size(words[:n]) for n in (0, 12, 128, 129, 197, 256, 257, 600)] == [
        128, 128, 128, 256, 256, 256, 512, 512]
    assert auto_vocab_size(["stop", "stop"] * 200) == 128  # words, not their repeats
    assert vocab_size(load_recipe("recipes/commands.yaml")) == 128
    assert vocab_size(load_recipe("recipes/smarthome.yaml")) == 256
    assert vocab_size(load_recipe("recipes/smarthome.yaml", ["tokenizer.vocab_size=300"])) == 300


def test_auto_pieces_train_without_the_shrink_warning(tmp_path: Path, commands: list[str]) -> None:
    """A manifest corpus without a grammar gets 128 pieces at most under `auto`; when its text
    supports fewer, that is auto's business, not a setting the user chose: no warning."""
    from seqx.report import Collect

    recipe = _recipe(tmp_path, vocab_size="auto")
    _write_manifests(recipe, commands[:40])
    said = Collect()
    report = run_tokenize_stage(recipe, said)
    assert report.vocab_size <= 128 and not said.warnings
    assert Tokenizer.load(recipe.tokenizer_dir).settings.vocab_size == report.vocab_size


def test_no_transcripts_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(SeqxError, match="no non-empty training transcripts"):
        train_tokenizer(["", "  ", "!!"], tmp_path, TokenizerSettings())


def _recipe(root: Path, **tokenizer: object):
    return recipe_from_dict(
        {
            "name": "t",
            "exp_dir": str(root),
            "data": {"source": "manifest", "manifest": {"train": str(root / "src.jsonl")}},
            "tokenizer": {"vocab_size": 60, **tokenizer},
        }
    )


def _write_manifests(recipe, commands: list[str]) -> None:
    recipe.data_dir.mkdir(parents=True, exist_ok=True)
    for split, texts in (("train", commands), ("valid", commands[:3]), ("test", commands[3:6])):
        rows = [
            {"id": f"{split}{i}", "audio": f"/nowhere/{i}.wav", "text": t, "duration": 1.0, "speaker": "s"}
            for i, t in enumerate(texts)
        ]
        (recipe.data_dir / f"{split}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_stage_is_cached_and_retrains_on_changed_settings(tmp_path: Path, commands: list[str]) -> None:
    recipe = _recipe(tmp_path)
    _write_manifests(recipe, commands)
    first = run_tokenize_stage(recipe)
    assert not first.fresh and first.vocab_size == 60 and first.sentences == len(commands)
    model = recipe.tokenizer_dir / "bpe.model"
    stamp = model.stat().st_mtime_ns
    assert run_tokenize_stage(recipe).fresh and model.stat().st_mtime_ns == stamp
    assert json.loads((recipe.tokenizer_dir / "tokenizer.json").read_text())["vocab_size"] == 60
    changed = run_tokenize_stage(_recipe(tmp_path, vocab_size=80))
    assert not changed.fresh and changed.vocab_size == 80
    assert run_tokenize_stage(_recipe(tmp_path, vocab_size=80), force=True).fresh is False


def test_cli_show_prints_pieces_and_ids(tmp_path: Path, commands: list[str]) -> None:
    import importlib

    from seqx.cli.app import COMMAND_MODULES, app

    for name in COMMAND_MODULES:  # as main() does: with one command registered, typer would drop its name
        try:
            importlib.import_module(f"seqx.cli.{name}")
        except ModuleNotFoundError:
            pass

    recipe = _recipe(tmp_path)
    _write_manifests(recipe, commands)
    path = tmp_path / "r.yaml"
    path.write_text(
        f"name: t\nexp_dir: {tmp_path}\ndata:\n  source: manifest\n  manifest:\n    train: {tmp_path / 'src.jsonl'}\n"
        "tokenizer:\n  vocab_size: 60\n"
    )
    result = CliRunner().invoke(app, ["tokenize", str(path), "--show", "Find my files!", "--json"])
    assert result.exit_code == 0, result.output
    shown = json.loads(result.stdout)
    tokenizer = Tokenizer.load(recipe.tokenizer_dir)
    assert shown["text"] == "find my files"
    assert shown["ids"] == tokenizer.encode("find my files") and len(shown["pieces"]) == len(shown["ids"])
    assert "".join(shown["pieces"]).replace("\u2581", " ").strip() == "find my files"
