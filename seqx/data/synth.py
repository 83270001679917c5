"""The synthetic voice-command corpus: real speech from espeak-ng, flite, festival and piper, with noise.

The whole corpus is planned first, in one process, from the seed: which command,
voice, rate, pitch, loudness, noise and padding each utterance gets. Workers then
only render plans, each from its own seeded generator, so the audio is
byte-identical for a seed whatever the number of workers or their scheduling.
One exception: piper draws its own noise inside its ONNX model, unseeded, so a
piper utterance with noise_scale or noise_w above 0 differs from run to run
(same words, voice and timing scales; what seqx draws is still fixed by the seed).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from multiprocessing.pool import Pool
from pathlib import Path

import numpy as np
import soundfile as sf
import soxr

from seqx.data import augment, engines
from seqx.data.coverage import seldom_warning
from seqx.data.manifest import CLIPPED_SUFFIX, TIGHT_SUFFIX, Utterance
from seqx.data.noise import NOISE_KINDS, draw_noise, mix_at_snr
from seqx.data.voices import all_voices, distinct_voices, split_voices, voice_name
from seqx.errors import SeqxError
from seqx.featurize.span import speech_span
from seqx.grammar.heldout import draw, kept_words
from seqx.grammar.load import grammar_from_settings
from seqx.grammar.model import Grammar
from seqx.recipe import (
    AUTO_OTHER_SHARE,
    ONE_WORD_COMMANDS_SHARE,
    SMALL_GRAMMAR_WORDS,
    DataSettings,
    SynthSettings,
    Voice,
)
from seqx.report import Reporter
from seqx.workers import worker_pool

SPLITS = ("train", "valid", "test")
HELDOUT_SHARE_IN_EVAL = 0.3  # of valid/test utterances that say a command never heard in training
CLIPPED_SEED_OFFSET = 5_000_000  # a clipped copy's noise seed: apart from every split's utterance seeds
TIGHT_SEED_OFFSET = 6_000_000  # ... and a tight copy's
OOG_SEED_OFFSET = 7_000_000  # ... and an out-of-grammar training utterance's
OOG_SUFFIX = "-oog"
ONE_WORD_SEED = 19  # one_word_share's fixed stream
OTHER_LENGTHS = 2  # everyday English since 2026-11-29: half command-long, no sound-alikes (negatives.py); keys say so


@dataclass(frozen=True)
class Plan:
    """Everything needed to render one utterance, decided up front."""

    id: str
    split: str
    text: str  # the transcript
    voice: Voice
    rate: int
    pitch: int
    amplitude: int
    snr_db: float | None  # None: no noise
    noise_kind: str
    lead_s: float
    trail_s: float
    seed: tuple[int, int]
    spoken: str = ""  # what the voice says when it is not the transcript (a clipped command)
    clip_start: float = 0.0  # share of the speech cut from its start (0: none)
    scales: tuple[float, float, float] | None = None  # piper's (length, noise, noise_w); None: the voice's own
    augment: augment.Augment | None = None  # waveform augmentation (seqx/data/augment.py); None: none

    @property
    def says(self) -> str:
        return self.spoken or self.text


def corpus_grammar(settings: DataSettings, name: str = "commands") -> Grammar:
    """The grammar the corpus is drawn from: `data.synth.grammar`, or the older templates/slots."""
    grammar = grammar_from_settings(settings.synth, name)
    if grammar is None:
        raise SeqxError("data.synth.grammar: the recipe has no command grammar")
    if grammar.count() == 0:
        raise SeqxError("data.synth.grammar: the grammar makes no commands")
    return grammar


def other_word_share(synth: SynthSettings, grammar: Grammar) -> float:
    """`oog_other_share` with `auto` resolved by the grammar's size: a grammar of a handful of words
    has hardly any out-of-grammar strings of its own words that are not nearly commands, so its model
    must hear everyday English to learn what "none of them" sounds like (recipe.SMALL_GRAMMAR_WORDS);
    so must a grammar of one-word commands, whose own-word strings are never one word long."""
    if synth.oog_other_share != "auto":
        return synth.oog_other_share
    small = len(grammar.vocabulary()) <= SMALL_GRAMMAR_WORDS
    return AUTO_OTHER_SHARE if small or one_word_share(grammar) >= ONE_WORD_COMMANDS_SHARE else 0.0


def one_word_share(grammar: Grammar, draws: int = 400) -> float:
    """The share of the grammar's commands, drawn by weight, that are one word (a fixed stream: the
    same grammar always gets the same answer, so a corpus's key does)."""
    rng = np.random.default_rng(ONE_WORD_SEED)
    return sum(len(grammar.sample(rng).text.split()) == 1 for _ in range(draws)) / draws


