"""What a command recognizer must answer "not understood" to: out-of-grammar speech and noise.

Out-of-grammar (OOG) sentences are made from the grammar's own words, so they sound like
commands and share their pieces; each is checked with `grammar.accepts` to be outside it:

- shuffled: a grammar sentence with its words in another order;
- swapped: the start of a sentence of one template and the end of another's;
- random: 2-6 words drawn from the vocabulary.

They are spoken by the voices of one split (the test voices for `seqx evaluate`, the valid
voices to choose `decode.reject_margin`), with the corpus's rates, pitches, levels and noise
(seqx/data/synth.py renders them as it renders the corpus). Noise clips: white noise
(std 0.01, 0.1, 0.3), 8-bit random samples, the corpus noise bank's kinds at the same
levels, and silence. The set is written once under its folder and reused while the
grammar, voices and counts stay the same. Its manifest names each file relative to the folder:
an experiment made with a relative `exp_dir` (the default, `exp`) is evaluated from any working
directory, and a moved experiment folder keeps its negatives.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import soundfile as sf

from seqx.data.manifest import read_manifest
from seqx.data.noise import NOISE_KINDS, draw_noise
from seqx.data.sound_alike import sound_alike
from seqx.data.synth import OTHER_LENGTHS, Plan, other_word_share, render_files
from seqx.data.voices import all_voices, voice_name
from seqx.errors import SeqxError
from seqx.grammar.model import Grammar
from seqx.recipe import Recipe
from seqx.report import Collect, Reporter
from seqx.stage import atomic_write_text, fingerprint, is_fresh, mark_done
from seqx.workers import worker_pool

NOISE_LEVELS = (0.01, 0.1, 0.3)  # RMS (white: std) of the noise-only clips, full scale 1.0
NOISE_SECONDS = 2.0
OOG_KINDS = ("shuffled", "swapped", "random")
MAX_MISSES = 50  # draws in a row one strategy may fail before the next takes its turn
MANIFEST = "negatives.jsonl"
MAX_OTHER_WORDS = 8  # the longest everyday-English string
COMMAND_LENGTH_SHARE = 0.5  # of everyday-English strings as long as one of the grammar's commands


@dataclass(frozen=True)
class Negative:
    id: str
    audio: str
    kind: str  # "oog" or "noise"
    detail: str  # oog: shuffled/swapped/random; noise: white-0.3, 8bit, pink-0.1, silence ...
    said: str = ""  # the out-of-grammar sentence spoken ("" for noise)


def oog_sentences(grammar: Grammar, n: int, rng: np.random.Generator) -> list[tuple[str, str]]:
    """Up to n distinct (strategy, sentence) pairs of grammar words that the grammar does not
    accept (a grammar of a few short commands has fewer than n: all that were found).

    The strategies take turns. One that has failed MAX_MISSES draws in a row gives its turn to
    the next: a grammar of one-word commands has nothing to shuffle, and shuffles of a few
    two-word commands run out, and waiting for them found 6 sentences of 300 for KTuberling's 70
    words and 27 for alsa's 9 commands. Where no strategy runs dry the sentences are the same.
    """
    return _oog_search(grammar, n, rng)[0]


def oog_strategies_run_dry(grammar: Grammar, n: int, rng: np.random.Generator) -> bool:
    """Whether a strategy gives its turn away before n sentences are found: only then are the
    sentences other than those seqx made before the turns were given away (2026-11-29), so a
    corpus of such a grammar made before then is stale (seqx/data/stage.py keys it so)."""
    return _oog_search(grammar, n, rng)[1] > 0


def _oog_search(grammar: Grammar, n: int, rng: np.random.Generator) -> tuple[list[tuple[str, str]], int]:
    """oog_sentences's pairs and the number of turns given away."""
    vocab = grammar.vocabulary()
    found: dict[str, str] = {}
    turn = misses = 0
    for _ in range(200 * n):
        if len(found) >= n:
            break
        kind = OOG_KINDS[(len(found) + turn) % len(OOG_KINDS)]  # the three strategies in turn
        sentence = _oog_candidate(kind, grammar, vocab, rng)
        if sentence is not None and sentence not in found and not grammar.accepts(sentence):
            found[sentence] = kind
            misses = 0
        else:
            misses += 1
            if misses >= MAX_MISSES:
                turn, misses = turn + 1, 0
    return [(kind, sentence) for sentence, kind in found.items()], turn


