"""The synthetic command corpus: the default grammar, distinct voices, noise, determinism, disjoint splits, cache."""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
from conftest import ESPEAK_ONLY, REPO, enumerate_sentences, hassil_file

from seqx.data.manifest import CLIPPED_SUFFIX, TIGHT_SUFFIX, read_manifest
from seqx.data.noise import NOISE_KINDS, draw_noise, mix_at_snr
from seqx.data.stage import _key, run_data_stage
from seqx.data.synth import (
    OOG_SUFFIX,
    check_say_as,
    corpus_grammar,
    plan_corpus,
    render,
    said_as,
    with_pauses,
    with_say_as,
)
from seqx.data.voices import all_voices, distinct_voices
from seqx.errors import SeqxError
from seqx.featurize.span import speech_span
from seqx.grammar import Grammar, GrammarError, is_heldout, load_grammar
from seqx.grammar.heldout import kept_words
from seqx.recipe import Recipe, RecipeError, Voice, load_recipe
from seqx.report import Collect
from seqx.tokenize.text import number_words

# oog_share 0: these tests count and read the commands (tests/test_reject.py covers the oog ones);
# the full recipe's clipped copies neither (their own test below).
# espeak-ng alone (conftest.py): the four-engine corpus has its own test (tests/test_data_engines.py)
SMALL = ["data.size=40", "data.synth.valid_voices=2", "data.synth.test_voices=2", "data.synth.oog_share=0",
         "data.synth.clipped_share=0", *ESPEAK_ONLY]  # fmt: skip
SPLITS = ("train", "valid", "test")


def _recipe(tmp_path: Path, *extra: str) -> Recipe:
    return load_recipe(REPO / "recipes/commands.yaml", [f"exp_dir={tmp_path}", *SMALL, *extra])


def _splits(recipe: Recipe) -> dict:
    return {s: read_manifest(recipe.data_dir / f"{s}.jsonl") for s in SPLITS}


def test_default_grammar_size() -> None:
    grammar = load_grammar(load_recipe(REPO / "recipes/commands.yaml"))
    commands = enumerate_sentences(grammar)
    assert len(commands) == grammar.count() >= 300
    assert 60 <= len(grammar.vocabulary()) <= 120
    assert {"set a timer for twenty five minutes", "check the battery", "show the program log"} <= commands


def test_grammar_names_unknown_slot() -> None:
    with pytest.raises(GrammarError, match="unknown slot"):
        load_recipe(REPO / "recipes/commands.yaml",
                    ["data.synth.grammar=null", "data.synth.templates=['open the {thing}']"])


def test_corpus_is_drawn_from_the_grammar_and_holds_out_by_hash() -> None:
    """Every planned transcript is a sentence of the grammar; none in train is held out; about
    HELDOUT_SHARE_IN_EVAL of valid/test are; a 10^8-sentence grammar plans as quickly."""
    for name in ("commands", "smarthome"):
        recipe = load_recipe(REPO / f"recipes/{name}.yaml", ["data.size=3000"])
        grammar = load_grammar(recipe)
        plans, heldout = plan_corpus(recipe.data)
        share, seed = recipe.data.synth.heldout_command_share, recipe.data.seed
        kept = kept_words(grammar, share, seed)  # words only held-out sentences say stay in training
        oog = [p for p in plans if p.id.endswith(OOG_SUFFIX)]  # recipe oog_share: strings it does not accept
        assert all(p.split == "train" and p.text and not grammar.accepts(p.text) for p in oog)
        said = [p for p in plans if p.text and not p.id.endswith(OOG_SUFFIX)]
        assert all(grammar.accepts(p.text) for p in said)
        assert not any(is_heldout(p.text, share, seed, kept) for p in said if p.split == "train")
        evaluated = [p for p in said if p.split != "train"]
        held = sum(is_heldout(p.text, share, seed, kept) for p in evaluated)
        assert 0.2 < held / len(evaluated) < 0.4
        assert set(heldout) == {p.text for p in evaluated if is_heldout(p.text, share, seed, kept)}
        trained = {w for p in said if p.split == "train" for w in p.text.split()}
        assert trained == set(grammar.vocabulary()) or name == "smarthome"  # every word heard in training