def plan_corpus(
    settings: DataSettings, voices: list[Voice] | None = None, grammar: Grammar | None = None
) -> tuple[list[Plan], list[str]]:
    """The utterance plans of all splits and the held-out commands they say.

    Sentences are drawn from the grammar (template by weight, uniform choices within), never
    listed; a command is held out of training by a hash of its text (seqx/grammar/heldout.py),
    so train never says one and about HELDOUT_SHARE_IN_EVAL of valid/test do. `voices`
    (default: every voice the settings name) are the speakers to split; pass the
    `distinct_voices` of them so that no two names for one sound straddle splits.
    """
    synth = settings.synth
    grammar = grammar or corpus_grammar(settings)
    by_split = split_voices(synth, settings.seed, voices)
    n_test = max(1, round(settings.size * synth.test_share))
    n_valid = max(1, round(settings.size * synth.valid_share))
    sizes = {"train": settings.size - n_test - n_valid, "valid": n_valid, "test": n_test}
    plans = []
    heldout: set[str] = set()
    for split_index, split in enumerate(SPLITS):
        split_rng = np.random.default_rng([settings.seed, 2, split_index])
        pick_voice = _voice_picker(by_split[split], synth.engine_weights)
        balance = synth.word_balance if split == "train" else 0.0  # valid and test say what users say
        pick_text = _text_picker(grammar, synth.heldout_command_share, settings.seed, split_index, balance)
        split_plans = []
        for i in range(sizes[split]):
            plan, is_heldout = _plan_one(split, i, split_index, split_rng, pick_voice, pick_text, settings)
            split_plans.append(plan)
            if is_heldout:
                heldout.add(plan.text)
        plans += split_plans + _clipped_and_tight_copies(split_plans, split_index, settings)
        if split == "train":
            plans += _out_of_grammar_plans(split_plans, grammar, settings)
    return plans, sorted(heldout)


def _text_picker(
    grammar: Grammar, share: float, seed: int, split_index: int, word_balance: float = 0.0
) -> Callable[[bool], str | None]:
    """Draws one split's commands, held out (True) or not (False); None when the grammar has none such.

    The sentences come from their own generator: a held-out command may take several draws,
    and the voice, rate and noise of an utterance should not depend on how many.
    """
    rng = np.random.default_rng([seed, 4, split_index])
    kept = kept_words(grammar, share, seed)

    def pick(heldout: bool) -> str | None:
        parse = draw(grammar, rng, share, seed, heldout, kept, word_balance)
        return None if parse is None else parse.text

    return pick