def _oog_candidate(kind: str, grammar: Grammar, vocab: list[str], rng: np.random.Generator) -> str | None:
    """One sentence of grammar words made by strategy `kind` (None: a one-word command to shuffle)."""
    if kind == "shuffled":
        words = grammar.sample(rng).text.split()
        if len(words) < 2:
            return None
        words = [words[i] for i in rng.permutation(len(words))]
    elif kind == "swapped":
        a, b = grammar.sample(rng).text.split(), grammar.sample(rng).text.split()
        words = a[: int(rng.integers(1, len(a) + 1))] + b[int(rng.integers(0, len(b))) :]
    else:
        words = [vocab[int(i)] for i in rng.integers(len(vocab), size=int(rng.integers(2, 7)))]
    return " ".join(words)


def other_words(grammar: Grammar) -> list[str]:
    """seqx/data/other_words.txt's everyday English words that `grammar` does not use and that do
    not sound like one of its words ("see" for a grammar of letters: seqx/data/sound_alike.py)."""
    text = (Path(__file__).resolve().parents[1] / "data" / "other_words.txt").read_text()
    used = {w.lower() for w in grammar.vocabulary()}  # a grammar of "Coke" uses "coke"
    words = {w.lower() for line in text.splitlines() if not line.startswith("#") for w in line.split()} - used
    return sorted(words - sound_alike(words, used))


def other_word_sentences(grammar: Grammar, n: int, rng: np.random.Generator) -> list[tuple[str, str]]:
    """n ("other", sentence) pairs of 1 to 8 words, most of them words the grammar does not use
    (other_words) and about one in five its own: speech that is none of its commands.

    Half are as long as a command drawn from the grammar, the rest 1 to 8 words: a person who says
    something else to a recognizer of one-word commands says one word, and a length drawn from 1 to 8
    alone made that one string in eight.
    """
    pool, vocab = other_words(grammar), grammar.vocabulary()
    lowered = grammar.spoken(str.lower)  # pool words are lower case: "coke" is the command "Coke"
    found: list[tuple[str, str]] = []
    for _ in range(20 * n):
        if len(found) >= n:
            break
        if rng.random() < COMMAND_LENGTH_SHARE:
            length = min(len(grammar.sample(rng).text.split()), MAX_OTHER_WORDS)
        else:
            length = int(rng.integers(1, MAX_OTHER_WORDS + 1))
        words = [
            vocab[int(rng.integers(len(vocab)))] if rng.random() < 0.2 else pool[int(rng.integers(len(pool)))]
            for _ in range(length)
        ]
        sentence = " ".join(words)
        if not lowered.accepts(sentence.lower()):
            found.append(("other", sentence))
    return found


def noise_clip(detail: str, sample_rate: int, rng: np.random.Generator, seed: int) -> np.ndarray:
    """One noise-only clip: `white-0.3`, `8bit`, `pink-0.1` (any corpus noise kind), `silence`."""
    n = int(NOISE_SECONDS * sample_rate)
    if detail == "silence":
        return np.zeros(n, dtype=np.float32)
    if detail == "8bit":  # random bytes played as unsigned 8-bit PCM: full-scale noise
        return ((rng.integers(0, 256, n) - 128) / 128.0).astype(np.float32)
    kind, level = detail.rsplit("-", 1)
    return (draw_noise(kind, n, sample_rate, rng, seed=seed) * float(level)).clip(-1, 1).astype(np.float32)


def noise_details() -> list[str]:
    return [f"{kind}-{level:g}" for kind in NOISE_KINDS for level in NOISE_LEVELS] + ["8bit", "silence"]


def split_voices_of(recipe: Recipe, split: str) -> list:
    """The synth voices that speak `split` (by the speaker names its manifest records)."""
    manifest = recipe.data_dir / f"{split}.jsonl"
    if not manifest.is_file():
        raise SeqxError(f"{manifest}: no such manifest; run `seqx data {recipe.name}` first")
    names = {u.speaker for u in read_manifest(manifest)}
    voices = [v for v in all_voices(recipe.data.synth) if voice_name(v) in names]
    if not voices:
        raise SeqxError(f"{manifest}: its speakers are not voices of data.synth (a manifest corpus has no voices)")
    return sorted(voices, key=voice_name)


