"""`seqx data`: write exp/NAME/data/{train,valid,test}.jsonl from the recipe's source, cached."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from seqx.data import engines
from seqx.data.importers import read_checked
from seqx.data.manifest import Utterance, read_manifest, write_manifest
from seqx.data.synth import OTHER_LENGTHS, SPLITS, corpus_grammar, oog_strings_changed, other_word_share, synthesize
from seqx.errors import SeqxError
from seqx.faults import fault_point
from seqx.grammar.load import grammar_files, slot_files
from seqx.grammar.model import Grammar
from seqx.lock import stage_lock
from seqx.recipe import Recipe
from seqx.report import Collect, Reporter
from seqx.stage import atomic_write_text, file_signature, fingerprint, is_fresh, mark_done

# bump when the stage's output changes for the same settings
# 2: commands drawn from the grammar by template (not uniform over listed sentences), held out by hash
# 3: a sentence that is the last one saying some word is never held out (seqx/grammar/heldout.py)
STAGE_VERSION = 3


@dataclass
class DataReport:
    out_dir: str
    fresh: bool  # True: nothing to do, the manifests were already up to date
    counts: dict[str, int] = field(default_factory=dict)
    hours: dict[str, float] = field(default_factory=dict)
    speakers: dict[str, int] = field(default_factory=dict)
    skipped: list[tuple[str, str]] = field(default_factory=list)


def manifests_exist(recipe: Recipe) -> bool:
    return all((recipe.data_dir / f"{s}.jsonl").is_file() for s in SPLITS)


def _key(recipe: Recipe) -> str:
    """Settings that shape the output (not `workers`: the corpus is the same for any number) and inputs."""
    inputs = []
    if recipe.data.source == "manifest":
        m = recipe.data.manifest
        inputs = [input_signature(Path(p)) for p in (m.train, m.valid, m.test) if p]
    elif recipe.data.synth.grammar is not None and recipe.data.synth.grammar.file:
        # a grammar file: its contents count, and those of the JSGF files it imports
        inputs = [input_signature(f) for f in grammar_files(Path(recipe.data.synth.grammar.file))]
    elif recipe.data.synth.grammar is not None:  # a grammar in the recipe: the slot files it names count
        inputs = [input_signature(f) for f in slot_files(recipe.data.synth.grammar.model_dump()) if f.is_file()]
    if recipe.data.source == "synth" and recipe.data.synth.recordings:
        inputs.append(input_signature(Path(recipe.data.synth.recordings)))
    settings = recipe.data.model_dump(mode="json", exclude={"workers"})
    if not recipe.data.synth.augment.any_on:
        del settings["synth"]["augment"]  # all off: a corpus made before augmentation existed is still fresh
    else:
        for later in ("lengthen", "pauses"):  # added later: augmented corpora made before them stay fresh
            if not getattr(recipe.data.synth.augment, later).share:
                del settings["synth"]["augment"][later]
    other_share = settings["synth"]["oog_other_share"]
    synthesized = recipe.data.source == "synth"
    # built once, and only when a key below depends on it
    grammar = corpus_grammar(recipe.data) if synthesized and (recipe.data.synth.oog_share or other_share == "auto") else None
    if not settings["synth"]["oog_share"]:
        del settings["synth"]["oog_share"]  # added later: corpora made without it stay fresh
    elif grammar is not None and oog_strings_changed(recipe.data, grammar):
        settings["synth"]["oog_strings"] = 2  # a small grammar's strings since 2026-11-29: its old corpus is stale
    if other_share == "auto":  # keyed by what it means for this grammar: the same corpus is the same key
        other_share = other_word_share(recipe.data.synth, grammar) if grammar is not None else 0.0
    settings["synth"]["oog_other_share"] = other_share
    if not other_share:
        del settings["synth"]["oog_other_share"]  # the same
    elif recipe.data.synth.oog_share:
        settings["synth"]["other_lengths"] = OTHER_LENGTHS  # everyday English's lengths since 2026-11-29
    if not settings["synth"]["word_balance"]:
        del settings["synth"]["word_balance"]  # the same
    if "hibari" not in {*recipe.data.synth.engines, recipe.data.synth.test_engine}:
        del settings["synth"]["hibari_voices"]  # added later: corpora without hibari stay fresh
    if "pico" not in {*recipe.data.synth.engines, recipe.data.synth.test_engine}:
        del settings["synth"]["pico_voices"]  # the same
    if not settings["synth"]["pause_share"]:
        del settings["synth"]["pause_share"], settings["synth"]["pause_gaps"]  # the same
    if not settings["synth"]["say_as"]:
        del settings["synth"]["say_as"]  # the same
    if not settings["synth"]["recordings"]:
        del settings["synth"]["recordings"], settings["synth"]["recordings_repeat"]  # the same
    # the letter "a" told as its name, then a command's verb as a verb, since 2026-12-01 (engines.told);
    # everyday English holds "close" and "use"; numbers and symbols as words since 2026-12-02
    if synthesized:
        told_since = engines.text_changes(_grammar_words(recipe, grammar))
        if other_share:
            told_since = max(told_since, engines.TOLD_VERBS)
        if told_since:
            settings["synth"]["engine_text"] = told_since
    return fingerprint(STAGE_VERSION, settings, inputs)


def _grammar_words(recipe: Recipe, grammar: Grammar | None) -> list[str]:
    """The corpus grammar's words; none for a recipe without a grammar (synthesizing says why itself)."""
    try:
        return (grammar or corpus_grammar(recipe.data)).vocabulary()
    except SeqxError:
        return []


