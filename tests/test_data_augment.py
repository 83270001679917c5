"""Waveform augmentation at synthesis (seqx/data/augment.py), on real espeak-ng speech."""

from __future__ import annotations

import functools
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
import soxr
from conftest import ESPEAK_ONLY, REPO
from scipy import signal

from seqx.data import augment
from seqx.data.manifest import read_manifest
from seqx.data.stage import _key, run_data_stage
from seqx.data.synth import corpus_plans, render, speak
from seqx.featurize.span import speech_span
from seqx.librosa_import import import_librosa
from seqx.recipe import AugmentSettings, Voice, load_recipe
from seqx.report import Collect

SR = 16000
# augmentation off, whatever the recipe turns on by default (lengthen): each test turns on its own
SMALL = ["data.size=40", "data.synth.valid_voices=2", "data.synth.test_voices=2", *ESPEAK_ONLY,
         "data.synth.augment.lengthen.share=0"]  # fmt: skip
ALL_ON = [f"data.synth.augment.{name}.share=1" for name in augment.NAMES] + ["data.synth.augment.babble.bank=3"]


@functools.lru_cache(maxsize=1)
def _speech() -> np.ndarray:
    """'check the battery' from espeak-ng at 16 kHz (a real voice, with a real spectrum)."""
    audio, rate = speak("check the battery", Voice(language="en-us"), 160, 50, 100)
    return soxr.resample(audio, rate, SR).astype(np.float32)


def _band_share(audio: np.ndarray, low: float, high: float) -> float:
    """Share of the audio's energy between low and high Hz."""
    freqs, power = signal.welch(audio, SR, nperseg=1024)
    return float(power[(freqs >= low) & (freqs <= high)].sum() / power.sum())


def test_speed_changes_duration_by_the_factor() -> None:
    speech = _speech()
    for factor in (0.9, 1.1):
        out = augment.speed(speech, factor, SR)
        assert out.size / speech.size == pytest.approx(1 / factor, rel=0.002)


def test_pitch_shift_keeps_duration_and_moves_f0() -> None:
    librosa = import_librosa()

    speech = _speech()
    out = augment.pitch_shift(speech, 3.0, SR)
    assert out.size == speech.size
    f0_in = np.median(librosa.yin(speech, fmin=60, fmax=400, sr=SR))
    f0_out = np.median(librosa.yin(out, fmin=60, fmax=400, sr=SR))
    assert f0_out / f0_in == pytest.approx(2 ** (3 / 12), rel=0.08)


def test_lengthen_slows_the_end_of_each_stretch_before_a_pause() -> None:
    librosa = import_librosa()

    speech = _speech()
    pause = np.zeros(int(0.3 * SR), dtype=np.float32)
    two = np.concatenate([speech, pause, speech])  # a command said with a pause in the middle
    out = augment.lengthen(two, 1.5, 0.3, SR)
    first, last = speech_span(speech, SR)
    spoken = last - first
    # each stretch's last 30% takes 1.5 times as long: 15% of each is added (less a 10 ms fade each)
    assert (out.size - two.size) / (2 * 0.15 * spoken) == pytest.approx(1.0, rel=0.25)
    head = first + spoken // 2
    np.testing.assert_array_equal(out[:head], two[:head])  # the start is as it was said
    assert np.abs(out[-int(0.05 * SR) :]).max() < 1e-3  # the trailing quiet stays quiet
    quiet = np.convolve(np.abs(out) < 1e-4, np.ones(int(0.25 * SR)), mode="valid")
    assert quiet.max() == int(0.25 * SR)  # and the pause is still a pause
    f0_in = np.median(librosa.yin(two, fmin=60, fmax=400, sr=SR))
    f0_out = np.median(librosa.yin(out, fmin=60, fmax=400, sr=SR))
    assert f0_out / f0_in == pytest.approx(1.0, rel=0.06)  # slower, not lower
    assert augment.lengthen(two, 1.0, 0.3, SR) is two


def test_longer_pauses_add_silence_inside_each_pause_and_nowhere_else() -> None:
    speech = _speech()
    lead, pause = (np.zeros(int(s * SR), dtype=np.float32) for s in (0.2, 0.25))
    three = np.concatenate([lead, speech, pause, speech, pause, speech, lead])  # two pauses inside
    out = augment.longer_pauses(three, 0.4, SR)
    assert out.size - three.size == 2 * int(0.4 * SR)  # each pause inside, not the lead-in or the tail
    first, _ = speech_span(speech, SR)
    np.testing.assert_array_equal(out[: lead.size + first + 100], three[: lead.size + first + 100])
    np.testing.assert_array_equal(out[-lead.size :], three[-lead.size :])
    # what was said is all there, in order: the output less its longest silent runs is the input
    quiet = np.convolve(np.abs(out) < 1e-6, np.ones(int(0.6 * SR)), mode="valid")
    assert (quiet == int(0.6 * SR)).sum() > 0  # a pause now lasts over 0.6 s
    said = np.abs(out) > 1e-6
    np.testing.assert_array_equal(out[said], three[np.abs(three) > 1e-6])
    assert augment.longer_pauses(speech, 0.0, SR) is speech
    one = np.concatenate([lead, speech, lead])  # said in one breath: nothing to lengthen
    assert augment.longer_pauses(one, 0.4, SR).size == one.size