def build_negatives(
    recipe: Recipe,
    grammar: Grammar,
    split: str,
    folder: Path,
    n_oog: int = 120,
    noise_repeats: int = 2,
    reporter: Reporter | None = None,
) -> list[Negative]:
    """The negative set for `split` in `folder` (made once; reused while its inputs are the same)."""
    reporter = reporter or Collect()
    voices = split_voices_of(recipe, split)
    synth = recipe.data.synth
    other_share = other_word_share(synth, grammar)
    rng = np.random.default_rng([recipe.data.seed, 13, len(split)])
    # a grammar of a few words (digits, yes/no) gets everyday English in the share training hears
    # it (`oog_other_share`), and where its own words make too few out-of-grammar strings, for the
    # rest; from a stream of its own. Without it the digits set's false accepts read 0% while
    # people speaking of something else were answered 14 times in 19
    own = oog_sentences(grammar, n_oog - round(other_share * n_oog), rng)
    # keyed by whether everyday English is in the set at all (a share of it, or own words run dry
    # even at share 0): its strings changed on 2026-11-29, and such a set made before is stale
    key = fingerprint("negatives-3", grammar.to_dict(), [voice_name(v) for v in voices], n_oog, noise_repeats,
                      recipe.data.seed, recipe.data.sample_rate, synth.rate_wpm, synth.pitch, synth.amplitude,
                      synth.snr_db, synth.lead_s, synth.trail_s,
                      *([OTHER_LENGTHS] if len(own) < n_oog else []))  # fmt: skip
    if is_fresh(folder, key) and (folder / MANIFEST).is_file():
        return read_negatives(folder / MANIFEST)
    folder.mkdir(parents=True, exist_ok=True)
    said = [(f"oog-{i:04d}", kind, text, rng) for i, (kind, text) in enumerate(own)]
    other_rng = np.random.default_rng([recipe.data.seed, 17, len(split)])
    said += [(f"oog-other-{i:04d}", kind, text, other_rng)
             for i, (kind, text) in enumerate(other_word_sentences(grammar, n_oog - len(said), other_rng))]  # fmt: skip
    jobs = []
    for i, (name, kind, sentence, draw) in enumerate(said):
        voice = voices[int(draw.integers(len(voices)))]
        plan = Plan(
            id=name, split=split, text=sentence, voice=voice,
            rate=int(draw.integers(synth.rate_wpm[0], synth.rate_wpm[1] + 1)),
            pitch=int(draw.integers(synth.pitch[0], synth.pitch[1] + 1)),
            amplitude=int(draw.integers(synth.amplitude[0], synth.amplitude[1] + 1)),
            snr_db=float(draw.uniform(*synth.snr_db)) if draw.random() < synth.noise_share else None,
            noise_kind=NOISE_KINDS[int(draw.integers(len(NOISE_KINDS)))],
            lead_s=float(draw.uniform(*synth.lead_s)), trail_s=float(draw.uniform(*synth.trail_s)),
            seed=(recipe.data.seed, 90_000_000 + i),
        )  # fmt: skip
        jobs.append((plan, recipe.data.sample_rate, str(folder / f"{plan.id}.wav"), kind))
    task = reporter.task(f"negatives ({split})", total=len(jobs), unit="utt")
    negatives = []
    workers = min(len(jobs), recipe.data.workers or os.cpu_count() or 1)
    problems: dict[str, str | None] = {}
    with worker_pool(max(workers, 1)) as pool:  # in the corpus's jobs: piper seeded, festival fresh
        for plan_id, _, problem in render_files([job[:3] for job in jobs], pool):
            problems[plan_id] = problem
            task.advance(1)
    task.close()
    for plan, _, path, kind in jobs:
        if problems[plan.id]:
            reporter.warn(f"{plan.id} ({voice_name(plan.voice)}): {problems[plan.id]}")
        else:
            negatives.append(Negative(plan.id, path, "oog", kind, plan.text))
    for detail in noise_details():
        for r in range(noise_repeats):
            path = folder / f"noise-{detail}-{r}.wav"
            sf.write(path, noise_clip(detail, recipe.data.sample_rate, rng, recipe.data.seed + r), recipe.data.sample_rate,
                     subtype="PCM_16")  # fmt: skip
            negatives.append(Negative(path.stem, str(path), "noise", detail))
    rows = [{**asdict(n), "audio": Path(n.audio).name} for n in negatives]  # relative to the folder
    atomic_write_text(folder / MANIFEST, "".join(json.dumps(row) + "\n" for row in rows))
    mark_done(folder, key, oog=sum(n.kind == "oog" for n in negatives), noise=sum(n.kind == "noise" for n in negatives))
    return negatives


def read_negatives(path: Path) -> list[Negative]:
    """The set in a manifest, each file found in the manifest's folder. Sets written before the
    names were relative hold paths relative to the working directory they were made in; every
    file of a set is in its folder, so the name alone is enough for those too."""
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [Negative(**{**row, "audio": str(path.parent / Path(row["audio"]).name)}) for row in rows]