def _clipped_and_tight_copies(plans: list[Plan], split_index: int, settings: DataSettings) -> list[Plan]:
    """`clipped_share` of a split's commands twice more: cut off at the start, and whole but tight.

    A clipped copy keeps its command's voice and delivery, loses the start of its speech and
    its transcript, and gets no lead-in: the recording begins mid-speech, which is what a late
    start is. A tight copy is the same command whole, also with no lead-in, transcript kept.
    Without the tight copies "no lead-in" alone would tell a clipped start, and the model
    learns to silence every file cut tight to the first word; with them it must hear that the
    start of the command is missing.

    They come on top of the split's plans, from their own generator, so turning them on leaves
    every other utterance of the corpus as it was: a model trained with them can be compared
    with one trained without on the very same commands.
    """
    share = settings.synth.clipped_share
    commands = [p for p in plans if p.text]
    count = round(share * len(commands))
    if not count:
        return []
    rng = np.random.default_rng([settings.seed, 3, split_index])
    picked = sorted(rng.choice(len(commands), size=count, replace=False).tolist())
    copies = []
    for k in picked:
        source = commands[k]
        number = source.seed[1]
        clipped = replace(
            source,
            id=source.id + CLIPPED_SUFFIX,
            text="",
            spoken=source.text,
            clip_start=float(rng.uniform(*settings.synth.clipped_cut)),
            lead_s=0.0,
            seed=(source.seed[0], number + CLIPPED_SEED_OFFSET),
        )
        tight = replace(
            source, id=source.id + TIGHT_SUFFIX, lead_s=0.0, seed=(source.seed[0], number + TIGHT_SEED_OFFSET)
        )
        copies += [clipped, tight]
    return copies


def _oog_rng(seed: int) -> np.random.Generator:
    """The stream train's out-of-grammar strings are drawn from."""
    return np.random.default_rng([seed, 8])


def oog_strings_changed(settings: DataSettings, grammar: Grammar) -> bool:
    """Whether train's out-of-grammar strings differ from those seqx made before 2026-11-29, when
    a strategy that ran dry for a grammar started giving its turn away (seqx/decode/negatives.py):
    the data key says so, and a corpus of such a grammar made before is made again."""
    from seqx.decode.negatives import oog_strategies_run_dry  # negatives renders with this module

    asked = round(settings.synth.oog_share * settings.size)  # at least as many as the corpus asks for
    return bool(asked) and oog_strategies_run_dry(grammar, asked, _oog_rng(settings.seed))


def _out_of_grammar_plans(plans: list[Plan], grammar: Grammar, settings: DataSettings) -> list[Plan]:
    """`oog_share` of train's commands again as out-of-grammar word strings with their real transcripts.

    Sentences of the grammar's own words that it does not accept (shuffled, swapped, random:
    seqx/decode/negatives.py), each said with the voice and delivery of a train command. A model
    that has only ever heard commands hallucinates the nearest command for anything; one that
    heard these transcribes what was said, so its free decode disagreeing with the grammar's
    answer becomes a reason to reject. Train only (valid/test stay commands, and evaluate's
    negatives come from the valid/test voices); on top of the corpus and from their own
    generator, so every other utterance is the same with or without them. Never a command, so
    never a held-out one.
    """
    from seqx.decode.negatives import oog_sentences, other_word_sentences  # negatives renders with this module

    commands = [p for p in plans if p.text]
    count = round(settings.synth.oog_share * len(commands))
    if not count:
        return []
    rng = _oog_rng(settings.seed)
    others = round(other_word_share(settings.synth, grammar) * count)
    sentences = oog_sentences(grammar, count - others, rng)
    if others:  # their own generator: the grammar-word strings are the same with or without them
        sentences += other_word_sentences(grammar, others, np.random.default_rng([settings.seed, 9]))
    picked = rng.choice(len(commands), size=len(sentences), replace=len(sentences) > len(commands))
    return [
        replace(
            commands[int(k)],
            id=f"train-{i:06d}{OOG_SUFFIX}",
            text=sentence,
            spoken="",
            seed=(settings.seed, OOG_SEED_OFFSET + i),
        )
        for i, ((_, sentence), k) in enumerate(zip(sentences, picked, strict=True))
    ]


