"""Synthetic speakers: espeak-ng accents x voice variants, and flite voices.

Test and valid speakers are drawn from the voice list before any utterance is
made, so a test voice is never heard in training. With `test_engine: flite` the
test speakers are all flite voices and training hears espeak-ng only: a harder
test of generalizing to an engine never heard.
"""

from __future__ import annotations

import numpy as np

from seqx.errors import SeqxError
from seqx.recipe import SynthSettings, Voice


def all_voices(settings: SynthSettings) -> list[Voice]:
    voices = []
    if "espeak-ng" in settings.engines:
        voices += [Voice(engine="espeak-ng", language=a, variant=v) for a in settings.accents for v in settings.variants]
    if "flite" in settings.engines or settings.test_engine == "flite":
        voices += [Voice(engine="flite", language="en-us", variant=v) for v in settings.flite_voices]
    return voices


def voice_name(voice: Voice) -> str:
    if voice.engine == "flite":
        return f"flite:{voice.variant}"
    return f"espeak:{voice.language}{'+' + voice.variant if voice.variant else ''}"


def split_voices(settings: SynthSettings, seed: int) -> dict[str, list[Voice]]:
    """Disjoint train/valid/test speaker sets, fixed by the seed."""
    voices = all_voices(settings)
    order = np.random.default_rng([seed, 1]).permutation(len(voices))
    shuffled = [voices[i] for i in order]
    if settings.test_engine == "flite":
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
