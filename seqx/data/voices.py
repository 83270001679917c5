"""Synthetic speakers: espeak-ng accents x voice variants, and flite voices.

Test and valid speakers are drawn from the voice list before any utterance is
made, so a test voice is never heard in training. With `test_engine: flite` the
test speakers are all flite voices and training hears espeak-ng only: a harder
test of generalizing to an engine never heard.

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
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from seqx.errors import SeqxError
from seqx.recipe import SynthSettings, Voice


def all_voices(settings: SynthSettings) -> list[Voice]:
    voices = []
    if "espeak-ng" in settings.engines:
        voices += [
            Voice(engine="espeak-ng", language=a, variant=v) for a in settings.accents for v in settings.variants
        ]
    if "flite" in settings.engines or settings.test_engine == "flite":
        voices += [Voice(engine="flite", language="en-us", variant=v) for v in settings.flite_voices]
    return voices


def voice_name(voice: Voice) -> str:
    if voice.engine == "flite":
        return f"flite:{voice.variant}"
    return f"espeak:{voice.language}{'+' + voice.variant if voice.variant else ''}"


PROBE_TEXT = "check the battery"


@functools.cache
def _sound_of(voice: Voice) -> str | None:
    """A hash of the voice saying PROBE_TEXT; None when the engine fails or says nothing."""
    try:
        if voice.engine == "flite":
            with tempfile.TemporaryDirectory() as tmp:
                out = Path(tmp) / "probe.wav"
                subprocess.run(
                    ["flite", "-voice", voice.variant, "-t", PROBE_TEXT, "-o", str(out)],
                    check=True,
                    capture_output=True,
                    timeout=60,
                )
                wav = out.read_bytes()
        else:
            name = voice.language + (f"+{voice.variant}" if voice.variant else "")
            wav = subprocess.run(
                ["espeak-ng", "-v", name, "--stdout", PROBE_TEXT], check=True, capture_output=True, timeout=60
            ).stdout
    except (subprocess.SubprocessError, OSError):
        return None
    return hashlib.sha256(wav).hexdigest() if len(wav) > 1000 else None


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


def split_voices(settings: SynthSettings, seed: int, voices: list[Voice] | None = None) -> dict[str, list[Voice]]:
    """Disjoint train/valid/test speaker sets, fixed by the seed (`voices` defaults to all_voices)."""
    voices = all_voices(settings) if voices is None else voices
    order = np.random.default_rng([seed, 1]).permutation(len(voices))
    shuffled = [voices[i] for i in order]
    if settings.test_speakers:
        test, rest = _pinned_test_speakers(settings.test_speakers, shuffled)
    elif settings.test_engine == "flite":
        test = [v for v in shuffled if v.engine == "flite"]
        rest = [v for v in shuffled if v.engine != "flite"]
    else:
        test, rest = shuffled[: settings.test_voices], shuffled[settings.test_voices :]
    valid, train = rest[: settings.valid_voices], rest[settings.valid_voices :]
    if not (train and valid and test):
        raise SeqxError(
            f"data.synth: {len(voices)} voices cannot give train, valid ({settings.valid_voices}) and "
            f"test ({settings.test_voices}) speakers of their own; add accents/variants or lower the counts"
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
                else " (names look like espeak:en-us+m3 or flite:slt, and the engine must be in data.synth.engines)"
            )
            raise SeqxError(
                f"data.synth.test_speakers: {name!r} is not one of the recipe's distinct voices{hint}"
            )
    return [known[n] for n in dict.fromkeys(names)], [v for v in voices if voice_name(v) not in names]
