"""Files or waves in, `Result`s out, with an exported model: seqx/decode/transcribe.py's flow
(read, gates, length-sorted batches, search, free beam, verdict, long files cut at pauses) over
onnxruntime + numpy. Everything that decides (the gates, the ranking, the rejection rules, the
intent/slot parse, the Result itself) is seqx/decode/result.py, the torch path's own code.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from seqx.decode.result import (
    Hypothesis, Result, Rules, Searched, ctc_best_paths, gate, join_pieces, joint_gaps, judge, note,
)  # fmt: skip
from seqx.decode.slot_rescore import HeadLayout, Rescorer, rerank_all
from seqx.errors import AudioError, SeqxError
from seqx.featurize.samples import read_audio
from seqx.runtime.ctc import ctc_gaps, forgiven, word_starts
from seqx.runtime.model import ExportedModel
from seqx.runtime.search import decode_batch

CONV_MIN_FRAMES = 7  # seqx.model.frontend: the conv2d front-end's shortest input
SETTINGS = (
    "beam", "nbest", "ctc_weight", "free_ctc_weight", "length_penalty", "max_len_ratio", "max_len", "batch_size",
    "max_segment_s", "min_confidence", "max_ctc_gap", "silence_dbfs", "grammar", "reject_margin", "free_beam",
    "reject_distance", "vad_threshold", "slot_weight", "speech_margin_s", "views", "reject_nbest_margin",
    "reject_distance_slack", "gap_forgives_insertions", "vad_gate", "floor_snr_db", "gap_span_factor", "gap_spans",
)  # fmt: skip
# an export's config from before a setting existed
DEFAULTS = {"grammar": "recipe", "free_ctc_weight": None, "reject_margin": "auto", "free_beam": 0,
            "reject_distance": "auto", "vad_threshold": 0.0, "max_segment_s": 20.0, "slot_weight": 0.0,
            "speech_margin_s": 0.5, "views": 1, "reject_nbest_margin": 0.0,
            "reject_distance_slack": 0, "gap_forgives_insertions": False,
            "vad_gate": None, "floor_snr_db": None, "gap_span_factor": 0.0, "gap_spans": None}


def settings_for(model: ExportedModel, **options: Any) -> dict[str, Any]:
    """The folder's decode settings with the caller's options (None = keep); greedy = beam 1;
    nbest K widens the beam to at least K (DecodeSettings.merged's rules). `grammar`: `recipe`
    (the grammar the model was exported with) or `none`; a grammar file needs an export made with it."""
    settings = {**DEFAULTS, **{k: model.decode[k] for k in SETTINGS if k in model.decode}}
    changes = {k: v for k, v in options.items() if v is not None and k != "greedy" and k in SETTINGS}
    if changes.get("grammar") not in (None, "recipe", "none"):
        raise SeqxError(f"--grammar {changes['grammar']}: an exported model decodes with the grammar it was exported "
                        f"with (recipe) or none; for another, export with it: seqx export --grammar FILE")
    if options.get("greedy"):
        changes["beam"] = 1
    if "nbest" in changes:
        changes["beam"] = max(int(changes.get("beam", settings["beam"])), int(changes["nbest"]))
    return {**settings, **changes}


def constrained(model: ExportedModel, settings: dict[str, Any]) -> bool:
    """Whether the search is held to the export's grammar (Bundle.decode_grammar's `recipe` and `none`)."""
    return settings["grammar"] == "recipe" and model.grammar is not None


def rescorer_for(model: ExportedModel, settings: dict[str, Any]) -> Rescorer | None:
    """The intent/slot heads' vote (seqx.decode.transcribe.Constraint.of's rule): an export of a
    model with heads, held to the grammar they were built from, with decode.slot_weight > 0."""
    layout = HeadLayout.from_json(model.config.get("slot_heads"))
    if layout is None or not constrained(model, settings) or float(settings["slot_weight"]) <= 0:
        return None
    return Rescorer(layout, model.grammar, float(settings["slot_weight"]))


def encode(model: ExportedModel, feats: list[np.ndarray]) -> tuple[np.ndarray, ...]:
    """Pad a batch and run encoder.onnx -> (memory, mem_lens, ctc_logprobs, cross_k, cross_v
    [, slot_logprobs with intent/slot heads])."""
    lens = np.array([f.shape[0] for f in feats], np.int64)
    T = max(int(lens.max()), CONV_MIN_FRAMES)
    batch = np.zeros((len(feats), T, feats[0].shape[1]), np.float32)
    for i, f in enumerate(feats):
        batch[i, : f.shape[0]] = f
    return tuple(model.encoder.run(None, {"feats": batch, "lens": lens}))


def search_checked(model: ExportedModel, feats: list[np.ndarray], settings: dict[str, Any]) -> Searched:
    """seqx.decode.transcribe.search_checked: the n-best, their CTC gaps, and with a grammar the
    free beam's best of the same encoder pass and the CTC best path."""
    dims = model.dims
    outputs = encode(model, feats)
    _, mem_lens, ctc, cross_k, cross_v = outputs[:5]
    enc = {"mem_lens": mem_lens, "ctc": ctc, "cross_k": cross_k, "cross_v": cross_v}
    mask = model.mask if constrained(model, settings) else None
    rescorer = rescorer_for(model, settings) if mask is not None and len(outputs) > 5 else None
    # with the heads' vote or the ambiguity check the constrained beam keeps its whole n-best for them
    nbest = Rules.of(settings, mask is not None).search_nbest(settings["beam"], rescorer is not None)
    B = len(feats)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        nbests = decode_batch(enc, model.step, dims, settings["beam"], nbest, settings, mask)
        free_nbests = (
            decode_batch(enc, model.step, dims, max(settings["free_beam"], 1), 1, settings)
            if mask is not None and settings["free_beam"] > 0
            else None
        )
        slots = outputs[5] if rescorer is not None else None
        nbests = rerank_all(rescorer, nbests, slots, model.detokenize, nbest)
        free: list[Hypothesis | None] = [h[0] if h else None for h in free_nbests] if free_nbests else [None] * B
        best = [h[0] if h else None for h in nbests]
        free_gaps = joint_gaps(best, free, mem_lens.tolist(), settings["length_penalty"])
        if not dims["ctc"]:
            return Searched(nbests, [None] * B, free, free_gaps, [[] for _ in range(B)])
        starts = agree = None
        if mask is not None and settings["gap_forgives_insertions"]:
            starts = word_starts(model.sp.id_to_piece, ctc.shape[-1])
            agree = forgiven([h.tokens if h else None for h in best], [h.tokens if h else None for h in free])
        gaps = ctc_gaps(ctc, mem_lens, [h[0].tokens if h else [] for h in nbests], dims["blank_id"], starts, agree)
    gaps_or_none = [float(g) if h else None for g, h in zip(gaps, nbests, strict=True)]
    return Searched(nbests, gaps_or_none, free, free_gaps, ctc_best_paths(ctc, mem_lens, dims["blank_id"]))


