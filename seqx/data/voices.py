"""Synthetic speakers: espeak-ng accents x variants, flite, festival, piper, hibari and pico voices.

Test and valid speakers are drawn from the voice list before any utterance is
made, so a test voice is never heard in training. The `test_voices` held out
(then the `valid_voices`) are spread over the engines in turn, and each engine
keeps at least half of its voices for training: festival's three voices give
up one, piper's one model none. Without that floor a few-voice engine could be
held out whole by accident and so turn into an unheard engine nobody chose.
An engine that can spare a voice has its "new voice" in the test split. With
`test_engine: E` every voice of E is a test speaker as well and E is never
heard in training: "a new kind of voice" is measured beside "a new voice", in
one test split whose speaker names (piper:..., flite:...) tell them apart.

A voice name espeak-ng does not know is not an error to it: it quietly speaks
with the accent's plain voice (`en-us+annie` is `en-us`; `en-gb` ignores every
variant). Two names for one sound would put the same speaker in train and test,
so each voice is probed once and only the first of each distinct sound is kept.
"""

from __future__ import annotations

import difflib
import functools
import hashlib
import subprocess
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from seqx.data import engines
from seqx.errors import SeqxError
from seqx.recipe import SynthSettings, Voice


def all_voices(settings: SynthSettings) -> list[Voice]:
    """Every voice the settings name, engine by engine (an engine counts when trained on or tested on)."""
    wanted = set(settings.engines) | ({settings.test_engine} - {"same"})
    voices = []
    if "espeak-ng" in wanted:
        voices += [
            Voice(engine="espeak-ng", language=a, variant=v) for a in settings.accents for v in settings.variants
        ]
    if "flite" in wanted:
        voices += [Voice(engine="flite", language="en-us", variant=v) for v in settings.flite_voices]
    if "festival" in wanted:
        voices += [Voice(engine="festival", language="en-us", variant=v) for v in settings.festival_voices]
    if "piper" in wanted:
        voices += [v for name in settings.piper_voices for v in _piper_voices(name)]
    if "hibari" in wanted:
        voices += [Voice(engine="hibari", language="en-us", variant=v) for v in settings.hibari_voices]
    if "pico" in wanted:
        languages = engines.Pico.LANGUAGES
        voices += [Voice(engine="pico", language=languages.get(v, "en-us"), variant=v) for v in settings.pico_voices]
    return voices


def _piper_voices(name: str) -> list[Voice]:
    """"MODEL#SPEAKER" is one voice; "MODEL" is every speaker of the model (or the model, when absent)."""
    model, _, speaker = name.partition("#")
    installed = engines.piper_models().get(model)
    speakers = [speaker] if speaker else sorted(installed.speakers, key=installed.speakers.get) if installed else []
    return [Voice(engine="piper", language=model, variant=s) for s in speakers or [""]]


def voice_name(voice: Voice) -> str:
    return engines.voice_name(voice)


PROBE_TEXT = "check the battery"
# piper without its noise, so that two names for one speaker sound the same to the probe
PROBE_DELIVERY = engines.Delivery(noise_scale=0.0, noise_w=0.0)


@functools.cache
def _sound_of(voice: Voice) -> str | None:
    """A hash of the voice saying PROBE_TEXT; None when the engine fails or says nothing."""
    try:
        samples, rate_hz = engines.speak(PROBE_TEXT, voice, PROBE_DELIVERY)
    except (subprocess.SubprocessError, OSError, RuntimeError, SeqxError):
        return None
    if samples.size < rate_hz // 10 or not np.abs(samples).max() > 1e-4:
        return None
    pcm = np.round(samples * 32767).astype(np.int16)  # the samples as the engine wrote them
    return hashlib.sha256(pcm.tobytes() + str(rate_hz).encode()).hexdigest()


def distinct_voices(voices: list[Voice], workers: int) -> tuple[list[Voice], list[tuple[str, str]]]:
    """The voices that sound different from every earlier one, and (voice, why) for the rest."""
    with ThreadPoolExecutor(max(1, workers)) as pool:  # threads: the work is in the subprocesses
        sounds = list(pool.map(_sound_of, voices))
    kept: list[Voice] = []
    dropped: list[tuple[str, str]] = []
    first_with: dict[str, Voice] = {}
    for voice, sound in zip(voices, sounds):
        if sound is None:
            dropped.append((voice_name(voice), "the engine failed"))
        elif sound in first_with:
            dropped.append((voice_name(voice), f"sounds the same as {voice_name(first_with[sound])}"))
        else:
            first_with[sound] = voice
            kept.append(voice)
    return kept, dropped