def test_word_balance_changes_what_train_says_and_nothing_else() -> None:
    """data.synth.word_balance reweighs train's slot values; valid and test (what users say) and
    every voice, rate and noise draw stay the ones of a uniform corpus."""
    recipe = load_recipe(REPO / "recipes/commands.yaml", ["data.size=600"])
    plain, _ = plan_corpus(recipe.data)
    synth = recipe.data.synth.model_copy(update={"word_balance": 1.0})
    balanced, _ = plan_corpus(recipe.data.model_copy(update={"synth": synth}))
    assert [p for p in balanced if p.split != "train"] == [p for p in plain if p.split != "train"]
    train = [(a, b) for a, b in zip(plain, balanced, strict=True) if a.split == "train" and a.text]
    assert all((a.voice, a.rate, a.snr_db) == (b.voice, b.rate, b.snr_db) for a, b in train)
    teens = {"thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen"}

    def count(plans) -> int:  # noqa: ANN001
        return sum(bool(teens & set(p.text.split())) for p in plans)

    assert count(b for _, b in train) > 1.5 * count(a for a, _ in train)


def test_pauses_change_what_train_voices_say_and_nothing_else() -> None:
    """data.synth.pause_share: a share of train's commands said with commas (pauses) between some
    words, their transcripts unchanged; valid and test, and every other draw, as without it. The
    engine says the commas: the same plan renders longer."""
    recipe = load_recipe(REPO / "recipes/commands.yaml", ["data.size=600", "data.synth.pause_share=0", *ESPEAK_ONLY])
    plans, _ = plan_corpus(recipe.data)
    assert with_pauses(plans, recipe.data) == plans
    on = recipe.data.model_copy(update={"synth": recipe.data.synth.model_copy(update={"pause_share": 0.5})})
    paused = with_pauses(plans, on)
    assert [p for p in paused if p.split != "train"] == [p for p in plans if p.split != "train"]
    changed = [(a, b) for a, b in zip(plans, paused, strict=True) if a != b]
    multi = [p for p in plans if p.split == "train" and len(p.text.split()) > 1 and not p.spoken]
    assert 0.35 * len(multi) < len(changed) < 0.65 * len(multi)
    for before, after in changed:
        assert after == replace(before, spoken=after.spoken) and after.text == before.text
        assert "," in after.spoken and after.spoken.replace(",", "").split() == before.text.split()
    assert with_pauses(plans, on) == paused  # seeded
    before, after = changed[0]
    plain_audio, paused_audio = (render(replace(p, snr_db=None), 16000) for p in (before, after))
    assert paused_audio.size > plain_audio.size + 0.1 * 16000


def test_say_as_tells_the_engines_another_spelling_and_keeps_the_transcript() -> None:
    """`say_as: {terminal: terminus, ...}` has every plan that says the word say the spelling (a real
    engine hears the difference), transcripts and every other plan unchanged."""
    recipe = load_recipe(REPO / "recipes/commands.yaml", ["data.size=600", "data.synth.pause_share=0", *ESPEAK_ONLY])
    plans, _ = plan_corpus(recipe.data)
    assert with_say_as(plans, recipe.data) == plans
    fix = {"terminal": "terminus", "file manager": "file-manager"}
    on = recipe.data.model_copy(update={"synth": recipe.data.synth.model_copy(update={"say_as": fix})})
    said = with_say_as(plans, on)
    changed = [(a, b) for a, b in zip(plans, said, strict=True) if a != b]
    assert changed and all(a.text == b.text and b == replace(a, spoken=b.spoken) for a, b in changed)
    names = [p for p in plans if "terminal" in p.says.split() or "file manager" in p.says]
    assert {a.id for a, _ in changed} == {p.id for p in names}  # "manager file" out of the grammar is left
    assert all("terminus" in b.spoken or "file-manager" in b.spoken for _, b in changed)
    before, after = next((a, b) for a, b in changed if "terminal" in a.says and a.split == "train")
    assert not np.array_equal(*(render(replace(p, snr_db=None), 16000) for p in (before, after)))
    assert said_as("Close, the mail. enclosed", {"close": "cloze"}) == "cloze, the mail. enclosed"
    assert said_as("a b", {"a": "b", "b": "c"}) == "b c"  # nothing replaced twice
    assert said_as("open the file, manager", {"file manager": "file-manager"}) == "open the file-manager"  # a pause
    typo = on.model_copy(update={"synth": on.synth.model_copy(update={"say_as": {"clsoe": "cloze"}})})
    with pytest.raises(SeqxError, match="data.synth.say_as: 'clsoe' is not said by the grammar"):
        check_say_as(typo, corpus_grammar(typo))
    with pytest.raises(RecipeError, match="data.synth.say_as"):
        load_recipe(REPO / "recipes/commands.yaml", ["data.synth.say_as={close: ''}"])
    assert _key(recipe) != _key(load_recipe(REPO / "recipes/commands.yaml", ["data.synth.pause_share=0", *ESPEAK_ONLY,
                                                                            "data.synth.say_as={close: cloze}"]))