def _voice_picker(voices: list[Voice], engine_weights: dict[str, float]) -> Callable[[np.random.Generator], Voice]:
    """Draws one split's voice per utterance: uniform over voices, or engine by weight first.

    Built once per split so that each utterance costs one or two draws, not a regrouping
    of the split's voices.
    """
    by_engine: dict[str, list[Voice]] = {}
    for voice in voices:
        by_engine.setdefault(voice.engine, []).append(voice)
    if not engine_weights or len(by_engine) < 2:
        return lambda rng: voices[rng.integers(len(voices))]  # the draw the corpus always made: old corpora stay
    engines = sorted(by_engine)
    weights = np.array([engine_weights.get(e, 1.0) for e in engines])
    shares = weights / weights.sum()

    def pick(rng: np.random.Generator) -> Voice:
        pool = by_engine[engines[rng.choice(len(engines), p=shares)]]
        return pool[rng.integers(len(pool))]

    return pick


def _plan_one(
    split: str,
    i: int,
    split_index: int,
    rng: np.random.Generator,
    pick_voice: Callable[[np.random.Generator], Voice],
    pick_text: Callable[[bool], str | None],
    settings: DataSettings,
) -> tuple[Plan, bool]:
    synth = settings.synth
    text, heldout = "", False
    if rng.random() >= synth.empty_share:
        if split != "train" and synth.heldout_command_share > 0 and rng.random() < HELDOUT_SHARE_IN_EVAL:
            text, heldout = pick_text(True) or "", True
        if not text:
            text, heldout = pick_text(False) or "", False
            if not text:
                raise SeqxError("data.synth.heldout_command_share: every command drawn is held out; lower the share")
    plan = Plan(
        id=f"{split}-{i:06d}",
        split=split,
        text=text,
        voice=pick_voice(rng),
        rate=int(rng.integers(synth.rate_wpm[0], synth.rate_wpm[1] + 1)),
        pitch=int(rng.integers(synth.pitch[0], synth.pitch[1] + 1)),
        amplitude=int(rng.integers(synth.amplitude[0], synth.amplitude[1] + 1)),
        snr_db=float(rng.uniform(*synth.snr_db)) if rng.random() < synth.noise_share or not text else None,
        noise_kind=NOISE_KINDS[rng.integers(len(NOISE_KINDS))],
        lead_s=float(rng.uniform(*synth.lead_s)),
        trail_s=float(rng.uniform(*synth.trail_s)),
        seed=(settings.seed, split_index * 10_000_000 + i),
    )
    return plan, heldout


def speak(
    text: str,
    voice: Voice,
    rate: int,
    pitch: int,
    amplitude: int,
    scales: tuple[float, float, float] | None = None,
    stream: int | None = None,
) -> tuple[np.ndarray, int]:
    """Run the voice's engine (seqx/data/engines.py); returns mono float32 samples and their rate."""
    how = engines.Delivery(rate=rate, pitch=pitch, amplitude=amplitude, stream=stream)
    if scales is not None:
        how = replace(how, length_scale=scales[0], noise_scale=scales[1], noise_w=scales[2])
    return engines.speak(text, voice, how)


def with_piper_scales(plans: list[Plan], synth: SynthSettings) -> list[Plan]:
    """Piper voices' plans with their (length, noise, noise_w) drawn from the recipe's ranges.

    Each from its own generator, seeded by the recipe's seed and the plan's id (less a clipped or
    tight copy's suffix: a copy keeps its command's delivery), so adding piper to a recipe leaves
    every other utterance's draws as they were. With `piper_scale_levels` each scale is one of
    that many evenly spaced values, so utterances share piper processes (see render_order).
    """
    ranges = (synth.piper_length_scale, synth.piper_noise_scale, synth.piper_noise_w)
    levels = synth.piper_scale_levels
    drawn = []
    for plan in plans:
        if plan.voice.engine == "piper":
            source_id = plan.id.removesuffix(CLIPPED_SUFFIX).removesuffix(TIGHT_SUFFIX)
            rng = np.random.default_rng([plan.seed[0], 7, zlib.crc32(source_id.encode())])
            if levels:
                steps = rng.integers(levels, size=3) / max(levels - 1, 1) if levels > 1 else np.full(3, 0.5)
                values = [lo + step * (hi - lo) for (lo, hi), step in zip(ranges, steps)]
            else:
                values = [rng.uniform(lo, hi) for lo, hi in ranges]
            plan = replace(plan, scales=tuple(round(float(v), 3) for v in values))
        drawn.append(plan)
    return drawn