def input_signature(path: Path) -> object:
    """A manifest file's signature; for a Kaldi dir or a folder, that of every file in it."""
    if path.is_dir():
        return [file_signature(f) for f in sorted(path.rglob("*")) if f.is_file()]
    return file_signature(path) if path.is_file() else str(path)


def run_data_stage(recipe: Recipe, reporter: Reporter | None = None, force: bool = False) -> DataReport:
    reporter = reporter or Collect()
    with stage_lock(recipe.root, reporter):  # one run at a time per experiment folder
        return _run_data_stage(recipe, reporter, force)


def _run_data_stage(recipe: Recipe, reporter: Reporter, force: bool) -> DataReport:
    out_dir = recipe.data_dir
    key = _key(recipe)
    if not force and is_fresh(out_dir, key) and manifests_exist(recipe):
        manifests = {s: read_manifest(out_dir / f"{s}.jsonl") for s in SPLITS}
        return _report(out_dir, True, manifests, [])
    if recipe.data.source == "synth":
        from seqx.grammar.summary import shared_sentences, shared_warning, short_form_advice

        grammar = corpus_grammar(recipe.data)
        for note in grammar.notes:  # what reading the grammar left out
            reporter.warn(note)
        for found in shared_sentences(grammar):  # milliseconds
            reporter.warn(shared_warning(*found))
        for advice in short_form_advice(grammar):
            reporter.warn(advice)
        manifests, heldout, skipped = synthesize(recipe.data, out_dir, reporter, grammar)
        atomic_write_text(out_dir / "heldout_commands.txt", "".join(c + "\n" for c in heldout))
        if recipe.data.synth.recordings:
            own, bad = _own_recordings(recipe, reporter)
            manifests["train"], skipped = manifests["train"] + own, skipped + bad
    else:
        manifests, skipped = _import(recipe, reporter)
    for split, utts in manifests.items():
        if not utts:
            raise SeqxError(f"{out_dir / split}.jsonl: no usable utterances for the {split} split")
        write_manifest(out_dir / f"{split}.jsonl", utts)
        fault_point("data")
    mark_done(out_dir, key, skipped=len(skipped))
    return _report(out_dir, False, manifests, skipped)