def test_pauses_off_keep_the_corpus_key() -> None:
    """A corpus made before pauses existed stays fresh: with pause_share 0 its gaps setting does
    not count; with pauses on the corpus is another."""
    off = ["data.synth.pause_share=0"]
    recipe = load_recipe(REPO / "recipes/commands.yaml", off)
    gaps = load_recipe(REPO / "recipes/commands.yaml", [*off, "data.synth.pause_gaps=0.9"])
    paused = load_recipe(REPO / "recipes/commands.yaml", ["data.synth.pause_share=0.3"])
    assert _key(recipe) == _key(gaps) != _key(paused)


def test_out_of_grammar_share_leaves_the_rest_of_the_corpus_alone() -> None:
    """data.synth.oog_share adds train utterances of out-of-grammar strings, from their own
    random stream: every other plan is the one drawn without them."""
    recipe = load_recipe(REPO / "recipes/commands.yaml", ["data.size=600", "data.synth.oog_share=0",
                                                          "data.synth.clipped_share=0"])  # fmt: skip
    plain, _ = plan_corpus(recipe.data)
    more, _ = plan_corpus(recipe.model_copy(update={"data": recipe.data.model_copy(
        update={"synth": recipe.data.synth.model_copy(update={"oog_share": 0.2})})}).data)  # fmt: skip
    extra = [p for p in more if p.id.endswith(OOG_SUFFIX)]
    assert [p for p in more if not p.id.endswith(OOG_SUFFIX)] == plain
    commands = sum(p.split == "train" and bool(p.text) for p in plain)
    assert len(extra) == round(0.2 * commands) and len({p.text for p in extra}) == len(extra)


def test_other_word_share_says_words_the_grammar_does_not_use() -> None:
    """data.synth.oog_other_share: that share of the out-of-grammar strings is everyday English the
    grammar does not use (seqx/data/other_words.txt), never a command; the grammar-word strings are
    the first of those drawn without it, and the commands the same."""
    from seqx.decode.negatives import other_words

    recipe = load_recipe(REPO / "recipes/commands.yaml", ["data.size=600", "data.synth.oog_share=0.2"])
    grammar = load_grammar(recipe)
    assert grammar is not None
    plain, _ = plan_corpus(recipe.data)
    synth = recipe.data.synth.model_copy(update={"oog_other_share": 0.5})
    more, _ = plan_corpus(recipe.data.model_copy(update={"synth": synth}))
    oog = [p for p in more if p.id.endswith(OOG_SUFFIX)]
    assert [p for p in more if not p.id.endswith(OOG_SUFFIX)] == [p for p in plain if not p.id.endswith(OOG_SUFFIX)]
    assert len(oog) == len([p for p in plain if p.id.endswith(OOG_SUFFIX)])
    pool, vocab = set(other_words(grammar)), set(grammar.vocabulary())
    assert len(pool) > 500 and not pool & vocab
    others = round(0.5 * len(oog))
    plain_oog = [p.text for p in plain if p.id.endswith(OOG_SUFFIX)]
    assert [p.text for p in oog[: len(oog) - others]] == plain_oog[: len(oog) - others]
    other = [p.text for p in oog[len(oog) - others :]]
    words = [w for t in other for w in t.split()]
    assert sum(w in pool for w in words) > 0.7 * len(words) and set(words) <= pool | vocab
    assert not any(grammar.accepts(t) for t in other) and len(set(other)) > 0.9 * len(other)