def with_augmentation(plans: list[Plan], settings: DataSettings) -> list[Plan]:
    """The plans of `data.synth.augment.splits` set to be augmented (their parameters are drawn in render).

    When babble is on, its bank is a few training sentences (text, voice and delivery), drawn
    from their own generator: every render worker says them once and cuts babble from them.
    Plans are otherwise untouched, so the corpus with augmentation off is the one without.
    """
    settings_ = settings.synth.augment
    if not settings_.any_on:
        return plans
    talkers: tuple[augment.Talker, ...] = ()
    if settings_.babble.share > 0:
        sources = [p for p in plans if p.split == "train" and p.text and not p.spoken and not p.clip_start]
        rng = np.random.default_rng([settings.seed, augment.STREAM, augment.BANK_STREAM])
        picked = rng.choice(len(sources), size=min(settings_.babble.bank, len(sources)), replace=False)
        talkers = tuple(
            augment.Talker(sources[k].text, sources[k].voice, sources[k].rate, sources[k].pitch, sources[k].amplitude)
            for k in sorted(picked.tolist())
        )
    how = augment.Augment(settings_, talkers)
    return [replace(p, augment=how) if p.split in settings_.splits else p for p in plans]


PAUSE_STREAM = 11  # with_pauses' generator stream: apart from piper's scales (7) and the augmentations


def with_pauses(plans: list[Plan], settings: DataSettings) -> list[Plan]:
    """Train's plans, `pause_share` of them said with commas in some gaps between words.

    Each plan draws from its own generator (the recipe's seed and its id), so turning pauses on
    changes no other draw, and a plan keeps its transcript: only what the voice is given to say
    (`spoken`) has the commas. Clipped copies (already `spoken`) and nothing-said plans are left
    as they are.
    """
    synth = settings.synth
    if synth.pause_share <= 0:
        return plans
    paused = []
    for plan in plans:
        words = plan.text.split()
        if plan.split == "train" and len(words) > 1 and not plan.spoken:
            rng = np.random.default_rng([settings.seed, PAUSE_STREAM, zlib.crc32(plan.id.encode())])
            if rng.random() < synth.pause_share:
                gaps = rng.random(len(words) - 1) < synth.pause_gaps
                gaps[rng.integers(len(gaps))] = True  # at least one pause
                said = "".join(w + (", " if g else " ") for w, g in zip(words, gaps)) + words[-1]
                plan = replace(plan, spoken=said)
        paused.append(plan)
    return paused


def said_as(text: str, say_as: dict[str, str]) -> str:
    """`text` with each word or phrase of `say_as` (whole words, any case; a phrase's words may have a
    pause's comma between them, which goes with it) replaced by what the engines are told instead; the
    longest phrase first, and nothing replaced twice."""
    if not say_as:
        return text

    def words(phrase: str) -> str:
        return " ".join(phrase.lower().replace(",", " ").split())

    told = {words(k): v for k, v in say_as.items()}
    phrases = "|".join(r",?\s+".join(re.escape(w) for w in k.split()) for k in sorted(told, key=len, reverse=True))
    pattern = r"(?<![\w'])(" + phrases + r")(?![\w'])"
    return re.sub(pattern, lambda m: told[words(m.group(1))], text, flags=re.IGNORECASE)


def check_say_as(settings: DataSettings, grammar: Grammar) -> None:
    """A `data.synth.say_as` word the grammar never says is a typo the recipe would otherwise carry
    silently: an error, before the engines are probed."""
    if not settings.synth.say_as:
        return
    words = set(grammar.vocabulary())
    for key in settings.synth.say_as:
        missing = [w for w in key.lower().split() if w not in words]
        if missing:
            raise SeqxError(f"data.synth.say_as: {key!r} is not said by the grammar ({', '.join(missing)} is no word of it)")