def search(
    model: ExportedModel, feats: list[np.ndarray], settings: dict[str, Any]
) -> tuple[list[list[Hypothesis]], list[float | None]]:
    """n-best lists and CTC gaps for a batch of normalized feature matrices (seqx.decode.transcribe.search)."""
    found = search_checked(model, feats, {**settings, "free_beam": 0})
    return found.nbests, found.gaps


def transcribe_waves(
    model: ExportedModel,
    waves: list[np.ndarray],
    settings: dict[str, Any] | None = None,
    names: list[str] | None = None,
) -> list[Result]:
    """Waveforms (mono float at model.sample_rate) -> Results, in order: `seqx listen`'s segments
    and a long file's pieces (seqx.decode.transcribe.transcribe_waves)."""
    settings = settings or settings_for(model)
    names = names or [f"<segment {i}>" for i in range(len(waves))]
    results = [Result(path=n) for n in names]
    loaded: list[tuple[int, np.ndarray, float]] = []
    start = time.perf_counter()
    for index, wave in enumerate(waves):
        wave = np.asarray(wave, np.float32)
        results[index].duration = wave.size / model.sample_rate
        speech = _gate(model, results[index], wave, settings)
        if speech is not None:
            loaded.append((index, model.features(speech, int(settings["views"])), 0.0))
    _decode(model, loaded, results, settings)
    seconds = time.perf_counter() - start
    audio = sum(r.duration for r in results) or 1.0
    for result in results:
        result.decode_seconds = seconds * result.duration / audio
    return results


