"""Real human recordings that Debian ships, against a seqx model trained on seqx's own voices only.

Usage:
    python bench/human.py [--sets cards,goforward,alsa,digits,asterisk-numbers,asterisk-dates,asterisk-alarms,
                          asterisk-phrases,ktuberling,warzone,letters,klettres-words] [--kind speech_embedding|fbank|...]
                          [--epochs N] [--size N] [--exp-dir /tmp/seqx-human] [--set KEY=VALUE]
                          [--slot-weights W,...] [--restart] [--json]

For each set a recipe is built from recipes/commands.yaml (the cpu profile's model size on a
CPU) with the set's grammar (Debian's JSGF file itself where it ships one), a corpus is synthesized
with the recipe's own voices (data.synth.engines, engine_weights and test_engine: today all four
engines, flite heard only in test; e.g. --set "data.synth.engines=[espeak-ng]" for espeak-ng alone),
a model is trained, and the human files are transcribed (beam + CTC, free: no grammar
constraint, and constrained by the set's grammar, with the bundle's rejection of what it does not
believe and without it: PocketSphinx's JSGF mode rejects nothing, so that column is the like-for-like
comparison, and the first is what a user gets; each grammar-constrained system, PocketSphinx too, also
hears the set's out-of-grammar sentences, spoken by the valid voices, and the share it answers with a
command is reported); with `--set train.slot_weight=W` the model has
intent/slot heads and a fourth run reranks the constrained beam by them, at decode.slot_weight
or 1). Beside it
PocketSphinx decodes the same files constrained by the set's own JSGF grammar (the file Debian
ships; alsa has none, so the one made from the templates). The recordings are only ever
decoded, never trained on. Everything is written under --exp-dir, nothing into the repo.

Sets (files, reference transcripts):
  cards      pocketsphinx-testdata: cards/001-005.wav, cards.transcription, cards.gram
  goforward  pocketsphinx-testdata: goforward.raw (16 kHz s16), "go forward ten meters", goforward.gram
  alsa       alsa-utils: /usr/share/sounds/alsa/{Front,Rear,Side}_{Left,Right,Center}.wav, Noise.wav = ""
  digits     pocketsphinx-testdata: tidigits/dhd.2934z.raw (16 kHz s16; TIDIGITS names a file by what it
             says: "two nine three four zero"), strings of one to seven digits (zero, oh, one ... nine)
  asterisk-numbers   asterisk-core-sounds-en-wav: a person (Allison Smith, the Asterisk PBX's voice; 8 kHz,
             the telephone band) saying 0-20, 30, 40 ... 90 one at a time (digits/N.wav), against a grammar
             of every number from zero to ninety nine: "fourteen" / "forty" as a person says them
  asterisk-dates     the same voice's digits/ files joined back to back as Asterisk says a date
             ("monday march twenty first at nine fifteen": day-1, mon-2, 20, h-1, at, 9, 15), 60
             sentences drawn (seeded) from a grammar of five slots and 374,976 sentences: many slots at
             once, as a real command set has them; a splice, not one breath (no coarticulation, pauses
             between words), so it is not counted among the other sets' people out of the grammar
  asterisk-alarms    the same splice of alarm times as a grammar writes them, "7:05 AM" (7, oh, 5, a-m): her
             "a m" and "p m" against an alarm grammar of 288 times ("wake me at {time} {half}", half: AM, PM)
  asterisk-phrases   the same voice's prompts of 3 to 8 words (vm-nomore.wav "no more messages", ...;
             transcripts from asterisk-core-sounds-en's core-sounds-en.txt.gz), a phrase list of
             every one of them: many words, one speaker, a telephone channel
  ktuberling   ktuberling-data: KDE's stamp toy's English object names, one word a file (sounds/en/*.ogg,
             named in en.soundtheme: "umbrella", "pineapple", "sunglasses", ...), a phrase list of 70 words
  warzone      warzone2100-data: the game's spoken messages (base.wz audio/, 11.025 kHz Vorbis; the line each
             says is its label in audio/audio.cfg: "research completed", "hold position", "enemy located"
             by three pilots), 209 files of several voices, a phrase list of 183 lines whose words repeat
             across them; lines with letters, numbers or names (LZ, NEXUS, "10 minutes") left out. Not
             among the other sets' people out of the grammar (added after their figures)
  letters      klettres-data: KDE's alphabet tutor, two more people (en: American, en_GB: British) saying the
             26 letters' names (alpha/*.ogg, named by the letter), one letter a command against all 26
  klettres-words   the same two people's short words (syllab/*.ogg: "car", "jet", "sky"; the sounds aw, ch, th
             left out), a phrase list of 23 one-syllable words. Neither set is among the other sets' people
             out of the grammar

Real voices out of the grammar: each grammar-constrained system also hears the other sets'
recordings (not the spliced dates, nor warzone's and KLettres' unless --all-people),
pocketsphinx-testdata's five LibriVox sentences (read speech, librivox/transcription) and
something.raw ("go somewhere and do something"), every one whose transcript the set's grammar does
not hold; the share answered with a command is a false accept on a person, the one users hate.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import soundfile as sf
import torch
import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from peer_pocketsphinx import pocketsphinx_decoder, run_pocketsphinx  # noqa: E402

from seqx.decode.metrics import pool, utterance_errors  # noqa: E402
from seqx.grammar.jsgf import grammar_to_jsgf  # noqa: E402
from seqx.grammar.load import grammar_from_dict, grammar_from_file  # noqa: E402
from seqx.grammar.model import Grammar  # noqa: E402
from seqx.recipe import DEFAULT_RECIPE, DecodeSettings, Recipe, load_recipe, recipe_from_dict  # noqa: E402
from seqx.tokenize.text import normalize_text  # noqa: E402

PS_DATA = Path("/usr/share/pocketsphinx/test/data")
MAX_DIGITS = 7  # TIDIGITS' longest strings
ALSA = Path("/usr/share/sounds/alsa")
ASTERISK = Path("/usr/share/asterisk/sounds/en_US_f_Allison")
ASTERISK_TRANSCRIPTS = Path("/usr/share/doc/asterisk-core-sounds-en/core-sounds-en.txt.gz")
KTUBERLING = Path("/usr/share/ktuberling/sounds")
# KTuberling's sound names that are not the word said: joined words, spellings; "ufo" is left out
# (said as a word or as three letters: the name does not tell)
KTUBERLING_WORDS = {"palmtree": "palm tree", "fallingstar": "falling star", "sphynx": "sphinx",
                    "brocolli": "broccoli", "ufo": None}  # fmt: skip
ASTERISK_NUMBERS = [*range(21), 30, 40, 50, 60, 70, 80, 90]  # the digits/N.wav files there are
ASTERISK_PHRASE_WORDS = (3, 8)  # prompts this long: commands' length, not menus read out
ASTERISK_DATES = 60  # spliced date-and-time sentences drawn for the asterisk-dates set
DAYS = ["sunday", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday"]  # digits/day-N
MONTHS = ["january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
          "november", "december"]  # fmt: skip
ORDINALS = ["first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth", "tenth",
            "eleventh", "twelfth", "thirteenth", "fourteenth", "fifteenth", "sixteenth", "seventeenth",
            "eighteenth", "nineteenth", "twentieth"]  # fmt: skip


@dataclass
class HumanSet:
    name: str
    files: list[tuple[str, str]]  # (audio path, reference)
    grammar: dict[str, Any]  # the recipe's data.synth.grammar: {file: ...} or {intents, slots}
    jsgf_file: Path | None  # the grammar Debian ships beside the recordings, for PocketSphinx
    package: str  # the Debian package that installs it
    # made by joining recordings (asterisk-dates): not counted among the other sets' people out of
    # their grammar, whose counts stay comparable with earlier runs
    spliced: bool = False
    # heard by the other sets as people out of their grammar; off for a set added after their
    # figures were written (warzone), so the counts stay comparable with them
    others_hear: bool = True

    def load_grammar(self) -> Grammar:
        if "file" in self.grammar:
            return grammar_from_file(self.grammar["file"])
        return grammar_from_dict(self.grammar, source=f"human set {self.name}", name=self.name)


def human_sets() -> dict[str, HumanSet]:
    """Each set with the grammar its recordings were made for: Debian's own JSGF where it ships
    one (seqx imports it: cards.gram has 1.4 million sentences, sampled as paths, never listed),
    and for alsa's channel names a two-slot grammar."""
    cards_ref = {}
    transcription = PS_DATA / "cards" / "cards.transcription"
    if transcription.is_file():
        for line in transcription.read_text().splitlines():
            m = re.match(r"\s*<s>(.*)</s>\s*\((\w+)\)", line)
            if m:
                cards_ref[m.group(2)] = " ".join(m.group(1).split())
    positions = {"Front": ["Left", "Right", "Center"], "Rear": ["Left", "Right", "Center"], "Side": ["Left", "Right"]}
    alsa_files = [(str(ALSA / f"{p}_{s}.wav"), f"{p} {s}".lower()) for p, sides in positions.items() for s in sides]
    return {
        "cards": HumanSet(
            "cards",
            [(str(PS_DATA / "cards" / f"{i}.wav"), ref) for i, ref in sorted(cards_ref.items())],
            {"file": str(PS_DATA / "cards" / "cards.gram")}, PS_DATA / "cards" / "cards.gram", "pocketsphinx-testdata",
        ),  # fmt: skip
        "goforward": HumanSet(
            "goforward",
            [(str(PS_DATA / "goforward.raw"), "go forward ten meters")],
            {"file": str(PS_DATA / "goforward.gram")}, PS_DATA / "goforward.gram", "pocketsphinx-testdata",
        ),  # fmt: skip
        "alsa": HumanSet(
            "alsa",
            alsa_files + [(str(ALSA / "Noise.wav"), "")],
            {"intents": {"channel": ["{position} {side}"]},
             "slots": {"position": ["front", "rear", "side"], "side": ["left", "right", "center"]}},
            None, "alsa-utils",
        ),  # fmt: skip
        "digits": HumanSet(
            "digits",
            [(str(PS_DATA / "tidigits" / "dhd.2934z.raw"), "two nine three four zero")],
            {"intents": {"digits": [" ".join(["{digit}"] * n) for n in range(1, MAX_DIGITS + 1)]},
             "slots": {"digit": ["zero", "oh", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"]}},
            None, "pocketsphinx-testdata",
        ),  # fmt: skip
        **asterisk_sets(),
        **desktop_sets(),
        **game_sets(),
        **letter_sets(),
    }


def asterisk_prompts() -> list[tuple[str, str]]:
    """(wav path, transcript) of every Asterisk prompt whose transcript is plain words, 3 to 8 of them.
    Left out: sound effects ("[beep]"), digits and keys in the text ("press 1", "#"), spelled letters
    ("n b s"), and the long menus."""
    import gzip

    if not ASTERISK_TRANSCRIPTS.is_file():
        return []
    prompts = []
    for line in gzip.open(ASTERISK_TRANSCRIPTS, "rt", encoding="utf-8", errors="replace"):
        name, colon, text = line.partition(":")
        wav = ASTERISK / f"{name.strip()}.wav"
        if line.startswith(";") or not colon or re.search(r"[\[\]0-9#*]", text) or not wav.is_file():
            continue
        words = re.sub(r"[^a-z' ]", " ", text.lower()).split()
        lo, hi = ASTERISK_PHRASE_WORDS
        if lo <= len(words) <= hi and max(len(w) for w in words) > 1:
            prompts.append((str(wav), " ".join(words)))
    return prompts


def asterisk_date_parts() -> dict[str, list[tuple[str, list[str]]]]:
    """Each slot's values as (words, the digits/ files Asterisk plays for them, in order), the way
    its SayDateTime speaks a date: "twenty first" is `20` then `h-1`, "oh five" is `oh` then `5`."""
    from seqx.tokenize.text import number_words

    def date(n: int) -> tuple[str, list[str]]:
        if n <= 20:
            return ORDINALS[n - 1], [f"h-{n}"]
        if n == 30:
            return "thirtieth", ["h-30"]
        tens, unit = n - n % 10, n % 10
        return f"{number_words(tens)} {ORDINALS[unit - 1]}", [str(tens), f"h-{unit}"]

    def minute(n: int) -> tuple[str, list[str]]:
        if n == 0:
            return "o'clock", ["oclock"]
        if n < 10:
            return f"oh {number_words(n)}", ["oh", str(n)]
        if n < 20 or n % 10 == 0:
            return number_words(n), [str(n)]
        return number_words(n), [str(n - n % 10), str(n % 10)]

    return {
        "day": [(d, [f"day-{i}"]) for i, d in enumerate(DAYS)],
        "month": [(m, [f"mon-{i}"]) for i, m in enumerate(MONTHS)],
        "date": [date(n) for n in range(1, 32)],
        "hour": [(number_words(n), [str(n)]) for n in range(1, 13)],
        "minute": [minute(n) for n in range(0, 60, 5)],
    }


def asterisk_dates(n: int = ASTERISK_DATES, seed: int = 0) -> list[tuple[str, str]]:
    """n date-and-time sentences ("monday march twenty first at nine fifteen") spliced from Allison's
    digits/ recordings back to back, as Asterisk itself plays a date to a caller: a person's voice
    in a grammar of five slots and 375,000 sentences, the shape of a real command set, which the
    other sets (a phrase each) do not have. None when the recordings are not installed."""
    parts = asterisk_date_parts()
    rng = np.random.default_rng([seed, 2026])
    sentences = []
    for _ in range(n):
        said = {slot: values[int(rng.integers(len(values)))] for slot, values in parts.items()}
        names = [*said["day"][1], *said["month"][1], *said["date"][1], "at", *said["hour"][1], *said["minute"][1]]
        sentences.append((f"{said['day'][0]} {said['month'][0]} {said['date'][0]} at {said['hour'][0]} {said['minute'][0]}", names))
    return spliced_files(f"seqx-asterisk-dates-{seed}", sentences)


def asterisk_alarm_times() -> list[tuple[str, list[str]]]:
    """Every time of day on the five minutes, as an alarm grammar writes it ("7:05 AM") with the
    digits/ files Asterisk plays for it: the hour, the minute, then "a-m" or "p-m"."""
    parts = asterisk_date_parts()
    minutes = dict(zip(range(0, 60, 5), [files for _, files in parts["minute"]], strict=True))
    return [(f"{hour}:{minute:02d} {half}", [str(hour), *files, f"{half[0].lower()}-m"])
            for half in ("AM", "PM") for hour in range(1, 13) for minute, files in minutes.items()]  # fmt: skip


def asterisk_alarms(n: int = ASTERISK_DATES, seed: int = 0) -> list[tuple[str, str]]:
    """n alarm times ("7:05 AM") spliced from Allison's digits/ files, her "a m" and "p m" among them:
    the check that a grammar's "AM" is taught as the letters a person says (flite said nothing for it,
    espeak-ng the verb "am" for a lowercase one)."""
    times = asterisk_alarm_times()
    rng = np.random.default_rng([seed, 2027])
    return spliced_files(f"seqx-asterisk-alarms-{seed}", [times[int(i)] for i in rng.integers(len(times), size=n)])


def spliced_files(folder_name: str, sentences: list[tuple[str, list[str]]]) -> list[tuple[str, str]]:
    """(wav path, sentence) of each sentence's digits/ files joined back to back, written once under the
    temp folder; none when the recordings are not installed."""
    import tempfile

    from seqx.featurize.samples import read_samples
    from seqx.stage import atomic_write

    if not (ASTERISK / "digits" / "day-0.wav").is_file():
        return []
    folder = Path(tempfile.gettempdir()) / folder_name
    folder.mkdir(parents=True, exist_ok=True)
    files = []
    for i, (text, names) in enumerate(sentences):
        path = folder / f"said-{i:03d}.wav"
        if not path.is_file():
            wave = np.concatenate([read_samples(ASTERISK / "digits" / f"{name}.wav", 16000) for name in names])
            with atomic_write(path) as tmp:  # a run cut short leaves no half file to be reused
                sf.write(tmp, wave, 16000, subtype="PCM_16", format="WAV")
        files.append((str(path), text))
    return files


def asterisk_sets() -> dict[str, HumanSet]:
    """A second person, and many more of her files: the Asterisk PBX's prompts (one professional voice,
    8 kHz). The numbers set asks what the commands demo gets wrong most (teens against tens); the
    phrases set asks for 120-odd sentences of about 250 words at once."""
    from seqx.tokenize.text import number_words

    numbers = [number_words(n) for n in range(100)]
    phrases = asterisk_prompts()
    return {
        "asterisk-numbers": HumanSet(
            "asterisk-numbers",
            [(str(ASTERISK / "digits" / f"{n}.wav"), number_words(n)) for n in ASTERISK_NUMBERS],
            {"intents": {"number": ["{number}"]}, "slots": {"number": numbers}}, None, "asterisk-core-sounds-en-wav",
        ),  # fmt: skip
        "asterisk-dates": HumanSet(
            "asterisk-dates",
            asterisk_dates(),
            {"intents": {"date": ["{day} {month} {date} at {hour} {minute}"]},
             "slots": {slot: [words for words, _ in values] for slot, values in asterisk_date_parts().items()}},
            None, "asterisk-core-sounds-en-wav", spliced=True,
        ),  # fmt: skip
        "asterisk-alarms": HumanSet(
            "asterisk-alarms",
            asterisk_alarms(),
            {"intents": {"alarm": ["wake me at {time} {half}", "{time} {half}"]},
             "slots": {"time": sorted({t.split()[0] for t, _ in asterisk_alarm_times()}), "half": ["AM", "PM"]}},
            None, "asterisk-core-sounds-en-wav", spliced=True, others_hear=False,
        ),  # fmt: skip
        "asterisk-phrases": phrase_list_set("asterisk-phrases", phrases, "prompt", "asterisk-core-sounds-en"),
    }


def ktuberling_words() -> list[tuple[str, str]]:
    """(ogg path, word) of KTuberling's English object names ("ball", "umbrella", "pineapple", ...): its
    en.soundtheme maps each name to a file; a scene's prefix ("pizzeria_olive") is not said."""
    theme = KTUBERLING / "en.soundtheme"
    if not theme.is_file():
        return []
    words = []
    for name, file in re.findall(r'<sound\s+name="([^"]+)"\s+file="([^"]+)"', theme.read_text()):
        word = name.split("_", 1)[-1].lower()
        word = KTUBERLING_WORDS.get(word, word)
        if word:
            words.append((str(KTUBERLING / file), word))
    return sorted(words)


def desktop_sets() -> dict[str, HumanSet]:
    """Another person, from a Linux desktop's own packages: the English words of KTuberling, KDE's
    stamp toy (70 object names said one at a time, a phrase list; "ufo" left out). (The freedesktop sound theme's
    channel names are alsa-utils' recordings again, resampled: not another voice.)"""
    return {"ktuberling": phrase_list_set("ktuberling", ktuberling_words(), "thing", "ktuberling-data")}


WARZONE = Path("/usr/share/games/warzone2100/base.wz")
# the folders of base.wz's audio/ that hold speech (the rest: weapons, engines, music), and the words in
# audio.cfg's labels that are not said as written (letters, numbers, names) or not all that is said
WARZONE_SPEECH = ("memressp", "extra", "trnsppil", "vtoltalk", "coltive")
WARZONE_SPELLING = {"artefact": "artifact"}  # said alike; PocketSphinx's dictionary has the American spelling
WARZONE_SKIP = re.compile(r"\d|\b(lz|nexus|vtols?|sam|nasda|re-arming)\b|:|\bto\s*$", re.IGNORECASE)


def warzone_lines() -> list[tuple[str, str]]:
    """(wav path, line) of Warzone 2100's spoken messages ("research completed", "structure under
    attack", "hold position", "enemy located" said by three pilots in turn): its audio.cfg names each
    file with the line in a comment. Lines with letters, numbers or names said otherwise than written
    are left out. The files are read out of base.wz once, under the temp folder; none when
    warzone2100-data is not installed."""
    import tempfile
    import zipfile

    from seqx.featurize.samples import read_samples
    from seqx.stage import atomic_write

    if not WARZONE.is_file():
        return []
    folder = Path(tempfile.gettempdir()) / "seqx-warzone"
    folder.mkdir(parents=True, exist_ok=True)
    lines = []
    # each run extracts into its own scratch folder: two runs at once on a fresh machine must not
    # delete each other's .ogg (seen 2026-11-30); the .wav is published atomically either way
    with zipfile.ZipFile(WARZONE) as wz, tempfile.TemporaryDirectory(dir=folder) as scratch:
        where = {Path(n).name: n for n in wz.namelist() if n.endswith(".ogg") and Path(n).parts[1] in WARZONE_SPEECH}
        config = wz.read("audio/audio.cfg").decode("latin-1")
        for name, label in re.findall(r'audio\s+"([^"]+\.ogg)"[^\n]*?/\*\s*(.*?)\s*\*/', config):
            if name not in where or WARZONE_SKIP.search(label):
                continue
            words = re.sub(r"[-!.]", " ", label.replace("&", "and")).lower().split()
            text = " ".join(WARZONE_SPELLING.get(w, w) for w in words)
            path = folder / f"{Path(name).stem}.wav"
            if not path.is_file():
                ogg = Path(scratch) / name
                ogg.write_bytes(wz.read(where[name]))
                with atomic_write(path) as tmp:  # 11.025 kHz Vorbis, as 16 kHz PCM the way every set is read
                    sf.write(tmp, read_samples(ogg, 16000), 16000, subtype="PCM_16", format="WAV")
            lines.append((str(path), text))
    return sorted(lines)


def game_sets() -> dict[str, HumanSet]:
    """More voices, from a game Debian ships: Warzone 2100's spoken messages, a phrase list of about a
    hundred short lines whose words repeat across them ("enemy base detected", "enemy base
    eradicated", "scavenger base detected"), the shape of a game's or a machine's voice commands."""
    return {"warzone": phrase_list_set("warzone", warzone_lines(), "line", "warzone2100-data", others_hear=False)}


KLETTRES = Path("/usr/share/klettres")
# KLettres' speakers of English (en: American, "zee"; en_GB: British, "zed") and its syllab/ files that are
# a sound, not a word (aw, ch, th): a child hears them to type the letters
KLETTRES_SPEAKERS = ("en", "en_GB")
KLETTRES_SOUNDS = {"aw", "ch", "th"}


def klettres_files(kind: str) -> list[tuple[str, str]]:
    """(ogg path, what it says) of KLettres' English recordings: `alpha` a letter's name ("b", said
    "bee"), `syllab` a short word ("car", "jet", "sky"); the file's name is what it says."""
    files = []
    for speaker in KLETTRES_SPEAKERS:
        for path in sorted((KLETTRES / speaker / kind).glob("*.ogg")):
            said = path.stem.lower()
            if said not in KLETTRES_SOUNDS:
                files.append((str(path), said))
    return files


def letter_sets() -> dict[str, HumanSet]:
    """Two more people, from KDE's alphabet tutor KLettres: an American and a British speaker say the
    26 letters (`letters`: one letter a command, against all 26, the e-set "b c d e g p t v z" among
    them, the hardest words a command set can hold) and 16 / 23 short words (`klettres-words`: a
    phrase list of 23 one-syllable words, "car", "dog", "sky", "the"). Not among the other sets'
    people out of the grammar (added after their figures)."""
    letters = klettres_files("alpha")
    grammar = {"intents": {"letter": ["{letter}"]}, "slots": {"letter": sorted({r for _, r in letters})}}
    return {
        "letters": HumanSet("letters", letters, grammar, None, "klettres-data", others_hear=False),
        "klettres-words": phrase_list_set(
            "klettres-words", klettres_files("syllab"), "word", "klettres-data", others_hear=False
        ),
    }


def phrase_list_set(name: str, files: list[tuple[str, str]], intent: str, package: str, **kw: Any) -> HumanSet:
    """A set whose grammar is the list of what its files say, one intent; no files when `package` is
    not installed (run_set names it)."""
    return HumanSet(name, files, {"intents": {intent: sorted({text for _, text in files})}}, None, package, **kw)


def other_speech() -> list[tuple[str, str]]:
    """Human recordings that belong to no set: LibriVox read speech and something.raw, (path, reference)."""
    files = [(str(PS_DATA / "something.raw"), "go somewhere and do something")]
    transcription = PS_DATA / "librivox" / "transcription"
    if transcription.is_file():
        for line in transcription.read_text().splitlines():
            m = re.match(r"\s*<s>(.*)</s>\s*\(([\w-]+)\)", line)
            if m:
                files.append((str(PS_DATA / "librivox" / f"{m.group(2)}.wav"), " ".join(m.group(1).split())))
    return [(p, r) for p, r in files if Path(p).is_file()]


def human_out_of_grammar(hs: HumanSet, grammar: Grammar, recipe: Recipe, everyone: bool = False) -> list[str]:
    """Real voices saying what `hs`'s grammar does not hold: the other sets' speech and other_speech();
    `everyone` adds the sets kept out of that pool for comparability (warzone, KLettres')."""
    sets = [o for n, o in human_sets().items() if n != hs.name and not o.spliced and (o.others_hear or everyone)]
    others = [f for other in sets for f in other.files if f[1]]
    return [p for p, ref in others + other_speech() if not grammar.accepts(normalize_text(ref, recipe.tokenizer))]


def as_wav(path: str, folder: Path) -> str:
    """A .raw file (16 kHz signed 16-bit mono, as pocketsphinx-testdata ships it) as a wav under folder."""
    if not path.endswith(".raw"):
        return path
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / (Path(path).stem + ".wav")
    if not target.is_file():
        pcm = np.fromfile(path, dtype="<i2")
        sf.write(target, pcm, 16000, subtype="PCM_16")
    return str(target)


def set_model_name(set_name: str, kind: str) -> str:
    """The experiment name a set's model is trained under (one per feature kind)."""
    return f"human-{set_name}-{kind.replace('+', '-')}"


def load_set_bundle(exp_dir: Path, set_name: str, kind: str, sets: list[str] | tuple[str, ...] = ()):
    """The bundle `bench/human.py --exp-dir EXP_DIR` trained for a set, for the benches that only decode,
    with the decode.* keys of `sets` (--set KEY=VALUE items) over its own (decode_as_set)."""
    from seqx.decode.bundle import load_bundle

    model = exp_dir / set_model_name(set_name, kind) / "model"
    if not model.is_dir():
        raise SystemExit(f"{model}: no model; run bench/human.py --exp-dir {exp_dir} first")
    bundle = load_bundle(model)
    if sets:
        bundle.decode = decode_as_set(bundle.decode, load_recipe(DEFAULT_RECIPE, list(sets)), list(sets))
    return bundle


def set_recipe(base: Path, hs: HumanSet, args: argparse.Namespace) -> Recipe:
    """The base recipe with the set's grammar and the cpu profile's size; its voices are the recipe's."""
    raw = load_recipe(base, args.set).model_dump()
    synth = raw["data"]["synth"]
    # every sentence of the set's grammar may be trained on: the human files are the test
    synth.update(grammar=hs.grammar, templates=[], slots={}, heldout_command_share=0.0)
    raw["name"] = set_model_name(hs.name, args.kind)
    raw["exp_dir"] = str(args.exp_dir)
    raw["features"]["kind"] = args.kind
    embedding = args.kind.startswith("speech_embedding")
    raw["model"]["frontend"] = "linear" if embedding else "conv2d"
    profile = raw["device_profiles"].setdefault("cpu", {})
    if args.size:
        raw["data"]["size"] = args.size
        profile.pop("data.size", None)
    if args.epochs:
        raw["train"]["epochs"] = args.epochs
        profile.pop("train.epochs", None)
    # max_frames counts feature frames: keep the same seconds of audio per batch when the
    # frame rate differs from the base recipe's (80 ms embedding frames vs 10 ms fbank ones)
    ratio = Recipe.model_validate(raw).features.frame_ms / load_recipe(base).features.frame_ms
    for where in (raw["train"], profile):
        key = "max_frames" if where is raw["train"] else "train.max_frames"
        if key in where:
            where[key] = max(1, round(where[key] / ratio))
    for item in args.set:  # --set wins over the set's choices too
        key, _, text = item.partition("=")
        node = raw
        *parents, last = key.strip().split(".")
        for part in parents:
            node = node.setdefault(part, {})
        node[last] = yaml.safe_load(text)
    recipe = recipe_from_dict(raw, source=f"{base} + human set {hs.name}")
    return recipe.for_device("cuda" if torch.cuda.is_available() else "cpu")


@dataclass
class SetResult:
    name: str
    recipe: str
    files: list[dict[str, str]] = field(default_factory=list)
    systems: dict[str, dict[str, float]] = field(default_factory=dict)
    train_seconds: float = 0.0
    # share of the set's out-of-grammar sentences (valid voices, synthetic) answered with a command,
    # for the systems constrained to the grammar: what rejection buys
    oog_false_accepts: dict[str, float] = field(default_factory=dict)
    # the same for real voices out of the grammar (human_out_of_grammar): how many of how many
    human_oog_answered: dict[str, list[int]] = field(default_factory=dict)


def score(refs: list[str], hyps: list[str]) -> dict[str, float]:
    errors = [utterance_errors(r, h) for r, h in zip(refs, hyps)]
    scores = pool(errors)
    return {"wer": scores.wer, "sentence_accuracy": scores.sentence_accuracy, "files": len(refs)}


def decode_as_set(stored: DecodeSettings, recipe: Recipe, sets: list[str]) -> DecodeSettings:
    """A bundle's stored decode settings with the decode.* keys --set names taken from the recipe:
    without it a --set decode.X would change nothing on a bundle already trained (--skip-train).
    `auto` keeps the bundle's choice (what training chose is what `auto` means)."""
    named = [item.split("=", 1)[0].removeprefix("decode.") for item in sets if item.startswith("decode.")]
    asked = {k: getattr(recipe.decode, k) for k in named}
    return stored.model_copy(update={k: v for k, v in asked.items() if v != "auto"})


def run_set(hs: HumanSet, args: argparse.Namespace) -> SetResult:
    from seqx.decode.transcribe import Constraint, PreparedFiles, transcribe_files
    from seqx.decode.bundle import load_bundle
    from seqx.decode.reject import valid_negatives, without_rejection
    from seqx.grammar.load import load_grammar
    from seqx.report import Collect
    from seqx.train.stage import choose_reject_thresholds, run_train_stage

    recipe = set_recipe(args.recipe, hs, args)
    if not hs.files:  # asterisk-phrases without its transcripts
        raise SystemExit(f"{hs.name}: no recordings found (apt-get install {hs.package})")
    missing = [p for p, _ in hs.files if not Path(p).is_file()]
    if missing:
        raise SystemExit(f"{missing[0]}: missing (apt-get install {hs.package})")
    paths = [as_wav(p, recipe.root / "human") for p, _ in hs.files]
    refs = [normalize_text(r, recipe.tokenizer) for _, r in hs.files]
    result = SetResult(hs.name, recipe.name)

    start = time.perf_counter()
    if not args.skip_train:
        # a grammar of a dozen words gets the largest vocabulary it supports; --restart: train settings other
        # than the experiment's last run (a new seed) start over, as `seqx train --restart` does
        run_train_stage(recipe, restart=args.restart)
    result.train_seconds = time.perf_counter() - start
    if args.recalibrate:  # the bundle's rejection thresholds chosen again, by the code as it is now
        grammar = load_grammar(recipe)
        assert grammar is not None, f"{recipe.name}: no grammar"
        said = Collect()
        choose_reject_thresholds(recipe, grammar, said, torch.device("cpu"))
        print(*said.infos, sep="\n", file=sys.stderr)
    bundle = load_bundle(recipe.bundle_dir)
    bundle.decode = decode_as_set(bundle.decode, recipe, args.set)
    systems: dict[str, list[str]] = {}
    set_grammar = hs.load_grammar()
    # the out-of-grammar sentences training chose the thresholds with (made then; reused, not remade)
    oog = [n.audio for n in valid_negatives(recipe, set_grammar) if n.kind == "oog"]
    heard = human_out_of_grammar(hs, set_grammar, recipe, everyone=args.all_people)
    people = [as_wav(p, recipe.root / "human") for p in heard]
    beam_label = f"seqx beam {bundle.decode.beam} + CTC {bundle.decode.ctc_weight:g}"
    # (label, beam, grammar, slot_weight, rejection); without rejection as PocketSphinx's JSGF mode decodes
    runs = [("seqx greedy", 1, "none", 0.0, True), (beam_label, bundle.decode.beam, "none", 0.0, True),
            (f"{beam_label} + grammar", bundle.decode.beam, "recipe", 0.0, True),
            (f"{beam_label} + grammar, no rejection", bundle.decode.beam, "recipe", 0.0, False)]  # fmt: skip
    if bundle.heads is not None:  # a model with intent/slot heads: the same beam, reranked by their vote
        weights = [float(w) for w in args.slot_weights.split(",")] if args.slot_weights else []
        for weight in weights or [bundle.decode.slot_weight or 1.0]:
            runs.append((f"{beam_label} + grammar + slot heads {weight:g}", bundle.decode.beam, "recipe", weight, True))
    prepared = PreparedFiles()  # every system hears the same files: read, gate and featurize them once
    for label, beam, grammar, slot_weight, rejection in runs:
        settings = bundle.decode.model_copy(update={"beam": beam, "grammar": grammar, "slot_weight": slot_weight})
        if not rejection:
            settings = without_rejection(settings)
        extra = oog + people if grammar == "recipe" else []
        results = transcribe_files(bundle, paths + extra, settings, constraint=Constraint.of(bundle, settings),
                                   prepared=prepared)
        # a rejected result ("not understood") has empty text: right only for the no-speech file
        systems[label] = [normalize_text(r.text, recipe.tokenizer) for r in results[: len(paths)]]
        if extra:
            synthetic, human = results[len(paths) : len(paths) + len(oog)], results[len(paths) + len(oog) :]
            result.oog_false_accepts[label] = sum(bool(r.text) for r in synthetic) / max(1, len(oog))
            result.human_oog_answered[label] = [sum(bool(r.text) for r in human), len(people)]
    if not args.skip_pocketsphinx:
        # the grammar's words as said ("7:05 AM" is "seven oh five a m"): PocketSphinx's dictionary has
        # no "7:05"; every set before asterisk-alarms writes the same JSGF either way
        said = set_grammar.spoken(lambda text: normalize_text(text, recipe.tokenizer))
        jsgf = hs.jsgf_file.read_text() if hs.jsgf_file else grammar_to_jsgf(said)
        words = said.vocabulary()
        hyps, _ = run_pocketsphinx(pocketsphinx_decoder(jsgf, words), paths + oog + people)
        systems["PocketSphinx + JSGF"] = [normalize_text(h, recipe.tokenizer) for h in hyps[: len(paths)]]
        if oog:
            accepted = sum(bool(h.strip()) for h in hyps[len(paths) : len(paths) + len(oog)])
            result.oog_false_accepts["PocketSphinx + JSGF"] = accepted / len(oog)
        human = hyps[len(paths) + len(oog) :]
        result.human_oog_answered["PocketSphinx + JSGF"] = [sum(bool(h.strip()) for h in human), len(people)]
    for label, hyps in systems.items():
        result.systems[label] = score(refs, hyps)
    for i, (path, ref) in enumerate(zip(paths, refs)):
        result.files.append({"file": Path(path).name, "reference": ref, **{k: v[i] for k, v in systems.items()}})
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--recipe", type=Path, default=DEFAULT_RECIPE)
    parser.add_argument("--sets", default=",".join(human_sets()))
    parser.add_argument("--kind", default="speech_embedding", help="features.kind: speech_embedding, fbank, mfcc, ...")
    parser.add_argument("--epochs", type=int, default=0, help="0: the profile's")
    parser.add_argument("--size", type=int, default=0, help="corpus utterances; 0: the profile's")
    parser.add_argument("--exp-dir", type=Path, default=Path("/tmp/seqx-human"))
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="recipe override")
    parser.add_argument("--skip-train", action="store_true", help="decode with the bundles already trained")
    parser.add_argument("--restart", action="store_true", help="train every set's model anew: another train setting "
                        "(--set train.seed=1) in an --exp-dir trained before, whose corpus and features are reused")
    parser.add_argument("--slot-weights", default="", help="decode.slot_weight values of the heads runs (a model "
                        "trained with train.slot_weight > 0), e.g. 0.3,1; default: the bundle's, else 1")
    parser.add_argument("--recalibrate", action="store_true", help="choose the bundles' rejection thresholds again "
                        "on valid (with --skip-train: the same models under the current rule)")
    parser.add_argument("--skip-pocketsphinx", action="store_true")
    parser.add_argument("--all-people", action="store_true",
                        help="people out of the grammar from every other set, warzone's and KLettres' too "
                        "(their counts are not comparable with runs without it)")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    sets = human_sets()
    unknown = [s for s in args.sets.split(",") if s not in sets]
    if unknown:
        raise SystemExit(f"--sets: unknown set {unknown[0]!r} (choose from {', '.join(sets)})")
    results = [run_set(sets[s], args) for s in args.sets.split(",")]
    if args.json:
        print(json.dumps([r.__dict__ for r in results], indent=1))
        return
    from rich.console import Console
    from rich.table import Table

    console = Console()
    for r in results:
        files = Table(title=f"{r.name}: {r.recipe} (trained {r.train_seconds:.0f} s)")
        files.add_column("file")
        files.add_column("reference")
        for label in r.systems:
            files.add_column(label)
        for f in r.files:
            files.add_row(*[f[k] or "(nothing)" for k in f])
        console.print(files)
    summary = Table(title=f"human recordings, features.kind {args.kind}")
    for col in ("set", "system", "files", "WER %", "sentence acc %", "OOG accepted %", "people OOG answered"):
        summary.add_column(col, justify="right" if "%" in col or col == "files" else "left")
    for r in results:
        for label, s in r.systems.items():
            fa, people = r.oog_false_accepts.get(label), r.human_oog_answered.get(label)
            summary.add_row(r.name, label, str(s["files"]), f"{100 * s['wer']:.1f}",
                            f"{100 * s['sentence_accuracy']:.1f}", "" if fa is None else f"{100 * fa:.0f}",
                            "" if people is None else f"{people[0]}/{people[1]}")
    console.print(summary)


if __name__ == "__main__":
    main()