def _own_recordings(recipe: Recipe, reporter: Reporter) -> tuple[list[Utterance], list[tuple[str, str]]]:
    """`data.synth.recordings`: the user's own voice beside the made ones, in train only (valid and test
    stay voices never heard, so their figures still say how a new voice fares), each recording
    `recordings_repeat` times: a few dozen among thousands would otherwise hardly count."""
    source = Path(recipe.data.synth.recordings or "")
    if not source.exists():
        raise SeqxError(f"data.synth.recordings: {source}: no such file or folder")
    kept, bad = read_checked(source, recipe.data.manifest, "recordings", recipe.data.max_duration, reporter)
    if not kept:
        raise SeqxError(f"data.synth.recordings: {source}: no usable recordings")
    repeat = recipe.data.synth.recordings_repeat
    reporter.info(f"data.synth.recordings: {len(kept)} recordings of {len({u.speaker for u in kept})} speaker(s), "
                  f"each {repeat} times in train")
    own = [replace(u, id=f"own-{u.id}-{k}", speaker=f"own:{u.speaker}") for k in range(repeat) for u in kept]
    return own, bad


def _import(recipe: Recipe, reporter: Reporter) -> tuple[dict[str, list[Utterance]], list[tuple[str, str]]]:
    settings = recipe.data.manifest
    if not settings.train:
        raise SeqxError("data.manifest.train: required when data.source is manifest")
    manifests: dict[str, list[Utterance]] = {}
    skipped: list[tuple[str, str]] = []
    for split in SPLITS:
        source = getattr(settings, split)
        if not source:
            continue
        kept, bad = read_checked(Path(source), settings, split, recipe.data.max_duration, reporter)
        manifests[split], skipped = kept, skipped + bad
    for split in ("valid", "test"):
        if split not in manifests:  # carve it out of train by speaker, so no speaker is in both
            train = manifests["train"]
            if len(train) < 3:
                raise SeqxError(
                    f"data.manifest.{split}: not set, and {len(train)} usable training utterance(s) are too few "
                    f"to hold some out for it; set data.manifest.valid and data.manifest.test"
                )
            # by speaker, so no speaker is in two splits; with too few speakers that cannot be, so by utterance
            by = "speaker" if len({u.speaker for u in train}) >= 3 else "utterance"
            manifests["train"], manifests[split] = _carve(train, 0.05, recipe.data.seed + len(split), by)
            reporter.info(
                f"data.manifest.{split} not set: {len(manifests[split])} utterances held out of train by {by}"
            )
    return {s: manifests[s] for s in SPLITS}, skipped


def _carve(utts: list[Utterance], share: float, seed: int, by: str) -> tuple[list[Utterance], list[Utterance]]:
    """(rest, held out): about `share` of `utts`, whole speakers at a time when `by` is "speaker"."""
    group = {u.id: (u.id if by == "utterance" else u.speaker) for u in utts}
    sizes = Counter(group.values())
    groups = sorted(sizes)
    np.random.default_rng(seed).shuffle(groups)
    want = max(1, round(len(utts) * share))
    chosen: set[str] = set()
    count = 0
    for name in groups[:-1] if len(groups) > 1 else groups:
        if count >= want:
            break
        chosen.add(name)
        count += sizes[name]
    return [u for u in utts if group[u.id] not in chosen], [u for u in utts if group[u.id] in chosen]


def _report(
    out_dir: Path, fresh: bool, manifests: dict[str, list[Utterance]], skipped: list[tuple[str, str]]
) -> DataReport:
    return DataReport(
        out_dir=str(out_dir),
        fresh=fresh,
        counts={s: len(u) for s, u in manifests.items()},
        hours={s: sum(x.duration for x in u) / 3600 for s, u in manifests.items()},
        speakers={s: len({x.speaker for x in u}) for s, u in manifests.items()},
        skipped=skipped,
    )