# Engines added after the split was fixed join it after the shuffle and give no voice to valid or test
# (unless one is the test_engine), so that adding one to a recipe leaves which voices of the others are
# held out as it was (the test split stays comparable) and every voice it has is trained on.
APPENDED_ENGINES = ("hibari", "pico")


def split_voices(settings: SynthSettings, seed: int, voices: list[Voice] | None = None) -> dict[str, list[Voice]]:
    """Disjoint train/valid/test speaker sets, fixed by the seed (`voices` defaults to all_voices)."""
    voices = all_voices(settings) if voices is None else voices
    drawn = [v for v in voices if v.engine not in APPENDED_ENGINES]
    order = np.random.default_rng([seed, 1]).permutation(len(drawn))
    shuffled = [drawn[i] for i in order] + [v for v in voices if v.engine in APPENDED_ENGINES]
    spare = _spare_voices(shuffled)  # shared by test and valid: half of an engine at most, in all
    if settings.test_speakers:
        test, rest = _pinned_test_speakers(settings.test_speakers, shuffled)
    else:
        unheard = [v for v in shuffled if v.engine == settings.test_engine]
        heard = [v for v in shuffled if v.engine != settings.test_engine]
        test, rest = _held_out_by_engine(heard, settings.test_voices, spare)
        test = unheard + test
    valid, train = _held_out_by_engine(rest, settings.valid_voices, spare)
    if not (train and valid and test):
        raise SeqxError(
            f"data.synth: {len(voices)} voices cannot give train, valid ({settings.valid_voices}) and "
            f"test ({settings.test_voices}) speakers of their own (each engine keeps half its voices for "
            "training); add accents/variants or lower the counts"
        )
    return {"train": train, "valid": valid, "test": test}


def _pinned_test_speakers(names: list[str], voices: list[Voice]) -> tuple[list[Voice], list[Voice]]:
    """The named voices for test, the rest for train/valid; a name not in the voice list is an error."""
    known = {voice_name(v): v for v in voices}
    for name in names:
        if name not in known:
            close = difflib.get_close_matches(name, known, n=3)
            hint = (
                f" (did you mean {', '.join(close)}?)"
                if close
                else " (names look like espeak:en-us+m3, flite:slt, festival:kal_diphone, piper:en_US-joe-medium;"
                " the engine must be in data.synth.engines)"
            )
            raise SeqxError(
                f"data.synth.test_speakers: {name!r} is not one of the recipe's distinct voices{hint}"
            )
    return [known[n] for n in dict.fromkeys(names)], [v for v in voices if voice_name(v) not in names]


def _spare_voices(voices: list[Voice]) -> dict[str, int]:
    """How many voices each engine may give to valid and test together: half of them, rounded down
    (none for the engines added later: APPENDED_ENGINES)."""
    counts = Counter(v.engine for v in voices)
    return {engine: 0 if engine in APPENDED_ENGINES else n // 2 for engine, n in counts.items()}


def _held_out_by_engine(voices: list[Voice], count: int, spare: dict[str, int]) -> tuple[list[Voice], list[Voice]]:
    """`count` voices taken engine by engine in turn (in `voices`' order), and the rest.

    With one engine this is the first `count` voices, the split the corpus always made (the
    counts are then the recipe's own choice). With several, an engine gives up a voice only
    while `spare` (counted down here, shared by the test and valid calls) allows, so each keeps
    at least half its voices for training and a one-voice engine (piper's joe) is never held
    out, unless it is the test_engine.
    """
    by_engine: dict[str, list[Voice]] = {}
    for voice in voices:
        by_engine.setdefault(voice.engine, []).append(voice)
    if len(by_engine) == 1:
        return voices[:count], voices[count:]
    taken: list[Voice] = []
    while len(taken) < count:
        before = len(taken)
        for engine, pool in by_engine.items():
            left = [v for v in pool if v not in taken]
            if left and spare.get(engine, 0) > 0 and len(taken) < count:
                taken.append(left[0])
                spare[engine] -= 1
        if len(taken) == before:
            break
    return taken, [v for v in voices if v not in taken]
