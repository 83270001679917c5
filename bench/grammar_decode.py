"""Cost of the grammar scorer: beam search free vs grammar-constrained, in the same run.

Usage:
    OMP_NUM_THREADS=1 python bench/grammar_decode.py [--model exp/commands/model] [--recipe recipes/commands.yaml]
                                                     [--split test] [--beam 8] [--rounds 3] [--json]

The split's files are read and featurized once; then the search alone (encoder, CTC
head, beam search with its scorers, CTC gap) runs over them in batches as `seqx
transcribe` batches them, free and constrained alternately, `--rounds` times; the best
round of each is kept. RTF = search seconds / audio seconds. The Silero no-speech gate
is timed apart (it runs once per file, before the model, with or without a grammar).
Also: the automaton's size and compile time over the bundle's tokenizer.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from seqx.data.manifest import read_manifest  # noqa: E402
from seqx.decode.bundle import load_bundle  # noqa: E402
from seqx.decode.result import speech_part  # noqa: E402
from seqx.decode.transcribe import Constraint, featurize, search_checked  # noqa: E402
from seqx.featurize.audio import load_audio  # noqa: E402
from seqx.grammar.tokens import compile_tokens  # noqa: E402
from seqx.recipe import load_recipe  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="exp/commands/model")
    parser.add_argument("--recipe", default="recipes/commands.yaml")
    parser.add_argument("--split", default="test")
    parser.add_argument("--beam", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--set", action="append", default=[], dest="overrides", help="recipe override KEY=VALUE")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    torch.set_num_threads(1)
    recipe = load_recipe(args.recipe, args.overrides).for_device("cpu")
    bundle = load_bundle(args.model, device="cpu")
    if bundle.grammar is None:
        sys.exit(f"{args.model}: the bundle has no grammar")
    started = time.perf_counter()
    automaton = compile_tokens(bundle.grammar, bundle.tokenizer)
    compile_s = time.perf_counter() - started
    utts = [u for u in read_manifest(recipe.data_dir / f"{args.split}.jsonl") if u.text]
    waves = [load_audio(u.audio, bundle.sample_rate) for u in utts]
    audio_s = sum(w.numel() for w in waves) / bundle.sample_rate
    started = time.perf_counter()
    # the gate as decoding runs it: Silero over the file and the part around its sound (decode.speech_margin_s)
    parts = [speech_part(w.numpy(), bundle.sample_rate, bundle.decode.vad_threshold, bundle.decode.speech_margin_s)
             for w in waves]  # fmt: skip
    vad_rtf = (time.perf_counter() - started) / audio_s
    feats = sorted(
        (featurize(bundle, torch.from_numpy(p) if p is not None else w) for p, w in zip(parts, waves, strict=True)),
        key=lambda f: f.shape[0],
    )
    settings = bundle.decode.model_copy(update={"beam": args.beam, "precision": "fp32"})
    grammar = Constraint(bundle.grammar, automaton)
    # constrained+free: with the free beam (decode.free_beam) that rejection compares against
    modes = {"free": (Constraint(), 0), "constrained": (grammar, 0), "constrained+free": (grammar, settings.free_beam)}
    best = {mode: float("inf") for mode in modes}
    for _ in range(args.rounds):
        for mode, (constraint, free_beam) in modes.items():
            started = time.perf_counter()
            checked = settings.merged(free_beam=free_beam)
            for first in range(0, len(feats), settings.batch_size):
                batch = feats[first : first + settings.batch_size]
                search_checked(bundle, batch, checked, automaton=constraint.automaton)
            best[mode] = min(best[mode], time.perf_counter() - started)
    rtf = {mode: seconds / audio_s for mode, seconds in best.items()}
    figures = {
        "model": args.model, "split": args.split, "utterances": len(utts), "audio_s": round(audio_s, 1),
        "beam": args.beam, "ctc_weight": settings.ctc_weight, "batch_size": settings.batch_size,
        "rtf_free": round(rtf["free"], 4), "rtf_constrained": round(rtf["constrained"], 4),
        "ratio": round(rtf["constrained"] / rtf["free"], 3), "free_beam": settings.free_beam,
        "rtf_constrained_free": round(rtf["constrained+free"], 4),
        "ratio_with_free_beam": round(rtf["constrained+free"] / rtf["free"], 3), "vad_rtf": round(vad_rtf, 5),
        "automaton_states": automaton.num_states, "automaton_arcs": automaton.num_arcs,
        "vocab": automaton.vocab_size, "compile_s": round(compile_s, 3), "sentences": bundle.grammar.count(),
        "threads": torch.get_num_threads(),
    }  # fmt: skip
    if args.json:
        print(json.dumps(figures))
        return
    for key, value in figures.items():
        print(f"{key:18s} {value}")


if __name__ == "__main__":
    main()