def test_auto_other_word_share_follows_the_grammars_size() -> None:
    """oog_other_share `auto`: a grammar of a handful of words gets AUTO_OTHER_SHARE of everyday
    English among its out-of-grammar strings, a larger one none, and its corpus key is the one of
    the number it means (a corpus made before `auto` stays fresh)."""
    from seqx.data.stage import _key
    from seqx.data.synth import other_word_share
    from seqx.decode.negatives import other_words
    from seqx.recipe import AUTO_OTHER_SHARE, SMALL_GRAMMAR_WORDS

    commands = load_recipe(REPO / "recipes/commands.yaml", ["data.size=400"])
    assert commands.data.synth.oog_other_share == "auto"
    grammar = load_grammar(commands)
    assert grammar is not None and len(grammar.vocabulary()) > SMALL_GRAMMAR_WORDS
    assert other_word_share(commands.data.synth, grammar) == 0.0
    zero = load_recipe(REPO / "recipes/commands.yaml", ["data.size=400", "data.synth.oog_other_share=0"])
    assert _key(commands) == _key(zero)  # a corpus made before `auto` stays fresh
    grammar_yaml = ("{intents: {channel: ['{position} {side}']}, "
                    "slots: {position: [front, rear, side], side: [left, right, center]}}")  # fmt: skip
    channels = ["data.size=400", f"data.synth.grammar={grammar_yaml}"]
    small = load_recipe(REPO / "recipes/commands.yaml", channels)
    small_grammar = load_grammar(small)
    assert small_grammar is not None and len(small_grammar.vocabulary()) == 6
    assert other_word_share(small.data.synth, small_grammar) == AUTO_OTHER_SHARE
    # the numbers zero to ninety nine (28 words) are still a small grammar; the demo's 105 words are not
    values = ", ".join(number_words(i) for i in range(100))
    numbers = "{intents: {number: ['{n}']}, slots: {n: [" + values + "]}}"
    hundred = load_recipe(REPO / "recipes/commands.yaml", ["data.size=400", f"data.synth.grammar={numbers}"])
    hundred_grammar = load_grammar(hundred)
    assert hundred_grammar is not None and len(hundred_grammar.vocabulary()) == 28
    assert other_word_share(hundred.data.synth, hundred_grammar) == AUTO_OTHER_SHARE
    fixed = load_recipe(REPO / "recipes/commands.yaml", [*channels, f"data.synth.oog_other_share={AUTO_OTHER_SHARE}"])
    none = load_recipe(REPO / "recipes/commands.yaml", [*channels, "data.synth.oog_other_share=0"])
    assert _key(small) == _key(fixed) != _key(none)
    plans, _ = plan_corpus(small.data)
    oog = [p.text for p in plans if p.id.endswith(OOG_SUFFIX)]
    copies = (OOG_SUFFIX, CLIPPED_SUFFIX, TIGHT_SUFFIX)
    commands = sum(p.split == "train" and bool(p.text) and not p.id.endswith(copies) for p in plans)
    pool = set(other_words(small_grammar))
    # strings of its own six words first, the ones made without everyday English (fewer), then the everyday
    # ones (a fifth of whose words are the grammar's own: a short one may be all its own words)
    count = round(AUTO_OTHER_SHARE * round(small.data.synth.oog_share * commands))
    everyday = oog[len(oog) - count :]
    assert count > 0 and sum(any(w in pool for w in t.split()) for t in everyday) > 0.8 * count
    assert not any(w in pool for t in oog[: len(oog) - count] for w in t.split())
    own = [p.text for p in plan_corpus(none.data)[0] if p.id.endswith(OOG_SUFFIX)]
    assert len(own) == len(oog) and not any(small_grammar.accepts(t) for t in oog)
    assert oog == own[: len(oog) - len(everyday)] + everyday


def test_a_corpus_whose_out_of_grammar_strings_changed_gets_a_new_key(monkeypatch: pytest.MonkeyPatch) -> None:
    """Since a strategy that runs dry gives its turn away, a small grammar's out-of-grammar strings
    are others than before: its corpus key says so (an old corpus of it is made again), while the
    demo's, whose strings are the same, keeps its key (a corpus made before stays fresh)."""
    from seqx.data.stage import _key
    from seqx.data.synth import oog_strings_changed

    commands = load_recipe(REPO / "recipes/commands.yaml", ["data.size=400"])
    assert not oog_strings_changed(commands.data, load_grammar(commands))
    grammar_yaml = ("{intents: {channel: ['{position} {side}']}, "
                    "slots: {position: [front, rear, side], side: [left, right, center]}}")  # fmt: skip
    small = load_recipe(REPO / "recipes/commands.yaml", ["data.size=400", f"data.synth.grammar={grammar_yaml}"])
    assert oog_strings_changed(small.data, load_grammar(small))
    without = load_recipe(REPO / "recipes/commands.yaml", ["data.size=400", f"data.synth.grammar={grammar_yaml}",
                                                           "data.synth.oog_share=0"])  # fmt: skip
    assert not oog_strings_changed(without.data, load_grammar(without))
    keys = _key(small), _key(commands)
    monkeypatch.setattr("seqx.data.stage.oog_strings_changed", lambda settings, grammar: False)  # the key as it was
    assert _key(small) != keys[0] and _key(commands) == keys[1]


def test_every_default_voice_sounds_different() -> None:
    """espeak-ng speaks an unknown variant with the plain voice; such twins would leak a test voice into train."""
    voices = all_voices(load_recipe(REPO / "recipes/commands.yaml").data.synth)
    kept, dropped = distinct_voices(voices, workers=2)
    assert len(kept) == len(voices) >= 200, dropped[:3]
    twins = [
        Voice(language="en-us"),
        Voice(language="en-us", variant="nosuchvariant"),
        Voice(language="en-us", variant="m3"),
    ]
    kept, dropped = distinct_voices(twins, workers=2)
    assert kept == [twins[0], twins[2]]
    assert dropped == [("espeak:en-us+nosuchvariant", "sounds the same as espeak:en-us")]