def with_say_as(plans: list[Plan], settings: DataSettings) -> list[Plan]:
    """Every plan whose words `data.synth.say_as` names is said as it says (`spoken`), its transcript
    kept (`check_say_as` has checked the words)."""
    say_as = settings.synth.say_as
    if not say_as:
        return plans
    out = []
    for plan in plans:
        said = said_as(plan.says, say_as)
        out.append(plan if said == plan.says else replace(plan, spoken=said))
    return out


def render_order(plans: list[Plan]) -> list[Plan]:
    """The plans in the order to render them: the other engines', then festival's, then piper's
    grouped by voice and setting. Within each the plans keep their order (render_groups)."""
    return sorted(plans, key=_job_kind)


def _piper_setting(plan: Plan) -> tuple:
    return (plan.voice.language, plan.voice.variant, plan.scales or ())


def _job_kind(plan: Plan) -> tuple:
    """Plans that may share a render job: the engines without state between utterances (0),
    festival (1), one piper voice and setting (2, ...)."""
    engine = plan.voice.engine
    if engine == "piper":
        return (2, *_piper_setting(plan))
    return (int(engine == "festival"),)


OTHERS_PER_JOB = 8  # plans of the other engines a render job holds: fewer round trips to the workers
FESTIVAL_PER_JOB = 64  # festival's plans a job holds, said by a fresh festival (0.2-0.3 s to start)


def render_groups(plans: list[Plan]) -> list[list[Plan]]:
    """render_order's plans in the jobs a worker renders whole: one per piper voice and setting,
    festival's FESTIVAL_PER_JOB at a time, the other engines' OTHERS_PER_JOB at a time.

    Piper and festival carry state from one utterance to the next in the process a worker keeps:
    piper its noise generator, festival something that now and then changes how kal_diphone says
    a command after others (7 of 908 festival utterances differed said in reverse order). So each
    of their jobs is said in order by a fresh process (piper's seeded, piper_stream; festival's
    with fixed addresses, engines.fixed_addresses), and a corpus is made the same whichever
    worker gets which job. Before piper was seeded a corpus made twice differed in a
    quarter of its files, and after it in one festival file, and so did the models trained on it.
    """
    groups: list[list[Plan]] = []
    for plan in render_order(plans):
        if groups and _joins(groups[-1], plan):
            groups[-1].append(plan)
        else:
            groups.append([plan])
    return groups


def _joins(job: list[Plan], plan: Plan) -> bool:
    kind = _job_kind(plan)
    if kind != _job_kind(job[0]):
        return False
    return kind[0] == 2 or len(job) < (FESTIVAL_PER_JOB if kind[0] == 1 else OTHERS_PER_JOB)


def piper_stream(plan: Plan) -> int:
    """The noise seed of the piper group `plan` starts: the corpus seed, the voice and the setting."""
    return zlib.crc32(repr((plan.seed[0], *_piper_setting(plan))).encode())