def transcribe_files(model: ExportedModel, paths: list[str], settings: dict[str, Any] | None = None) -> list[Result]:
    """Every path -> a Result (unreadable files with `error` set), in input order."""
    settings = settings or settings_for(model)
    results = [Result(path=p) for p in paths]
    loaded: list[tuple[int, np.ndarray, float]] = []
    for index, path in enumerate(paths):
        start = time.perf_counter()
        result = results[index]
        try:
            wave, result.clipped = read_audio(path, model.sample_rate)
        except AudioError as err:
            result.error = err.problem
            continue
        result.duration = wave.size / model.sample_rate
        if result.duration > settings["max_segment_s"]:
            _transcribe_long(model, result, wave, settings)
        elif (speech := _gate(model, result, wave, settings)) is not None:
            loaded.append((index, model.features(speech, int(settings["views"])), time.perf_counter() - start))
        if result.segments is not None or result.no_speech:
            result.decode_seconds = time.perf_counter() - start
    return _decode(model, loaded, results, settings)


def _gate(model: ExportedModel, result: Result, wave: np.ndarray, settings: dict[str, Any]) -> np.ndarray | None:
    """The silence and no-speech checks, and the part of the wave to decode (seqx.decode.result.gate)."""
    return gate(result, wave, model.sample_rate, settings["silence_dbfs"], settings["vad_threshold"],
                model.vad_model, settings["speech_margin_s"], settings["vad_gate"],
                settings["floor_snr_db"])  # fmt: skip


def _transcribe_long(model: ExportedModel, result: Result, wave: np.ndarray, settings: dict[str, Any]) -> None:
    """A recording longer than `decode.max_segment_s`: cut at pauses, each piece decoded like a
    file of its own (seqx.decode.transcribe._transcribe_long)."""
    from seqx.listen.segment import split_long
    from seqx.listen.vad import load_vad

    vad, _ = load_vad("silero", model=model.vad_model)
    pieces = split_long(wave, vad, settings["max_segment_s"], sample_rate=model.sample_rate)
    join_pieces(result, pieces, transcribe_waves(model, [p.wave for p in pieces], settings))


def _decode(
    model: ExportedModel, loaded: list[tuple[int, np.ndarray, float]], results: list[Result], settings: dict[str, Any]
) -> list[Result]:
    """The gated files' features, sorted by length, searched in batches and judged."""
    rules = Rules.of(settings, constrained(model, settings))
    grammar = model.grammar if constrained(model, settings) else None
    loaded.sort(key=lambda item: item[1].shape[0])
    for first in range(0, len(loaded), settings["batch_size"]):
        chunk = loaded[first : first + settings["batch_size"]]
        start = time.perf_counter()
        found = search_checked(model, [f for _, f, _ in chunk], settings)
        seconds = time.perf_counter() - start
        audio = sum(results[i].duration for i, _, _ in chunk) or 1.0
        for k, (index, _, prep) in enumerate(chunk):
            result = results[index]
            result.decode_seconds = prep + seconds * result.duration / audio
            note(result, found, k, model.detokenize, bool(model.dims["ctc"]))
            judge(result, found.nbests[k], model.detokenize, rules, grammar)
    return results