@pytest.mark.parametrize("kind", NOISE_KINDS)
def test_noise_is_unit_rms_and_mixes_at_the_snr(kind: str) -> None:
    rng = np.random.default_rng(0)
    noise = draw_noise(kind, 16001, 16000, rng)
    assert noise.dtype == np.float32 and noise.shape == (16001,)
    assert np.sqrt(np.mean(noise**2)) == pytest.approx(1.0, rel=1e-3)
    speech = (0.3 * np.sin(np.arange(16001) * 0.1)).astype(np.float32)
    mixed = mix_at_snr(speech, noise, 12.0)
    snr = 10 * np.log10(np.mean(speech**2) / np.mean((mixed - speech) ** 2))
    assert snr == pytest.approx(12.0, abs=0.2)


def test_synth_is_deterministic_and_splits_are_disjoint(tmp_path: Path) -> None:
    first, second = _recipe(tmp_path / "a"), _recipe(tmp_path / "b", "data.workers=1")  # workers do not matter
    report = run_data_stage(first)
    run_data_stage(second)
    assert sum(report.counts.values()) == 40 and not report.skipped
    for split in SPLITS:
        a, b = (r.data_dir / f"{split}.jsonl" for r in (first, second))
        assert a.read_bytes() == b.read_bytes()
        for utt in read_manifest(a):
            other = Path(utt.audio.replace(str(first.data_dir), str(second.data_dir)))
            assert Path(utt.audio).read_bytes() == other.read_bytes()
    splits = _splits(first)
    speakers = {s: {u.speaker for u in utts} for s, utts in splits.items()}
    assert not speakers["test"] & (speakers["train"] | speakers["valid"])
    assert not speakers["valid"] & speakers["train"]
    heldout = set((first.data_dir / "heldout_commands.txt").read_text().splitlines())
    assert heldout and not heldout & {u.text for u in splits["train"]}
    assert heldout & {u.text for u in splits["valid"] + splits["test"]}  # evaluated, not only withheld


