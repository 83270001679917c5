"""Clipped starts and pops: does the model make up a command when the start of one is cut off?

Usage:
    python bench/clipped_start.py [RECIPE] [--model DIR] [--set KEY=VALUE] [--gaps 0 0.3 0.5] [--json]

From every command of the recipe's test split it makes a copy whose start is cut off
(25-60% of the speech, from its first loud frame, drawn with a fixed seed: what
`data.synth.clipped_share` puts in a corpus), and six files holding only a saturated pop
(5-30 ms at full scale, half of them over faint noise). For each `decode.max_ctc_gap`
it transcribes the commands as they are, the clipped copies and the pops, and counts
correct transcripts and "no speech" results. The right answer for a clipped start or a
pop is nothing; the guard is worth having when it silences those and leaves the correct
transcripts of the whole commands alone.

It also cuts the synthetic lead-in off every command (the corpus plan says how long it
was): the whole command, starting where the voice starts, as a tightly cut file would.
A clipped start has no lead-in either, so these show whether a model (or a guard) has
learnt "speech from the first frame" instead of "half a command": they should still
come out right. Pass the recipe overrides the model was trained with (`--set`), so the
plans are the corpus's.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import numpy as np
import soundfile as sf
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from seqx.data.manifest import CLIPPED_SUFFIX, TIGHT_SUFFIX, read_manifest  # noqa: E402
from seqx.data.noise import NOISE_KINDS, make_noise  # noqa: E402
from seqx.data.synth import clip_start, corpus_plans  # noqa: E402
from seqx.decode.bundle import load_bundle  # noqa: E402
from seqx.decode.transcribe import transcribe_files  # noqa: E402
from seqx.recipe import DEFAULT_RECIPE, Recipe, load_recipe  # noqa: E402
from seqx.tokenize.text import normalize_text  # noqa: E402


def lead_in_seconds(recipe: Recipe, utts: list) -> dict[str, float]:
    """Each test command's synthetic lead-in, from the corpus plan (planned as `seqx data` does)."""
    if recipe.data.source != "synth":
        raise SystemExit(f"{recipe.data_dir}: not a synthetic corpus; the lead-ins are unknown")
    plans = {p.id: p for p in corpus_plans(recipe.data, workers=2)[0]}
    for utt in utts:
        if utt.id not in plans or plans[utt.id].text != utt.text:
            raise SystemExit(f"{utt.id}: the recipe plans another corpus; pass the model's --set overrides")
    return {utt.id: plans[utt.id].lead_s for utt in utts}


def make_inputs(
    utts: list, folder: Path, lead_in: dict[str, float], seed: int = 7
) -> tuple[list[str], list[str], list[str]]:
    """Clipped copies of the commands, ones without their lead-in and the pop files, under `folder`."""
    rng = np.random.default_rng(seed)
    clipped, trimmed = [], []
    for utt in utts:
        audio, rate = sf.read(utt.audio, dtype="float32")
        path = folder / f"clipped-{Path(utt.audio).name}"
        sf.write(path, clip_start(audio, rate, float(rng.uniform(0.25, 0.6))), rate)
        clipped.append(str(path))
        path = folder / f"trimmed-{Path(utt.audio).name}"
        sf.write(path, audio[int(lead_in[utt.id] * rate) :], rate)  # the synth's lead is int(lead_s * rate) zeros
        trimmed.append(str(path))
    pops = []
    for i in range(6):
        audio = np.zeros(16000)
        n = int(rng.integers(80, 480))
        audio[:n] = np.clip(rng.normal(0, 3, n), -1, 1)  # a saturated click: a key, a bumped microphone
        if i % 2:
            audio += make_noise(NOISE_KINDS[i % len(NOISE_KINDS)], 16000, 16000, rng) * 10 ** (-40 / 20)
        path = folder / f"pop-{i}.wav"
        sf.write(path, audio, 16000)
        pops.append(str(path))
    return clipped, trimmed, pops


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("recipe", nargs="?", default=str(DEFAULT_RECIPE))
    parser.add_argument("--model", type=Path, default=None)
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="recipe override, e.g. name=x")
    parser.add_argument("--gaps", type=float, nargs="+", default=[0.0, 0.3, 0.5], help="max_ctc_gap values (0 = off)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    recipe = load_recipe(args.recipe, args.set)
    bundle = load_bundle(args.model or recipe.bundle_dir)
    copies = (CLIPPED_SUFFIX, TIGHT_SUFFIX)  # the corpus's own copies of commands: the bench makes its own
    utts = [u for u in read_manifest(recipe.data_dir / "test.jsonl") if u.text and not u.id.endswith(copies)]
    refs = [normalize_text(u.text, bundle.tokenizer.settings) for u in utts]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        clipped, trimmed, pops = make_inputs(utts, Path(tmp), lead_in_seconds(recipe, utts))
        for gap in args.gaps:
            settings = bundle.decode.model_copy(update={"max_ctc_gap": gap})
            whole = transcribe_files(bundle, [u.audio for u in utts], settings)
            cut = transcribe_files(bundle, clipped, settings)
            popped = transcribe_files(bundle, pops, settings)
            tight = transcribe_files(bundle, trimmed, settings)
            rows.append(
                {
                    "max_ctc_gap": gap,
                    "commands": len(utts),
                    "correct": sum(r.text == ref for r, ref in zip(whole, refs)),
                    "commands_said_nothing": sum(r.no_speech for r in whole),
                    "clipped_said_nothing": sum(r.no_speech for r in cut),
                    "trimmed_correct": sum(r.text == ref for r, ref in zip(tight, refs)),
                    "trimmed_said_nothing": sum(r.no_speech for r in tight),
                    "pops_said_nothing": sum(r.no_speech for r in popped),
                    "pops": len(pops),
                }
            )
    if args.json:
        print(json.dumps({"model": str(args.model or recipe.bundle_dir), "rows": rows}, indent=1))
        return
    print(f"{len(utts)} test commands, as many clipped starts and tight trims, {rows[0]['pops']} pops")
    columns = {  # heading: row key
        "max_ctc_gap": "max_ctc_gap",
        "correct": "correct",
        "cmds->nothing": "commands_said_nothing",
        "clipped->nothing": "clipped_said_nothing",
        "trimmed correct": "trimmed_correct",
        "trimmed->nothing": "trimmed_said_nothing",
    }
    print(" ".join(f"{h:>{max(11, len(h))}s}" for h in columns), f"{'pops->nothing':>13s}")
    for r in rows:
        cells = " ".join(f"{r[key]:>{max(11, len(h))}g}" for h, key in columns.items())
        print(cells, f"{r['pops_said_nothing']:10d}/{r['pops']}")


if __name__ == "__main__":
    main()
