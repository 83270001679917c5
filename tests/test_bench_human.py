"""bench/human.py: the sets' references, grammars and raw-to-wav step, and one set trained and decoded end to end."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import soundfile as sf

from seqx.errors import SeqxError

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

human = pytest.importorskip("human")


def test_sets_cover_their_references(tmp_path: Path) -> None:
    sets = human.human_sets()
    if not all(Path(p).is_file() for s in sets.values() for p, _ in s.files):
        pytest.skip("recordings not installed: make system-deps")
    cards = sets["cards"]
    assert [r for _, r in cards.files] == [
        "ten of clubs", "four queen of clubs", "seven of clubs", "five five",
        "eight of spades four of clubs seven of hearts"]  # fmt: skip
    for s in sets.values():
        grammar = s.load_grammar()
        assert all(grammar.accepts(r) for _, r in s.files if r), s.name  # every reference is a command
    assert sets["cards"].load_grammar().count() == 1_419_348  # cards.gram itself, counted not listed
    # Asterisk's prompts: every number file against all hundred numbers; phrases of 3-8 plain words
    numbers = sets["asterisk-numbers"]
    assert len(numbers.files) == 28 and numbers.load_grammar().count() == 100
    assert dict((Path(p).name, r) for p, r in numbers.files)["14.wav"] == "fourteen"
    phrases = dict((Path(p).stem, r) for p, r in sets["asterisk-phrases"].files)
    assert phrases["vm-nomore"] == "no more messages" and phrases["dir-last"] == "letters of your party's last name"
    assert not {"spy-nbs", "beep", "conf-adminmenu", "vm-advopts"} & set(phrases)  # letters, a tone, a menu, "press 3"
    assert all(3 <= len(r.split()) <= 8 for r in phrases.values())
    # dates: Allison's digits/ files joined as Asterisk says a date, in a grammar of five slots
    dates = sets["asterisk-dates"]
    assert dates.load_grammar().count() == 7 * 12 * 31 * 12 * 12 and dates.spliced
    assert len(dates.files) == 60 and dates.files[0][1] == "tuesday may seventeenth at five forty"
    parts = dict(human.asterisk_date_parts()["date"])
    assert parts["twenty first"] == ["20", "h-1"] and parts["thirtieth"] == ["h-30"]
    assert dict(human.asterisk_date_parts()["minute"])["oh five"] == ["oh", "5"]
    path = dates.files[0][0]
    names = ["day-2", "mon-4", "h-17", "at", "5", "40"]
    joined = sum(sf.info(human.ASTERISK / "digits" / f"{n}.wav").duration for n in names)
    assert abs(sf.info(path).duration - joined) < 0.01 and sf.info(path).samplerate == 16000
    assert human.asterisk_dates() == dates.files  # seeded: the same sentences every time
    # a desktop's own recordings: KTuberling's object names
    things = {Path(p).stem: r for p, r in sets["ktuberling"].files}
    assert len(things) == 70 and sets["ktuberling"].load_grammar().count() == 70
    assert things["umbrella"] == "umbrella" and things["pizzeria_broccolli"] == "broccoli"
    assert things["egypt_palmtree"] == "palm tree" and "moon_ufo" not in things  # a name the file may spell out
    # a game's spoken messages: Warzone 2100's audio.cfg labels, read out of base.wz, at 16 kHz
    lines = {Path(p).stem: r for p, r in sets["warzone"].files}
    assert len(lines) == 209 and sets["warzone"].load_grammar().count() == 183
    assert lines["pcv357"] == "research completed" and lines["pcv420"] == "fire at will"
    assert lines["col011a"] == "cleanse and destroy" and lines["v-eloc3"] == "enemy located"
    assert not {"pcv397", "pcv384", "pcv463", "pcv371", "pcv436"} & set(lines)  # "LZ 1", NEXUS, "10 Minutes", "... to", "...:"
    assert sf.info(sets["warzone"].files[0][0]).samplerate == 16000 and not sets["warzone"].others_hear
    # two more people: KLettres' letters (named by the letter) and short words, its phonics sounds left out
    letters = {Path(p).parent.parent.name + "/" + Path(p).stem: r for p, r in sets["letters"].files}
    assert len(letters) == 52 and sets["letters"].load_grammar().count() == 26
    assert letters["en/W"] == "w" and letters["en_GB/z"] == "z" and not sets["letters"].others_hear
    words = [r for _, r in sets["klettres-words"].files]
    assert len(words) == 39 and sets["klettres-words"].load_grammar().count() == 23
    assert "sky" in words and not {"aw", "ch", "th"} & set(words)
    recipe = human.set_recipe(human.DEFAULT_RECIPE, sets["alsa"], _args(tmp_path))
    assert recipe.data.synth.grammar is not None and not recipe.data.synth.templates
    # the recipe's own voices (all four engines, flite only in test), overridable with --set
    default = human.load_recipe(human.DEFAULT_RECIPE).data.synth
    synth = recipe.data.synth
    assert (synth.engines, synth.engine_weights, synth.test_engine) == (
        default.engines, default.engine_weights, default.test_engine)  # fmt: skip
    assert synth.test_engine == "flite" and {"espeak-ng", "festival", "piper"} <= set(synth.engines)
    args = _args(tmp_path, "data.synth.engines=[espeak-ng]", "data.synth.test_engine=same")
    espeak_only = human.set_recipe(human.DEFAULT_RECIPE, sets["alsa"], args).data.synth
    assert (espeak_only.engines, espeak_only.test_engine) == (["espeak-ng"], "same")
    wav = human.as_wav(sets["goforward"].files[0][0], tmp_path)
    info = sf.info(wav)
    assert info.samplerate == 16000 and 1.0 < info.duration < 10.0


def test_real_voices_out_of_each_grammar(tmp_path: Path) -> None:
    """Each set's out-of-grammar people: the other sets' speech and the LibriVox / something.raw
    recordings, none of whose transcripts its grammar accepts, and never its own files."""
    sets = human.human_sets()
    if not all(Path(p).is_file() for s in sets.values() for p, _ in s.files):
        pytest.skip("recordings not installed: make system-deps")
    other = human.other_speech()
    assert len(other) == 6 and other[0][1] == "go somewhere and do something"
    assert other[1][1].startswith("and mister john dashwood")
    recipe = human.set_recipe(human.DEFAULT_RECIPE, sets["alsa"], _args(tmp_path))
    for name, s in sets.items():
        grammar = s.load_grammar()
        people = human.human_out_of_grammar(s, grammar, recipe)
        own = {p for p, _ in s.files}
        assert people and not own & set(people), name
        assert all(Path(p).is_file() for p in people)
        refs = {p: r for x in sets.values() for p, r in x.files} | dict(other)
        assert not any(grammar.accepts(refs[p]) for p in people), name
    # alsa's 8 speech files, goforward, the digits, the 6 others and Asterisk's phrases are out of the
    # cards grammar, and so are Asterisk's numbers said alone (a card has a suit) and KTuberling's words;
    # Noise.wav says nothing. The spliced dates are no one's people out of the grammar
    cards_people = human.human_out_of_grammar(sets["cards"], sets["cards"].load_grammar(), recipe)
    assert len(cards_people) == 8 + 1 + 1 + 6 + 140 + 28 + 70
    # --all-people: warzone's and KLettres' files too, none of which is a card
    everyone = human.human_out_of_grammar(sets["cards"], sets["cards"].load_grammar(), recipe, everyone=True)
    assert len(everyone) == len(cards_people) + 209 + 52 + 39 and set(cards_people) < set(everyone)
    # the digits speaker is a person saying numbers, as TIDIGITS names the file
    assert sets["digits"].load_grammar().parse("two nine three four zero").slots["digit_5"] == "zero"


def _args(tmp_path: Path, *sets: str):  # noqa: ANN202
    import argparse

    return argparse.Namespace(set=list(sets), kind="speech_embedding", exp_dir=tmp_path, size=0, epochs=0)


def test_a_decode_set_reaches_a_bundle_already_trained(tmp_path: Path) -> None:
    """--skip-train decodes with the bundle's stored settings; a decode.* --set overrides them (a
    number does, `auto` keeps what training chose), and nothing else changes."""
    sets = ["decode.reject_nbest_margin=0.3", "decode.reject_distance=auto", "train.epochs=3"]
    recipe = human.set_recipe(human.DEFAULT_RECIPE, human.human_sets()["alsa"], _args(tmp_path, *sets))
    stored = human.DecodeSettings(reject_margin=0.2, reject_distance=0.15, reject_nbest_margin=0.0)
    decode = human.decode_as_set(stored, recipe, sets)
    assert (decode.reject_nbest_margin, decode.reject_margin, decode.reject_distance) == (0.3, 0.2, 0.15)
    assert decode.model_copy(update={"reject_nbest_margin": 0.0}) == stored


def test_padded_copies_of_a_raw_recording_are_made_from_it_every_run(tmp_path: Path) -> None:
    """bench/human_padded.py: a second run makes the same copies, not copies of the first run's
    (goforward.raw's wav once shared the copy's name and was padded and made quieter again)."""
    import numpy as np

    human_padded = pytest.importorskip("human_padded")
    raw = human.PS_DATA / "goforward.raw"
    if not raw.is_file():
        pytest.skip("recordings not installed: make system-deps")
    files = [(str(raw), "go forward ten meters")]
    first = sf.read(human_padded.padded_copies(files, tmp_path, 1.0, None, -20.0, seed=0)[0])[0]
    second = sf.read(human_padded.padded_copies(files, tmp_path, 1.0, None, -20.0, seed=0)[0])[0]
    original = np.fromfile(raw, dtype="<i2") / 32768
    assert np.array_equal(first, second) and len(first) == len(original) + 2 * 16000
    assert abs(np.abs(first).max() / np.abs(original).max() - 0.1) < 0.01  # 20 dB quieter, once


def test_a_set_trained_and_decoded_by_every_system(tmp_path: Path) -> None:
    """run_set end to end on alsa's nine files (one is noise) with a tiny model: every system answers
    every file beside its reference, the grammar's systems answer only sentences of the grammar or
    nothing, people and synthetic sentences out of the grammar are counted, and --skip-train decodes
    the bundle already trained to the same answers."""
    import argparse

    from tiny import TINY_BASE

    hs = human.human_sets()["alsa"]
    if not all(Path(p).is_file() for p, _ in hs.files):
        pytest.skip("recordings not installed: make system-deps")
    args = argparse.Namespace(
        recipe=human.DEFAULT_RECIPE, set=[*TINY_BASE, "data.size=40", "train.epochs=2"], kind="speech_embedding",
        exp_dir=tmp_path, size=0, epochs=0, skip_train=False, recalibrate=False, all_people=False, slot_weights="",
        skip_pocketsphinx=True, restart=False,
    )
    first = human.run_set(hs, args)
    grammar = hs.load_grammar()
    assert len(first.systems) == 4 and all(s["files"] == len(hs.files) for s in first.systems.values())
    assert len(first.files) == len(hs.files) and sum(f["reference"] == "" for f in first.files) == 1  # Noise.wav
    assert all(set(f) == {"file", "reference", *first.systems} for f in first.files)
    constrained = [label for label in first.systems if "grammar" in label]
    assert len(constrained) == 2 and set(first.human_oog_answered) == set(constrained) == set(first.oog_false_accepts)
    for label in constrained:
        assert all(f[label] == "" or grammar.accepts(f[label]) for f in first.files)
        answered, people = first.human_oog_answered[label]
        assert people > 100 and 0 <= answered <= people and 0.0 <= first.oog_false_accepts[label] <= 1.0
    again = human.run_set(hs, argparse.Namespace(**{**vars(args), "skip_train": True}))
    assert again.files == first.files and again.train_seconds < first.train_seconds
    # another training seed in the same experiment: refused as `seqx train` refuses it, trained with --restart
    seeded = [*args.set, "train.seed=1"]
    with pytest.raises(SeqxError, match="--restart"):
        human.run_set(hs, argparse.Namespace(**{**vars(args), "set": seeded}))
    reseeded = human.run_set(hs, argparse.Namespace(**{**vars(args), "set": seeded, "restart": True}))
    assert len(reseeded.files) == len(first.files)