def test_synth_audio_is_speech_and_empty_ones_are_quiet(tmp_path: Path) -> None:
    recipe = _recipe(tmp_path, "data.synth.empty_share=0.3")
    run_data_stage(recipe)
    utts = read_manifest(recipe.data_dir / "train.jsonl")
    loudness = {True: [], False: []}
    for utt in utts:
        audio, rate = sf.read(utt.audio)
        assert rate == 16000 and audio.ndim == 1 and sf.info(utt.audio).subtype == "PCM_16"
        assert abs(len(audio) / rate - utt.duration) < 1e-3 and 0.5 < utt.duration < 6
        # the loudest 100 ms: a command said with pauses (data.synth.pause_share) is quieter on average
        frames = audio[: len(audio) // 1600 * 1600].reshape(-1, 1600)
        loudness[bool(utt.text)].append(np.sqrt(np.mean(frames**2, axis=1)).max())
    assert loudness[True] and loudness[False]
    assert max(loudness[False]) < min(loudness[True])


def test_flite_test_voices_and_max_duration(tmp_path: Path) -> None:
    recipe = _recipe(tmp_path, "data.size=24", "data.synth.test_engine=flite", "data.max_duration=2.5")
    report = run_data_stage(recipe)
    splits = _splits(recipe)
    # the unheard engine (and held-out voices of the engine trained on: tests/test_data_engines.py)
    assert "flite" in {u.speaker.split(":")[0] for u in splits["test"]}
    assert {u.speaker.split(":")[0] for u in splits["train"] + splits["valid"]} == {"espeak"}
    assert report.skipped and all("data.max_duration" in why for _, why in report.skipped)
    assert max(u.duration for s in splits.values() for u in s) <= 2.5


def test_pinned_test_speaker_with_both_engines_in_training(tmp_path: Path) -> None:
    few = ["data.synth.accents=[en-us]", "data.synth.variants=['', m1, f1]", "data.synth.valid_voices=1"]
    both = [*few, "data.synth.engines=[espeak-ng, flite]"]
    recipe = _recipe(tmp_path, *both, "data.synth.test_speakers=[flite:slt]")
    run_data_stage(recipe)
    splits = _splits(recipe)
    assert {u.speaker for u in splits["test"]} == {"flite:slt"}
    heard = {u.speaker for u in splits["train"] + splits["valid"]}
    assert "flite:slt" not in heard and {s.split(":")[0] for s in heard} == {"espeak", "flite"}
    with pytest.raises(SeqxError, match=r"test_speakers: 'flite:sIt'.*did you mean flite:slt"):
        run_data_stage(_recipe(tmp_path, *both, "data.synth.test_speakers=[flite:sIt]"))


def test_engine_weights_set_each_engines_share_of_utterances() -> None:
    both = ["data.size=4000", "data.synth.engines=[espeak-ng, flite]", "data.synth.test_speakers=[flite:slt]",
            "data.synth.engine_weights={}"]  # fmt: skip

    def flite_share(*extra: str) -> float:
        plans, _ = plan_corpus(load_recipe(REPO / "recipes/commands.yaml", [*both, *extra]).data)
        train = [p for p in plans if p.split == "train"]
        return sum(p.voice.engine == "flite" for p in train) / len(train)

    assert flite_share() < 0.05  # 3 flite voices among a few hundred: almost never heard
    assert 0.22 < flite_share("data.synth.engine_weights={espeak-ng: 3, flite: 1}") < 0.28
    zero_weight = r"data\.synth\.engine_weights\.flite: input should be greater than 0 \(got 0\)"
    with pytest.raises(RecipeError, match=zero_weight):
        load_recipe(REPO / "recipes/commands.yaml", [*both, "data.synth.engine_weights={flite: 0}"])
    with pytest.raises(RecipeError, match=r"data\.synth\.engine_weights\.festivl: input should be 'espeak-ng', "):
        load_recipe(REPO / "recipes/commands.yaml", [*both, "data.synth.engine_weights={festivl: 1}"])


def test_cache_is_a_no_op_and_settings_changes_redo(tmp_path: Path) -> None:
    recipe = _recipe(tmp_path)
    assert not run_data_stage(recipe).fresh
    stamp = (recipe.data_dir / "train.jsonl").stat().st_mtime_ns
    again = run_data_stage(_recipe(tmp_path, "data.workers=1"))  # same corpus for any number of workers
    assert again.fresh and again.counts == run_data_stage(recipe).counts
    assert (recipe.data_dir / "train.jsonl").stat().st_mtime_ns == stamp
    reporter = Collect()
    assert not run_data_stage(_recipe(tmp_path, "data.seed=1"), reporter).fresh
    assert not run_data_stage(recipe, force=True).fresh


def test_clipped_start_commands_lose_their_start_and_their_transcript() -> None:
    """`clipped_share`: copies of commands, cut off at the start, are planned on top of the corpus
    with an empty transcript, and rendered (real espeak-ng speech) without the first part of what
    they say and with no lead-in: the recording begins mid-speech. Each comes with a whole copy
    that has no lead-in either, so "no lead-in" alone does not mean "clipped"."""
    recipe = REPO / "recipes/commands.yaml"
    espeak = "data.synth.engines=[espeak-ng]"  # the speech this test measures (the recipe's mix draws festival first)
    base, _ = plan_corpus(load_recipe(recipe, ["data.size=2000", "data.synth.oog_share=0", espeak,
                                               "data.synth.clipped_share=0"]).data)  # fmt: skip
    plans, _ = plan_corpus(load_recipe(recipe, ["data.size=2000", "data.synth.oog_share=0", espeak,
                                                "data.synth.clipped_share=0.2"]).data)  # fmt: skip
    copies = [p for p in plans if p.id.endswith(("-clipped", "-tight"))]
    assert [p for p in plans if p not in copies] == base  # every other utterance as it was
    assert not any(p.clip_start or p.spoken for p in base)
    by_id = {p.id: p for p in base}
    for split in ("train", "valid", "test"):
        commands = sum(1 for p in base if p.split == split and p.text)
        assert sum(1 for p in copies if p.split == split) == 2 * round(0.2 * commands)
    clipped = [p for p in copies if p.id.endswith("-clipped")]
    for p in copies:
        source = by_id[p.id.removesuffix("-clipped").removesuffix("-tight")]
        assert p.voice == source.voice and p.split == source.split and p.seed != source.seed and p.lead_s == 0.0
        if p in clipped:
            assert p.text == "" and p.spoken == source.text and 0.25 <= p.clip_start <= 0.6
            assert by_id.get(source.id) and any(q.id == source.id + "-tight" for q in copies)
        else:
            assert p.text == source.text and not p.spoken and not p.clip_start
    assert len({p.id for p in plans}) == len(plans)

    plan = replace(clipped[0], snr_db=None)  # no noise: the speech alone decides the lengths
    whole, cut = render(replace(plan, clip_start=0.0), 16000), render(plan, 16000)
    lead, hop = int(plan.lead_s * 16000), 160
    first, last = speech_span(whole, 16000)
    expected = (first - lead) + plan.clip_start * (last - first)  # silence before the speech, then the share
    assert abs((whole.size - cut.size) - expected) <= 2 * hop
    assert np.sqrt(np.mean(cut**2)) > 0.01  # what is left is still speech, not silence


def test_lead_and_trail_ranges_set_the_padding_and_nothing_else() -> None:
    """`lead_s`/`trail_s`: the silence around the speech is drawn from the recipe's range, with
    the same draws as before, so only the padding of a corpus changes (and the default is the
    corpus of earlier versions)."""
    recipe = REPO / "recipes/commands.yaml"
    base, _ = plan_corpus(load_recipe(recipe, ["data.size=600"]).data)
    assert base == plan_corpus(load_recipe(recipe, ["data.size=600", "data.synth.lead_s=[0.05, 0.4]"]).data)[0]
    tight, _ = plan_corpus(load_recipe(recipe, ["data.size=600", "data.synth.lead_s=[0, 0.1]"]).data)
    assert all(0.0 <= p.lead_s <= 0.1 for p in tight) and min(p.lead_s for p in tight) < 0.01
    assert [replace(p, lead_s=0.0) for p in tight] == [replace(p, lead_s=0.0) for p in base]

    plan = replace(next(p for p in tight if p.text), snr_db=None, lead_s=0.0, trail_s=0.0)
    first, _ = speech_span(render(plan, 16000), 16000)
    padded = replace(plan, lead_s=0.3)
    assert speech_span(render(padded, 16000), 16000)[0] - first == int(0.3 * 16000)
    with pytest.raises(RecipeError, match=r"data\.synth\.lead_s: low end 0\.3 is above high end 0\.1"):
        load_recipe(recipe, ["data.synth.lead_s=[0.3, 0.1]"])
    with pytest.raises(RecipeError, match=r"data\.synth\.trail_s\.1: .*less than or equal to 5"):
        load_recipe(recipe, ["data.synth.trail_s=[0.1, 9]"])


def test_a_grammar_file_is_part_of_the_cache_key(tmp_path: Path) -> None:
    """`grammar: FILE`: editing the file redoes the corpus, as a changed setting would."""
    grammar = tmp_path / "g.txt"
    grammar.write_text("lights on\nlights off\n(open | close) the door\n")
    recipe = _recipe(
        tmp_path, "data.size=12", f"data.synth.grammar={grammar}", "data.synth.heldout_command_share=0"
    )
    assert not run_data_stage(recipe).fresh and run_data_stage(recipe).fresh
    said = {u.text for s in _splits(recipe).values() for u in s} - {""}
    assert said <= {"lights on", "lights off", "open the door", "close the door"}
    grammar.write_text("lights on\nlights off\n")
    assert not run_data_stage(recipe).fresh


def test_one_word_commands_hear_one_other_word_alone() -> None:
    """A grammar of one-word commands gets everyday English under `auto` whatever its size (its own
    words strung together are never one word long), and about half of everyday-English strings are
    as long as a command: mostly one word for it, 1 to 8 for a grammar of longer commands."""
    from seqx.data.synth import one_word_share, other_word_share
    from seqx.decode.negatives import other_word_sentences, other_words
    from seqx.recipe import AUTO_OTHER_SHARE, SMALL_GRAMMAR_WORDS

    names = [f"thing{chr(97 + i // 26)}{chr(97 + i % 26)}" for i in range(40)]  # 40 made-up one-word names
    one_word = "{intents: {pick: ['{name}']}, slots: {name: [" + ", ".join(names) + "]}}"
    recipe = load_recipe(REPO / "recipes/commands.yaml", ["data.size=400", f"data.synth.grammar={one_word}"])
    grammar = load_grammar(recipe)
    assert grammar is not None and len(grammar.vocabulary()) == 40 > SMALL_GRAMMAR_WORDS
    assert one_word_share(grammar) == 1.0
    assert other_word_share(recipe.data.synth, grammar) == AUTO_OTHER_SHARE
    two_words = "{intents: {pick: ['take {name}']}, slots: {name: [" + ", ".join(names) + "]}}"
    longer = load_recipe(REPO / "recipes/commands.yaml", ["data.size=400", f"data.synth.grammar={two_words}"])
    longer_grammar = load_grammar(longer)
    assert longer_grammar is not None and one_word_share(longer_grammar) == 0.0
    assert other_word_share(longer.data.synth, longer_grammar) == 0.0

    def lengths(g: Grammar) -> list[int]:
        said = other_word_sentences(g, 400, np.random.default_rng(0))
        assert len(said) == 400 and not any(g.accepts(t) for _, t in said)
        assert {w for _, t in said for w in t.split()} <= set(other_words(g)) | set(g.vocabulary())
        return [len(t.split()) for _, t in said]

    alone = lengths(grammar)
    assert 0.45 < alone.count(1) / len(alone) < 0.7  # half command-long (one word) + an eighth of the rest
    assert max(alone) == 8
    paired = lengths(longer_grammar)
    assert paired.count(1) / len(paired) < 0.15 and 0.45 < paired.count(2) / len(paired) < 0.7


def test_words_training_seldom_says_are_warned_of_before_synthesis(tmp_path: Path) -> None:
    """A slot of 40 songs in 12 utterances: most songs are in no training command or one, which the user
    hears before the corpus is rendered, with the slot they are in."""
    from seqx.data.coverage import seldom_written, written_counts
    from seqx.report import Collect

    songs = [f"song{chr(97 + i // 26)}{chr(97 + i % 26)}" for i in range(40)]
    grammar = tmp_path / "g.yaml"
    grammar.write_text(f"intents:\n  play: ['play {{song}}', stop]\nslots:\n  song: [{', '.join(songs)}]\n")
    reporter = Collect()
    report = run_data_stage(_recipe(tmp_path, "data.size=12", f"data.synth.grammar={grammar}"), reporter)
    written = Counter(w for u in read_manifest(Path(report.out_dir) / "train.jsonl") for w in set(u.text.split()))
    rare = [w for w in ["play", "stop", *songs] if written[w] < 3]
    assert len(rare) > 35 and sum(written[w] == 0 for w in rare) > 25  # about 10 commands, half of them "stop"
    [warning] = [w for w in reporter.warnings if "training commands" in w]
    never = sum(written[w] == 0 for w in rare)
    assert warning.startswith(f"data.synth: {len(rare)} of the grammar's 42 words are in fewer than 3 training "
                              f"commands, {never} in none")  # fmt: skip
    assert f"slot song: {sum(s in rare for s in songs)} of its 40 values" in warning and "(now 12)" in warning
    heard = sum(written[s] for s in songs) / 40  # each value one word: a value is heard as often as its word
    assert f"raise data.size to about {math.ceil(12 * 6 / heard / 1000) * 1000:,} (now 12)" in warning
    g = corpus_grammar(_recipe(tmp_path, f"data.synth.grammar={grammar}").data)
    # counted by transcripts: "play songab songab" is one command that writes it
    said = ["play songaa", "stop", *[f"play {s} {s}" for s in songs[1:]] * 3]
    assert seldom_written(g, written_counts(said)) == {"songaa": 1, "stop": 1}


def test_words_are_counted_as_said(tmp_path: Path) -> None:
    """Home Assistant's `{volume}[%| percent]` writes "1percent" ... "100percent": each written word is in few
    commands, but the model hears "percent" and a number's words in every one; the warning asked for 16,000
    utterances of a grammar that 3,000 cover, before 2026-12-03."""
    from seqx.data.coverage import seldom_warning
    from seqx.grammar import grammar_from_file

    grammar = grammar_from_file(hassil_file(tmp_path, {"HassSetVolume": ["set [the] volume to {volume}[%| percent]"]},
                                            {"volume": {"range": {"from": 1, "to": 20}}}))
    rng = np.random.default_rng(0)
    drawn = [grammar.sample(rng).text for _ in range(200)]
    assert any(w.endswith("percent") and w[0].isdigit() for text in drawn for w in text.split())  # "7percent"
    assert seldom_warning(grammar, drawn, 200) is None
    warning = seldom_warning(grammar, drawn[:4], 4)  # too few: the words as said are named
    assert warning is not None and "percent'" not in warning and "%" not in warning
    assert "of the grammar's 25 words" in warning  # set the volume to percent + one ... twenty


def test_a_sentence_two_intents_say_is_warned_of_before_synthesis(tmp_path: Path) -> None:
    """The user who never runs `seqx grammar --show` hears it from `seqx train`: the timer's "stop" is
    parsed as media's, so the timer intent never answers it."""
    from seqx.report import Collect

    grammar = tmp_path / "g.yaml"
    grammar.write_text("intents:\n  media: [stop, play the music]\n  timer: [stop, cancel the timer]\n")
    reporter = Collect()
    run_data_stage(_recipe(tmp_path, "data.size=12", f"data.synth.grammar={grammar}"), reporter)
    said = "intents media and timer both say 'stop': it is always answered media (say it in one intent only)"
    assert reporter.warnings[:1] == [said]
    grammar.write_text("intents:\n  alarm: ['wake me at {hour} am', stop]\nslots:\n  hour: ['6', '7']\n")
    reporter = Collect()
    run_data_stage(_recipe(tmp_path, "data.size=12", f"data.synth.grammar={grammar}"), reporter)
    assert any("'am' is said as the verb" in w for w in reporter.warnings[:1])  # before synthesis, as the above
