"""seqx beside PocketSphinx on the same test split: WER, sentence accuracy, real-time factor.

Usage:
    python bench/peer_pocketsphinx.py [RECIPE] [--split test] [--limit N] [--model DIR] [--skip-seqx]
                                      [--set KEY=VALUE] [--json]

PocketSphinx (PyPI `pocketsphinx`, whose wheel bundles the CMU en-us acoustic model,
dictionary and language model) decodes every utterance two ways:
  - `default LM`: its general English language model, out of the box;
  - `JSGF grammar`: constrained by a JSGF grammar generated from the recipe's command
    grammar (`seqx.grammar.jsgf`), the way offline voice commands are built with it today.
seqx decodes the same files with the recipe's trained bundle, greedy and beam (CTC joint).
All systems run single-process on the CPU, reading the same 16 kHz wav files; the real-time
factor is decode seconds / audio seconds (seqx's includes reading and featurizing; so does
PocketSphinx's). References and hypotheses are normalized by the same function. Utterances
with nothing said count as correct only when the output is empty.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import soundfile as sf
import soxr
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from seqx.data.manifest import read_manifest  # noqa: E402
from seqx.data.synth import corpus_grammar  # noqa: E402
from seqx.decode.metrics import pool, utterance_errors  # noqa: E402
from seqx.grammar.jsgf import grammar_to_jsgf  # noqa: E402
from seqx.recipe import DEFAULT_RECIPE, load_recipe  # noqa: E402
from seqx.tokenize.text import normalize_text  # noqa: E402


def pocketsphinx_decoder(jsgf: str | None, words: list[str]):  # noqa: ANN201
    from pocketsphinx import Decoder

    decoder = Decoder(loglevel="FATAL")
    add_missing_words(decoder, words)
    if jsgf is not None:
        decoder.add_jsgf_string("commands", jsgf)
        decoder.activate_search("commands")
    return decoder


PREFIXES = {"un": "AH N", "re": "R IY"}  # enough to spell words like "unmute" from the dictionary


def add_missing_words(decoder, words: list[str]) -> tuple[list[str], list[str]]:  # noqa: ANN001
    """Give PocketSphinx a pronunciation for grammar words its dictionary lacks, made from
    dictionary parts (a prefix + a word, or two words). Returns (added, still missing)."""
    added, missing = [], []
    for word in words:
        if decoder.lookup_word(word) is not None:
            continue
        phones = None
        for prefix, prefix_phones in PREFIXES.items():
            rest = word[len(prefix):]
            if word.startswith(prefix) and decoder.lookup_word(rest):
                phones = f"{prefix_phones} {decoder.lookup_word(rest)}"
        for cut in range(2, len(word) - 1):
            if phones is None and decoder.lookup_word(word[:cut]) and decoder.lookup_word(word[cut:]):
                phones = f"{decoder.lookup_word(word[:cut])} {decoder.lookup_word(word[cut:])}"
        if phones is None:
            missing.append(word)
        else:
            decoder.add_word(word, phones, True)
            added.append(word)
    return added, missing


def run_pocketsphinx(decoder, paths: list[str]) -> tuple[list[str], float]:  # noqa: ANN001
    hyps, seconds = [], 0.0
    for path in paths:
        start = time.perf_counter()
        audio, rate = sf.read(path, dtype="float32")
        if audio.ndim > 1:  # stereo (KTuberling's words): interleaved samples are not 16 kHz speech
            audio = audio.mean(axis=1)
        if rate != 16000:
            audio = soxr.resample(audio, rate, 16000)
        pcm = (audio.clip(-1, 1) * 32767).astype("int16").tobytes()
        decoder.start_utt()
        decoder.process_raw(pcm, full_utt=True)
        decoder.end_utt()
        hyp = decoder.hyp()
        seconds += time.perf_counter() - start
        hyps.append(hyp.hypstr if hyp is not None else "")
    return hyps, seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("recipe", nargs="?", default=str(DEFAULT_RECIPE))
    parser.add_argument("--split", default="test")
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--model", type=Path, default=None, help="seqx bundle (default: the recipe's)")
    parser.add_argument("--skip-seqx", action="store_true")
    parser.add_argument("--threads", type=int, default=1, help="torch threads for seqx (PocketSphinx uses one)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="recipe override, e.g. name=x")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    recipe = load_recipe(args.recipe, args.set)
    kind = "cuda" if torch.cuda.is_available() else "cpu"
    recipe = recipe.for_device(kind)
    utts = read_manifest(recipe.data_dir / f"{args.split}.jsonl")[: args.limit]
    paths = [u.audio for u in utts]
    audio_seconds = sum(u.duration for u in utts)
    grammar = corpus_grammar(recipe.data, recipe.name)
    jsgf = grammar_to_jsgf(grammar)
    refs = [normalize_text(u.text, recipe.tokenizer) for u in utts]

    words = grammar.vocabulary()
    from pocketsphinx import Decoder

    added, missing = add_missing_words(Decoder(loglevel="FATAL"), words)
    decoder = pocketsphinx_decoder(jsgf, words)
    systems: dict[str, tuple[list[str], float]] = {
        "PocketSphinx, default LM": run_pocketsphinx(pocketsphinx_decoder(None, words), paths),
        "PocketSphinx, JSGF grammar": run_pocketsphinx(decoder, paths),
    }
    if not args.skip_seqx:
        from seqx.decode.bundle import load_bundle
        from seqx.decode.transcribe import transcribe_files

        bundle = load_bundle(args.model or recipe.bundle_dir, device="cpu")
        transcribe_files(bundle, paths[:4], bundle.decode)  # warm-up
        for name, beam in (("seqx, greedy", 1), (f"seqx, beam {bundle.decode.beam} + CTC {bundle.decode.ctc_weight:g}", bundle.decode.beam)):
            settings = bundle.decode.model_copy(update={"beam": beam})
            start = time.perf_counter()
            results = transcribe_files(bundle, paths, settings)
            systems[name] = ([r.text for r in results], time.perf_counter() - start)

    rows = []
    for name, (hyps, seconds) in systems.items():
        hyps = [normalize_text(h, recipe.tokenizer) for h in hyps]
        errors = [utterance_errors(r, h) for r, h in zip(refs, hyps)]
        scores = pool(errors)
        nothing = [e for r, e in zip(refs, errors) if not r]
        rows.append({
            "system": name, "utterances": scores.utterances, "wer": scores.wer,
            "sentence_accuracy": scores.sentence_accuracy, "rtf": seconds / audio_seconds,
            "no_speech_accuracy": pool(nothing).sentence_accuracy if nothing else None,
        })
    summary = {"recipe": recipe.name, "split": args.split, "files": len(paths), "audio_seconds": audio_seconds,
               "words_added_to_pocketsphinx_dict": added, "words_still_missing": missing, "rows": rows}
    if args.json:
        print(json.dumps(summary, indent=1))
        return
    print(f"{recipe.name}/{args.split}: {len(paths)} files, {audio_seconds:.0f} s of audio; CPU, one thread each")
    if added or missing:
        print(f"added to PocketSphinx's dictionary: {', '.join(added) or '-'}; still missing: {', '.join(missing) or '-'}")
    print(f"{'system':36s} {'WER %':>7s} {'sent acc %':>10s} {'no speech %':>11s} {'RTF':>8s}")
    for r in rows:
        nothing = "-" if r["no_speech_accuracy"] is None else f"{100 * r['no_speech_accuracy']:.0f}"
        print(f"{r['system']:36s} {100 * r['wer']:7.2f} {100 * r['sentence_accuracy']:10.1f} {nothing:>11s} {r['rtf']:8.4f}")


if __name__ == "__main__":
    main()