def test_vocal_tract_warp_moves_the_spectrum_the_right_way() -> None:
    speech = _speech()

    def centroid(audio: np.ndarray) -> float:
        freqs, power = signal.welch(audio, SR, nperseg=1024)
        return float((freqs * power).sum() / power.sum())

    t = np.arange(SR) / SR
    tone = np.sin(2 * np.pi * 1000 * t).astype(np.float32)
    for alpha in (0.85, 1.0, 1.15):  # below the knee a tone moves to alpha times its frequency
        assert centroid(augment.warp(tone, alpha, SR)) == pytest.approx(1000 * alpha, rel=0.01)
    low, high = centroid(augment.warp(speech, 0.85, SR)), centroid(augment.warp(speech, 1.15, SR))
    assert low < centroid(speech) < high


@pytest.mark.parametrize("rt60", [0.2, 0.6])
def test_reverb_tail_decays_at_the_drawn_rt60(rt60: float) -> None:
    """Schroeder's backward integral of the impulse falls 60 dB in rt60 (fitted from -5 to -25 dB, T20 x 3)."""
    rir = augment.room_impulse(rt60, drr_db=5.0, predelay_ms=10.0, sample_rate=SR, seed=1).astype(np.float64)
    delay = int(np.argmax(np.abs(rir)))
    assert delay == int(10.0 * SR / 1000)  # the direct path after the pre-delay
    tail = rir[delay + 1 :]
    assert 10 * np.log10(1.0 / np.sum(tail**2)) == pytest.approx(5.0, abs=0.01)  # the drawn DRR
    decay = 10 * np.log10(np.cumsum(tail[::-1] ** 2)[::-1] / np.sum(tail**2))
    t = np.arange(decay.size) / SR
    fit = (decay <= -5) & (decay >= -25)
    slope = np.polyfit(t[fit], decay[fit], 1)[0]  # dB per second
    assert -60 / slope == pytest.approx(rt60, rel=0.1)
    # on speech: same length, and the padding after the speech now rings
    speech = np.concatenate([_speech(), np.zeros(SR // 2, dtype=np.float32)])
    wet = augment.reverberate(speech, rir.astype(np.float32))
    assert wet.size == speech.size
    end = speech_span(_speech(), SR)[1]
    after = slice(end + 800, end + 1600)  # 50-100 ms after the speech ends
    assert np.sum(wet[after] ** 2) > 100 * (np.sum(speech[after] ** 2) + 1e-12)


def test_telephone_band_removes_energy_outside_it() -> None:
    speech = _speech()
    out = augment.telephone(speech, (300.0, 3400.0), SR)
    assert out.size == speech.size
    assert _band_share(speech, 0, 200) > 0.02 and _band_share(speech, 3800, 8000) > 0.005  # espeak-ng has both
    assert _band_share(out, 0, 200) < 1e-3
    assert _band_share(out, 3800, 8000) < 1e-3
    assert _band_share(out, 300, 3400) > 0.98


def test_eq_band_gain_at_its_centre() -> None:
    t = np.arange(SR) / SR
    tone = (0.1 * np.sin(2 * np.pi * 1000 * t)).astype(np.float32)
    out = augment.equalize(tone, ((1000.0, 6.0, 1.0),), SR)
    gain_db = 20 * np.log10(np.std(out[SR // 2 :]) / np.std(tone[SR // 2 :]))
    assert gain_db == pytest.approx(6.0, abs=0.1)


@pytest.mark.parametrize("soft", [False, True])
def test_clipping_stays_within_the_old_peak(soft: bool) -> None:
    speech = _speech()
    peak = float(np.abs(speech).max())
    out = augment.clip(speech, 12.0, soft)
    assert np.abs(out).max() <= peak * (1 + 1e-6)
    if not soft:
        assert np.mean(np.abs(out) >= peak * 0.999) > 0.01  # flat tops: a real share at the limit
    assert not np.allclose(out, speech, atol=1e-3)


def test_mu_law_round_trip() -> None:
    speech = _speech() / np.abs(_speech()).max() * 0.9
    assert augment.mu_law_decode(augment.mu_law_encode(speech)) == pytest.approx(speech, abs=1e-5)
    for mu_law, min_snr in ((True, 30.0), (False, 20.0)):
        out = augment.quantize(speech, mu_law)
        assert len(np.unique(out)) <= 256
        snr = 10 * np.log10(np.sum(speech**2) / np.sum((out - speech) ** 2))
        assert snr > min_snr


def test_babble_is_other_voices_at_the_drawn_snr() -> None:
    recipe = load_recipe(REPO / "recipes/commands.yaml", [*SMALL, "data.synth.augment.babble.share=1",
                                                          "data.synth.augment.babble.bank=3"])
    plans, *_ = corpus_plans(recipe.data, 1)
    plan = next(p for p in plans if p.split == "train" and p.text)
    assert plan.augment is not None and len(plan.augment.talkers) == 3
    drawn = augment.draw(plan.augment.settings, plan.seed, 3)
    assert drawn.active == ["babble"] and 2 <= len(drawn.babble[1]) <= 4
    clean = render(replace(plan, snr_db=None, augment=None), SR)
    noisy = render(replace(plan, snr_db=None), SR)
    residual = noisy - clean  # the babble alone (no peak limit hit: espeak-ng speech stays below 0.99)
    magnitude = np.abs(clean)
    speech_power = np.mean(clean[magnitude > 0.02 * magnitude.max()] ** 2)
    assert 10 * np.log10(speech_power / np.mean(residual**2)) == pytest.approx(drawn.babble[0], abs=0.5)


def test_draws_are_seeded_and_independent() -> None:
    """Same seed = same parameters; turning one augmentation on leaves the others' draws as they were."""
    some = AugmentSettings(speed={"share": 0.5}, reverb={"share": 0.5}, eq={"share": 0.5})
    more = AugmentSettings(speed={"share": 0.5}, reverb={"share": 0.5}, eq={"share": 0.5},
                           warp={"share": 1.0}, clip={"share": 1.0})
    seen = set()
    for number in range(200):
        a, b = augment.draw(some, (0, number)), augment.draw(more, (0, number))
        assert a == augment.draw(some, (0, number))
        assert (a.speed, a.reverb, a.eq) == (b.speed, b.reverb, b.eq)
        assert b.warp is not None and b.clip is not None and a.warp is None
        seen.add(a.speed is not None)
    assert seen == {True, False}  # share 0.5: some on, some off
    assert augment.draw(some, (1, 5)) != augment.draw(some, (0, 5)) or augment.draw(some, (1, 6)) != augment.draw(
        some, (0, 6)
    )


def test_same_seed_same_audio_and_off_is_the_old_corpus() -> None:
    recipe = load_recipe(REPO / "recipes/commands.yaml", [*SMALL, *ALL_ON])
    plain = load_recipe(REPO / "recipes/commands.yaml", SMALL)
    plans, *_ = corpus_plans(recipe.data, 1)
    old, *_ = corpus_plans(plain.data, 1)
    train = next(i for i, p in enumerate(plans) if p.split == "train" and p.text)
    test = next(i for i, p in enumerate(plans) if p.split == "test" and p.text)
    first = render(plans[train], SR)
    assert np.array_equal(first, render(plans[train], SR))
    assert not np.array_equal(first[: 1000], render(old[train], SR)[: 1000])
    # the test split is not augmented (only `splits`, train by default): its audio is the old corpus's
    assert plans[test].augment is None
    assert np.array_equal(render(plans[test], SR), render(old[test], SR))
    # augmentation off leaves the cache key of a corpus made before it existed
    assert _key(plain) == _key(load_recipe(REPO / "recipes/commands.yaml",
                                           [*SMALL, "data.synth.augment.speed.factor=[0.8,1.2]"]))
    assert _key(plain) != _key(recipe)
    # lengthen, added later, off: a corpus made with the others on before it existed is still fresh
    reverb = [*SMALL, "data.synth.augment.reverb.share=0.5"]
    assert _key(load_recipe(REPO / "recipes/commands.yaml", reverb)) == _key(
        load_recipe(REPO / "recipes/commands.yaml", [*reverb, "data.synth.augment.lengthen.factor=[1.1,1.3]"])
    )
    # and so for pauses, added after lengthen, with lengthen on (as the commands recipe has it)
    lengthen = [*SMALL, "data.synth.augment.lengthen.share=0.3"]
    assert _key(load_recipe(REPO / "recipes/commands.yaml", lengthen)) == _key(
        load_recipe(REPO / "recipes/commands.yaml", [*lengthen, "data.synth.augment.pauses.extra_s=[0.2,0.3]"])
    )
    assert _key(load_recipe(REPO / "recipes/commands.yaml", lengthen)) != _key(
        load_recipe(REPO / "recipes/commands.yaml", [*lengthen, "data.synth.augment.pauses.share=0.5"])
    )


def test_tiny_corpus_renders_with_everything_on(tmp_path: Path) -> None:
    recipe = load_recipe(REPO / "recipes/commands.yaml", [f"exp_dir={tmp_path}", *SMALL, *ALL_ON, "data.workers=2"])
    run_data_stage(recipe, Collect())
    train = read_manifest(recipe.data_dir / "train.jsonl")
    assert len(train) >= 20
    for utt in train[:10]:
        audio, rate = sf.read(utt.audio, dtype="float32")
        assert rate == SR and np.isfinite(audio).all() and 0 < np.abs(audio).max() <= 1.0
