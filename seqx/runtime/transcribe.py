"""Files or waves in, `Result`s out, with an exported model: the twin of seqx/decode/transcribe.py
(same silence check, length-sorted batches, search, CTC-gap and confidence rejection), torch-free.
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from seqx.errors import AudioError
from seqx.runtime.model import ExportedModel
from seqx.runtime.search import (
    CTCScorer, DecoderScorer, GrammarScorer, Hypothesis, automaton_table, beam_search, greedy_search,
    max_output_len, n_candidates,
)  # fmt: skip
from seqx.runtime.ctc import ctc_gaps

CONV_MIN_FRAMES = 7  # seqx.model.frontend: the conv2d front-end's shortest input
SETTINGS = ("beam", "nbest", "ctc_weight", "length_penalty", "max_len_ratio", "max_len", "batch_size",
            "min_confidence", "max_ctc_gap", "silence_dbfs")  # fmt: skip


@dataclass
class Result:
    """Field for field seqx.decode.transcribe.Result (the CLI prints either the same way)."""

    path: str
    text: str = ""
    score: float = 0.0
    confidence: float = 0.0
    no_speech: bool = False
    nbest: list[dict[str, float | str | bool]] = field(default_factory=list)
    duration: float = 0.0
    decode_seconds: float = 0.0
    ctc_gap: float | None = None
    error: str | None = None

    @property
    def rtf(self) -> float:
        return self.decode_seconds / self.duration if self.duration else 0.0

    def to_json(self) -> dict[str, object]:
        return {**asdict(self), "rtf": self.rtf}


def settings_for(model: ExportedModel, **options: Any) -> dict[str, Any]:
    """The folder's decode settings with the caller's options (None = keep); greedy = beam 1;
    nbest K widens the beam to at least K (DecodeSettings.merged's rules)."""
    settings = {k: model.decode[k] for k in SETTINGS if k in model.decode}
    changes = {k: v for k, v in options.items() if v is not None and k != "greedy" and k in SETTINGS}
    if options.get("greedy"):
        changes["beam"] = 1
    if "nbest" in changes:
        changes["beam"] = max(int(changes.get("beam", settings["beam"])), int(changes["nbest"]))
    return {**settings, **changes}


def load_audio(path: str | Path, sample_rate: int) -> np.ndarray:
    """Mono float32 in [-1, 1] at `sample_rate` (soundfile + soxr; seqx.featurize.audio without torch)."""
    import soundfile as sf

    path = Path(path)
    if not path.is_file():
        raise AudioError(path, "no such file")
    if path.stat().st_size == 0:
        raise AudioError(path, "empty file (0 bytes)")
    try:
        samples, rate = sf.read(path, dtype="float32")
    except (RuntimeError, sf.LibsndfileError, TypeError) as err:
        try:
            import librosa  # other containers (mp3 on old libsndfile, m4a): only when soundfile cannot

            samples, rate = librosa.load(path, sr=None, mono=True)
        except Exception:  # audioread raises many unrelated types
            raise AudioError(path, f"unreadable audio ({(str(err).splitlines() or ['?'])[0][:120]})") from None
    if samples.ndim == 2:
        samples = samples.mean(axis=1, dtype=np.float32)
    if samples.size == 0:
        raise AudioError(path, "empty audio (no samples)")
    if not np.isfinite(samples).all():
        raise AudioError(path, "audio has NaN/inf samples")
    if rate != sample_rate:
        import soxr

        samples = soxr.resample(samples, rate, sample_rate)
    return np.ascontiguousarray(samples, dtype=np.float32)


def loudness_dbfs(wave: np.ndarray, sample_rate: int) -> float:
    window = max(1, sample_rate // 10)
    frames = wave[: wave.size // window * window].reshape(-1, window) if wave.size >= window else wave[None]
    rms = float(np.sqrt((frames.astype(np.float32) ** 2).mean(axis=1)).max())
    return 20 * math.log10(max(rms, 1e-12))


def encode(model: ExportedModel, feats: list[np.ndarray]) -> tuple[np.ndarray, ...]:
    """Pad a batch and run encoder.onnx -> (memory, mem_lens, ctc_logprobs, cross_k, cross_v)."""
    lens = np.array([f.shape[0] for f in feats], np.int64)
    T = max(int(lens.max()), CONV_MIN_FRAMES)
    batch = np.zeros((len(feats), T, feats[0].shape[1]), np.float32)
    for i, f in enumerate(feats):
        batch[i, : f.shape[0]] = f
    return tuple(model.encoder.run(None, {"feats": batch, "lens": lens}))


def search(
    model: ExportedModel, feats: list[np.ndarray], settings: dict[str, Any]
) -> tuple[list[list[Hypothesis]], list[float | None]]:
    """n-best lists and CTC gaps for a batch of normalized feature matrices (seqx.decode.transcribe.search)."""
    dims = model.dims
    _, mem_lens, ctc, cross_k, cross_v = encode(model, feats)
    limit = max_output_len(mem_lens, settings["max_len_ratio"], settings["max_len"])
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        if settings["beam"] == 1 and settings["nbest"] == 1 and model.grammar is None:
            decoder = DecoderScorer(model.step, cross_k, cross_v, mem_lens, dims)
            nbests = [[h] for h in greedy_search(decoder, limit, dims["eos_id"])]
        else:
            ctc_weight = settings["ctc_weight"] if dims["ctc"] else 0.0
            decoder = DecoderScorer(model.step, cross_k, cross_v, mem_lens, dims, weight=1.0 - ctc_weight)
            scorers: list[Any] = [decoder]
            if ctc_weight > 0:
                scorers.append(CTCScorer(ctc, mem_lens, dims["blank_id"], dims["eos_id"], ctc_weight))
            if model.grammar is not None:
                scorers.append(GrammarScorer(*automaton_table(model.grammar)))
            n_cand = n_candidates(settings["beam"], dims["vocab_size"])
            nbests = beam_search(
                scorers, decoder, limit, settings["beam"], settings["nbest"], settings["length_penalty"],
                dims["eos_id"], n_cand,
            )  # fmt: skip
        if not dims["ctc"]:
            return nbests, [None] * len(nbests)
        gaps = ctc_gaps(ctc, mem_lens, [h[0].tokens if h else [] for h in nbests], dims["blank_id"])
    return nbests, [float(g) if h else None for g, h in zip(gaps, nbests, strict=True)]


def _fill(result: Result, hyps: list[Hypothesis], model: ExportedModel, settings: dict[str, Any]) -> None:
    texts = [model.detokenize(h.tokens) for h in hyps]
    result.nbest = [
        {"text": t, "score": h.score, "confidence": h.confidence, "flagged": h.flagged} for t, h in zip(texts, hyps)
    ]
    best = hyps[0] if hyps else None
    if best is None:
        result.no_speech = True
        return
    result.score = float(best.score)
    result.confidence = float(best.confidence) if math.isfinite(best.confidence) else 0.0
    result.text = texts[0]
    gap = settings["max_ctc_gap"]
    made_up = gap > 0 and result.ctc_gap is not None and result.ctc_gap > gap
    if not result.text or best.flagged or made_up or result.confidence < settings["min_confidence"]:
        result.text, result.no_speech = "", True


def transcribe_waves(
    model: ExportedModel,
    waves: list[np.ndarray],
    settings: dict[str, Any] | None = None,
    names: list[str] | None = None,
) -> list[Result]:
    """Waveforms (mono float at model.sample_rate) -> Results, in order."""
    settings = settings or settings_for(model)
    names = names or [f"<segment {i}>" for i in range(len(waves))]
    results = [Result(path=n, duration=w.size / model.sample_rate) for n, w in zip(names, waves, strict=True)]
    return _run(model, [(i, np.asarray(w, np.float32), 0.0) for i, w in enumerate(waves)], results, settings)


def transcribe_files(model: ExportedModel, paths: list[str], settings: dict[str, Any] | None = None) -> list[Result]:
    """Every path -> a Result (unreadable files with `error` set), in input order."""
    settings = settings or settings_for(model)
    results = [Result(path=p) for p in paths]
    waves = []
    for index, path in enumerate(paths):
        start = time.perf_counter()
        try:
            wave = load_audio(path, model.sample_rate)
        except AudioError as err:
            results[index].error = err.problem
            continue
        results[index].duration = wave.size / model.sample_rate
        waves.append((index, wave, time.perf_counter() - start))
    return _run(model, waves, results, settings)


def _run(
    model: ExportedModel, waves: list[tuple[int, np.ndarray, float]], results: list[Result], settings: dict[str, Any]
) -> list[Result]:
    loaded: list[tuple[int, np.ndarray, float]] = []
    for index, wave, seconds in waves:
        start = time.perf_counter()
        if wave.size == 0 or loudness_dbfs(wave, model.sample_rate) < settings["silence_dbfs"]:
            results[index].no_speech = True
            results[index].decode_seconds = seconds + time.perf_counter() - start
            continue
        loaded.append((index, model.features(wave), seconds + time.perf_counter() - start))
    loaded.sort(key=lambda item: item[1].shape[0])
    for first in range(0, len(loaded), settings["batch_size"]):
        chunk = loaded[first : first + settings["batch_size"]]
        start = time.perf_counter()
        nbests, gaps = search(model, [f for _, f, _ in chunk], settings)
        seconds = time.perf_counter() - start
        audio = sum(results[i].duration for i, _, _ in chunk) or 1.0
        for (index, _, prep), hyps, gap in zip(chunk, nbests, gaps, strict=True):
            result = results[index]
            result.ctc_gap = gap
            result.decode_seconds = prep + seconds * result.duration / audio
            _fill(result, hyps, model, settings)
    return results