def render(plan: Plan, sample_rate: int, stream: int | None = None) -> np.ndarray:
    """The utterance's samples at `sample_rate`: speech (or nothing), padding and noise; `stream`:
    the seed of piper's noise (render_groups), None for unseeded."""
    rng = np.random.default_rng(list(plan.seed))
    drawn = augment.draw(plan.augment.settings, plan.seed, len(plan.augment.talkers)) if plan.augment else None
    if plan.says:
        speech, rate_hz = speak(plan.says, plan.voice, plan.rate, plan.pitch, plan.amplitude, plan.scales, stream)
        if speech.ndim > 1:
            speech = speech.mean(axis=1)
        if rate_hz != sample_rate:
            speech = soxr.resample(speech, rate_hz, sample_rate).astype(np.float32)
        if plan.clip_start > 0:
            speech = clip_start(speech, sample_rate, plan.clip_start)
        if drawn is not None:
            speech = augment.apply_speaker(speech, drawn, sample_rate)
    else:
        speech = np.zeros(int(rng.uniform(0.5, 2.0) * sample_rate), dtype=np.float32)
    lead, trail = (np.zeros(int(s * sample_rate), dtype=np.float32) for s in (plan.lead_s, plan.trail_s))
    audio = np.concatenate([lead, speech, trail])
    if drawn is not None and plan.augment is not None:
        audio = augment.apply_room(audio, drawn, plan.augment, sample_rate, speaking=bool(plan.says))
    if plan.snr_db is not None:
        noise = draw_noise(plan.noise_kind, audio.size, sample_rate, rng, seed=plan.seed[0])
        if plan.says:
            audio = mix_at_snr(audio, noise, plan.snr_db)
        else:  # nothing said: noise alone, at a level speech would have had at this SNR
            audio = audio + noise * 10 ** (rng.uniform(-55, -25) / 20)
    peak = np.abs(audio).max()
    if peak > 0.99:
        audio = audio * (0.99 / peak)
    if drawn is not None:
        audio = augment.apply_channel(audio, drawn, sample_rate)
    return audio.astype(np.float32)


def clip_start(speech: np.ndarray, sample_rate: int, share: float) -> np.ndarray:
    """The speech from `share` of the way between its first and last loud frame: the start is gone."""
    first, last = speech_span(speech, sample_rate)
    return speech[first + int(share * (last - first)) :]


def _render_to_file(job: tuple[Plan, int, str], stream: int | None = None) -> tuple[str, float, str | None]:
    plan, sample_rate, path = job
    try:
        audio = render(plan, sample_rate, stream)
    except (subprocess.SubprocessError, OSError, RuntimeError, ValueError, SeqxError) as err:
        return plan.id, 0.0, f"{plan.voice.engine} failed: {str(err).splitlines()[0][:200]}"
    sf.write(path, audio, sample_rate, subtype="PCM_16")
    return plan.id, audio.size / sample_rate, None


def _render_group_to_files(group: list[tuple[Plan, int, str]]) -> list[tuple[str, float, str | None]]:
    """One render_groups job: other engines' plans as they come; festival's from a fresh festival,
    a piper group from a fresh piper seeded for it, each in order."""
    first = group[0][0]
    if first.voice.engine == "festival":
        engines.FESTIVAL.fresh()  # one kept from another job has said other things before
    if first.voice.engine != "piper":
        return [_render_to_file(job) for job in group]
    engines.PIPER.fresh()  # a process kept from another group (or corpus) is mid-stream
    stream = piper_stream(first)
    return [_render_to_file(job, stream) for job in group]


def render_files(jobs: list[tuple[Plan, int, str]], pool: Pool) -> Iterator[tuple[str, float, str | None]]:
    """Each (plan, sample rate, path) rendered to its file by the pool's workers in render_groups'
    jobs; (plan id, seconds, problem or None) as each job is done, in render order."""
    by_id = {job[0].id: job for job in jobs}
    groups = [[by_id[p.id] for p in group] for group in render_groups([job[0] for job in jobs])]
    for results in pool.imap(_render_group_to_files, groups):
        yield from results


def check_engines(voices: list[Voice]) -> None:
    """Fail once, clearly, when an engine cannot run at all (rather than once per utterance)."""
    for engine in sorted({v.engine for v in voices}):
        engines.check_engine(engine)
    installed = {
        "piper": tuple(engines.piper_models()),
        "festival": (),
        "hibari": engines.hibari_voices(),
        "pico": tuple(engines.Pico.LANGUAGES),
    }
    if any(v.engine == "festival" for v in voices):
        installed["festival"] = engines.ENGINES["festival"].names()
    for engine, setting, field in (
        ("piper", "piper_voices", "language"),
        ("festival", "festival_voices", "variant"),
        ("hibari", "hibari_voices", "variant"),
        ("pico", "pico_voices", "variant"),
    ):
        missing = sorted({getattr(v, field) for v in voices if v.engine == engine} - set(installed[engine]))
        if missing:
            raise SeqxError(
                f"data.synth.{setting}: {', '.join(missing)} not installed (installed: "
                f"{', '.join(installed[engine]) or 'none'}); {engines.ENGINES[engine].install}"
            )


def corpus_plans(
    settings: DataSettings, workers: int, grammar: Grammar | None = None
) -> tuple[list[Plan], list[str], list[Voice], list[tuple[str, str]]]:
    """The plans `synthesize` renders, the held-out commands, the voices kept and those left out (with why).

    The engines are probed here, since which voices sound alike decides the speaker split;
    a benchmark that needs to know how an utterance was made asks this instead of re-planning.
    `grammar`: the settings' `corpus_grammar`, when the caller has it already.
    """
    grammar = grammar or corpus_grammar(settings)
    check_say_as(settings, grammar)
    voices = all_voices(settings.synth)
    check_engines(voices)
    voices, dropped = distinct_voices(voices, workers)
    plans, heldout = plan_corpus(settings, voices, grammar)
    plans = with_augmentation(with_piper_scales(plans, settings.synth), settings)
    return with_say_as(with_pauses(plans, settings), settings), heldout, voices, dropped


def synthesize(
    settings: DataSettings, out_dir: Path, reporter: Reporter, grammar: Grammar | None = None
) -> tuple[dict[str, list[Utterance]], list[str], list[tuple[str, str]]]:
    """Render the planned corpus under out_dir/audio/SPLIT/; returns manifests, held-out commands, skipped.
    `grammar`: the settings' `corpus_grammar`, when the caller has it already."""
    workers = settings.workers or os.cpu_count() or 1
    grammar = grammar or corpus_grammar(settings)
    plans, heldout, voices, dropped = corpus_plans(settings, workers, grammar)
    warning = seldom_warning(grammar, (p.text for p in plans if p.split == "train"), settings.size)
    if warning:
        reporter.warn(f"data.synth: {warning}")
    if dropped:
        shown = "; ".join(f"{name} {why}" for name, why in dropped[:3])
        more = f"; and {len(dropped) - 3} more" if len(dropped) > 3 else ""
        reporter.info(f"data.synth: {len(voices)} distinct voices; left out {len(dropped)}: {shown}{more}")
    shutil.rmtree(out_dir / "audio", ignore_errors=True)  # a smaller corpus must not leave the old one's files
    for split in SPLITS:
        (out_dir / "audio" / split).mkdir(parents=True, exist_ok=True)
    jobs = [(p, settings.sample_rate, str(out_dir / "audio" / p.split / f"{p.id}.wav")) for p in plans]
    manifests: dict[str, list[Utterance]] = {s: [] for s in SPLITS}
    skipped: list[tuple[str, str]] = []
    by_id = {p.id: (p, path) for p, _, path in jobs}
    task = reporter.task("synthesize", total=len(by_id), unit="utt")
    with worker_pool(workers) as pool:
        for utt_id, duration, problem in render_files(jobs, pool):
            plan, path = by_id[utt_id]
            if not problem and duration > settings.max_duration:
                problem = f"longer than data.max_duration ({duration:.1f} s > {settings.max_duration:g} s)"
                Path(path).unlink(missing_ok=True)
            if problem:
                skipped.append((utt_id, problem))
                reporter.warn(f"{utt_id} ({voice_name(plan.voice)}): {problem}")
            else:
                manifests[plan.split].append(
                    Utterance(utt_id, path, plan.text, round(duration, 4), voice_name(plan.voice))
                )
            task.advance(1)
    task.close()
    planned = {p.id: i for i, p in enumerate(plans)}  # manifests in plan order, whatever the render order
    for utterances in manifests.values():
        utterances.sort(key=lambda u: planned[u.id])
    skipped.sort(key=lambda item: planned[item[0]])
    return manifests, heldout, skipped
