"""Files in, text out: load, featurize, batch by length, search, detokenize.

The bundle carries everything decoding needs (features, CMVN, tokenizer, model),
so this module never looks at a recipe. Files are sorted by length before
batching so a batch pads little; results come back in the caller's order. A file
that cannot be read yields a `Result` with `error` set and the rest go on.

With a grammar (`decode.grammar`, the bundle's training grammar by default) the search can
only say its sentences, and each result carries the parse: `intent` and `slots`. Whatever
the grammar, a result is "not understood" (`understood` False, empty `text`, `intent`
None, `reason` saying why) when:

- silence: the loudest 100 ms is below `decode.silence_dbfs` (the model is not asked);
- no speech: no 32 ms window reaches `decode.vad_threshold` of Silero VAD speech probability
  (loud noise; the model is not asked either);
- rejected: the CTC gap of the answer (seqx/decode/ctc_gap.py: how much less likely per
  frame than the CTC head's own best path) is above `decode.reject_margin` when a grammar
  constrained the search, `decode.max_ctc_gap` when it did not; or, with a grammar, the
  free transcript of the same encoder pass (a free beam of `decode.free_beam`, else the CTC
  best path) is more than `decode.reject_distance` of its words away from the grammar's
  answer: the model heard something the grammar cannot say, and the grammar's nearest
  sentence is not what was said;
- low confidence: below `decode.min_confidence` (off by default); cut off: a loop or the
  length cap; no answer: the constrained beam ended no sentence.
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch

from seqx.decode.bundle import Bundle
from seqx.decode.ctc_gap import ctc_gaps_from
from seqx.decode.distance import word_distance
from seqx.decode.search import Hypothesis, decode_batch
from seqx.errors import AudioError
from seqx.featurize.audio import load_audio
from seqx.grammar.errors import GrammarError
from seqx.grammar.model import Grammar, Output
from seqx.grammar.tokens import TokenAutomaton
from seqx.recipe import DecodeSettings
from seqx.report import Collect, Reporter

AUDIO_SUFFIXES = (".wav", ".flac", ".ogg", ".mp3", ".m4a", ".opus", ".aiff", ".aif")


@dataclass
class Result:
    """One file's transcription; `text` is empty when nothing was said (or the file failed)."""

    path: str
    text: str = ""
    score: float = 0.0
    confidence: float = 0.0
    no_speech: bool = False
    nbest: list[dict[str, float | str | bool]] = field(default_factory=list)
    duration: float = 0.0
    decode_seconds: float = 0.0
    ctc_gap: float | None = None  # nats per frame the CTC head believes the text less than its best path
    error: str | None = None
    intent: str | None = None  # the grammar's intent of `text`; None without a grammar or when not understood
    slots: dict[str, Output] = field(default_factory=dict)  # slot name -> output value
    understood: bool = False  # a command came out: False for silence, no speech, a rejected result
    reason: str | None = None  # why not understood: silence, no speech, rejected, low confidence, cut off, no answer
    # a file longer than decode.max_segment_s: its pieces (start, end, text, intent, slots, understood)
    segments: list[dict[str, object]] | None = None
    # with a grammar and decode.free_beam: what a free search of the same encoder pass said, and
    # its joint score above the grammar's answer in nats per frame (seqx/decode/transcribe.py joint_gaps)
    free_text: str | None = None
    free_gap: float | None = None
    ctc_text: str | None = None  # the CTC head's best path as text (with a grammar)
    # word edit distance of the free transcript (free_text, else ctc_text) to the grammar's answer
    free_distance: float | None = None

    @property
    def rtf(self) -> float:
        """Real-time factor: seconds of compute per second of audio (lower is faster)."""
        return self.decode_seconds / self.duration if self.duration else 0.0

    def to_json(self) -> dict[str, object]:
        return {**asdict(self), "rtf": self.rtf}


def expand_inputs(items: list[str]) -> list[str]:
    """Files as given, directories as the audio files inside them (sorted)."""
    paths: list[str] = []
    for item in items:
        path = Path(item)
        if path.is_dir():
            paths.extend(str(p) for p in sorted(path.rglob("*")) if p.suffix.lower() in AUDIO_SUFFIXES)
        else:
            paths.append(item)
    return paths


def search(
    bundle: Bundle,
    feats: list[torch.Tensor],
    settings: DecodeSettings,
    use_cache: bool = True,
    automaton: TokenAutomaton | None = None,
) -> tuple[list[list[Hypothesis]], list[float | None]]:
    """n-best hypotheses for a batch of (already normalized) feature matrices, and the CTC gap
    of each best one (None without a CTC head or an hypothesis). `automaton`: the grammar.

    The CTC head's log-posteriors are computed once per batch, in fp32 outside autocast,
    and shared by the search's CTC prefix scorer and the gap guard.
    """
    found = search_checked(bundle, feats, settings.merged(free_beam=0), use_cache, automaton)
    return found.nbests, found.gaps


@dataclass
class Searched:
    """A batch's search: the n-best lists, the CTC gap of each best, and with a grammar and
    `decode.free_beam` the free (unconstrained) best of the same encoder pass beside it."""

    nbests: list[list[Hypothesis]]
    gaps: list[float | None]
    free: list[Hypothesis | None]  # the free beam's best; None without one
    free_gaps: list[float | None]  # the constrained best's joint score below the free best's, per frame
    ctc_best: list[list[int]]  # the CTC head's best path, collapsed: its tokens ([] without a CTC head)


def search_checked(
    bundle: Bundle,
    feats: list[torch.Tensor],
    settings: DecodeSettings,
    use_cache: bool = True,
    automaton: TokenAutomaton | None = None,
) -> Searched:
    """`search`, and with a grammar a free beam of `decode.free_beam` over the same encoder
    output: what the model hears when it may say anything, to check the grammar's answer by."""
    device, model = bundle.device, bundle.model
    lengths = torch.tensor([f.shape[0] for f in feats], device=device)
    batch = torch.nn.utils.rnn.pad_sequence(feats, batch_first=True).to(device)
    B = len(feats)
    with torch.inference_mode():
        with autocast_for(device, settings.precision):
            memory, mem_lens = model.encode(batch, lengths)
        ctc = model.ctc_logprobs(memory.float()) if bundle.dims.ctc else None
        with autocast_for(device, settings.precision):
            nbests = decode_batch(
                model, memory, mem_lens, settings, use_cache=use_cache, ctc_logprobs=ctc, grammar=automaton
            )
            free_nbests = (
                decode_batch(model, memory, mem_lens, settings.merged(beam=settings.free_beam, nbest=1),
                             use_cache=use_cache, ctc_logprobs=ctc)  # fmt: skip
                if automaton is not None and settings.free_beam > 0
                else None
            )
        free: list[Hypothesis | None] = [h[0] if h else None for h in free_nbests] if free_nbests else [None] * B
        free_gaps = joint_gaps([h[0] if h else None for h in nbests], free, mem_lens, settings.length_penalty)
        if ctc is None:
            return Searched(nbests, [None] * B, free, free_gaps, [[] for _ in range(B)])
        gaps = ctc_gaps_from(ctc, mem_lens, [h[0].tokens if h else [] for h in nbests], bundle.dims.blank_id)
        best_paths = ctc_best_paths(ctc, mem_lens, bundle.dims.blank_id)
    gaps_or_none = [g if h else None for g, h in zip(gaps.tolist(), nbests, strict=True)]
    return Searched(nbests, gaps_or_none, free, free_gaps, best_paths)


def ctc_best_paths(logp: torch.Tensor, mem_lens: torch.Tensor, blank: int) -> list[list[int]]:
    """The CTC head's best path of each utterance, repeats merged and blanks dropped (B lists of
    token ids): the cheapest free transcript, from log-posteriors logp (B, S, V) already computed."""
    best = logp.argmax(dim=-1)  # (B, S)
    S = best.shape[1]
    valid = torch.arange(S, device=best.device)[None, :] < mem_lens[:, None]
    changed = torch.ones_like(valid)
    changed[:, 1:] = best[:, 1:] != best[:, :-1]
    keep = valid & changed & (best != blank)
    return [row[mask].tolist() for row, mask in zip(best, keep, strict=True)]


def joint_gaps(
    best: list[Hypothesis | None], free: list[Hypothesis | None], mem_lens: torch.Tensor, length_penalty: float
) -> list[float | None]:
    """Per utterance, (free best's joint log-score - constrained best's) / encoder frames: a
    log-likelihood ratio per frame (0 when they agree; large when the grammar's answer is far
    less likely than what the model would say freely; below 0 when the narrower free beam found
    a longer answer of lower total score). Scores are un-normalized first (the beam ranks by
    score / (tokens + 1) ** length_penalty); a flagged free best does not count."""
    known = [b is not None and f is not None and not f.flagged for b, f in zip(best, free, strict=True)]
    if not any(known):
        return [None] * len(best)
    empty = Hypothesis([], 0.0, 0.0)
    pairs = [(b, f) if k else (empty, empty) for b, f, k in zip(best, free, known, strict=True)]
    scores = torch.tensor([[b.score, f.score] for b, f in pairs], dtype=torch.float64)  # (B, 2)
    lengths = torch.tensor([[len(b.tokens) + 1, len(f.tokens) + 1] for b, f in pairs], dtype=torch.float64)
    raw = scores * lengths**length_penalty
    gap = ((raw[:, 1] - raw[:, 0]) / mem_lens.cpu().clamp(min=1).double()).tolist()
    return [g if k else None for g, k in zip(gap, known, strict=True)]


def loudness_dbfs(wave: torch.Tensor, sample_rate: int) -> float:
    """Level of the loudest 100 ms window, in dB relative to full scale."""
    window = max(1, sample_rate // 10)
    frames = wave[: wave.numel() // window * window].view(-1, window) if wave.numel() >= window else wave[None]
    rms = frames.pow(2).mean(dim=1).sqrt().max().item()
    return 20 * math.log10(max(rms, 1e-12))


def featurize(bundle: Bundle, wave: torch.Tensor) -> torch.Tensor:
    """Raw waveform -> CMVN-normalized feature frames, exactly as in training."""
    with torch.inference_mode():
        return bundle.cmvn(bundle.extractor(wave)).float()


@dataclass
class Constraint:
    """What a decode call restricts its answers to: the grammar and its compiled automaton (or none)."""

    grammar: Grammar | None = None
    automaton: TokenAutomaton | None = None

    @classmethod
    def of(cls, bundle: Bundle, settings: DecodeSettings) -> Constraint:
        """`settings.grammar` resolved against the bundle and compiled once (a GrammarError names
        a word the tokenizer cannot spell)."""
        grammar = bundle.decode_grammar(settings.grammar)
        if grammar is None:
            return cls()
        try:
            return cls(grammar, bundle.automaton(grammar))
        except GrammarError as err:
            where = "the model's grammar" if settings.grammar == "recipe" else settings.grammar
            raise GrammarError(f"{where}: {err}") from None


def heard_speech(wave: torch.Tensor, sample_rate: int, threshold: float) -> bool:
    """The no-speech gate: whether some 32 ms window of the file reaches `threshold` of Silero
    VAD speech probability. True (no gate) when the threshold is 0 or the model is not installed."""
    vad = _silero() if threshold > 0 else None
    if vad is None:
        return True
    from seqx.listen.vad import SAMPLE_RATE, Windower

    audio = wave.float().numpy()
    if sample_rate != SAMPLE_RATE:
        import soxr

        audio = soxr.resample(audio, sample_rate, SAMPLE_RATE)
    vad.reset()
    windower = Windower()
    # the first window that reaches the threshold settles it: a command costs the windows up to
    # its first syllable, only audio without speech is read to the end
    return any(vad.prob(window) >= threshold for window in [*windower.feed(audio), *windower.flush()])


_VAD: list = []  # the Silero session, loaded once per process ([None] when it cannot be)


def _silero():  # noqa: ANN202 (SileroVad | None; imported late: onnxruntime is optional)
    if not _VAD:
        from seqx.listen.vad import SileroVad, silero_model_path

        path = silero_model_path()
        try:
            _VAD.append(SileroVad(path) if path is not None else None)
        except ImportError:
            _VAD.append(None)
    return _VAD[0]


def _gate(result: Result, wave: torch.Tensor, sample_rate: int, settings: DecodeSettings) -> bool:
    """Silence and no-speech checks before the model is asked; True when the file goes on to decoding."""
    if wave.numel() == 0 or loudness_dbfs(wave, sample_rate) < settings.silence_dbfs:
        # digital silence is unlike anything a model trains on; don't let it guess a command
        result.no_speech, result.reason = True, "silence"
        return False
    if not heard_speech(wave, sample_rate, settings.vad_threshold):
        result.no_speech, result.reason = True, "no speech"
        return False
    return True


def transcribe_files(
    bundle: Bundle,
    paths: list[str],
    settings: DecodeSettings,
    reporter: Reporter | None = None,
    use_cache: bool = True,
    warn_unreadable: bool = True,
    constraint: Constraint | None = None,
) -> list[Result]:
    """Transcribe every path; unreadable files come back with `error` set, in input order.

    `warn_unreadable=False` is for a caller that prints each result's error itself
    (`seqx transcribe`), so the user is not told about the same file twice. `constraint`:
    the grammar already resolved (default: `settings.grammar` resolved here).
    """
    constraint = constraint or Constraint.of(bundle, settings)
    reporter = reporter or Collect()
    results = [Result(path=p) for p in paths]
    loaded: list[tuple[int, torch.Tensor, float]] = []  # (index, features, load+featurize seconds)
    task = reporter.task("transcribe", total=len(paths), unit="file")
    for index, path in enumerate(paths):
        start = time.perf_counter()
        try:
            wave = load_audio(path, bundle.sample_rate)
        except AudioError as err:
            results[index].error = err.problem
            if warn_unreadable:
                reporter.warn(str(err))
            task.advance(1)
            continue
        results[index].duration = wave.numel() / bundle.sample_rate
        if results[index].duration > settings.max_segment_s:
            _transcribe_long(results[index], wave, bundle, settings, constraint, start)
            task.advance(1)
            continue
        if not _gate(results[index], wave, bundle.sample_rate, settings):
            results[index].decode_seconds = time.perf_counter() - start
            task.advance(1)
            continue
        loaded.append((index, featurize(bundle, wave), time.perf_counter() - start))
    loaded.sort(key=lambda item: item[1].shape[0])
    for first in range(0, len(loaded), settings.batch_size):
        chunk = loaded[first : first + settings.batch_size]
        start = time.perf_counter()
        found = search_checked(
            bundle, [feats for _, feats, _ in chunk], settings, use_cache=use_cache, automaton=constraint.automaton
        )
        batch_seconds = time.perf_counter() - start
        batch_audio = sum(results[i].duration for i, _, _ in chunk) or 1.0
        for k, (index, _, prep_seconds) in enumerate(chunk):
            result, hyps = results[index], found.nbests[k]
            _note(result, found, k, bundle)
            # the batch's search time is shared in proportion to each file's audio length
            result.decode_seconds = prep_seconds + batch_seconds * result.duration / batch_audio
            _fill(result, hyps, bundle, settings, constraint.grammar)
        task.advance(len(chunk))
    task.close()
    return results


def _transcribe_long(
    result: Result, wave: torch.Tensor, bundle: Bundle, settings: DecodeSettings, constraint: Constraint, start: float
) -> None:
    """A recording longer than `decode.max_segment_s`: cut at pauses (seqx/listen/segment.py),
    each piece decoded like a file of its own, the understood pieces' texts joined."""
    from seqx.listen.segment import join_texts, split_long
    from seqx.listen.vad import load_vad

    vad, _ = load_vad("silero")
    pieces = split_long(wave.numpy(), vad, settings.max_segment_s, sample_rate=bundle.sample_rate)
    parts = transcribe_waves(bundle, [torch.from_numpy(p.wave) for p in pieces], settings, constraint=constraint)
    result.segments = [
        {"start": round(p.start, 3), "end": round(p.end, 3), "text": r.text, "intent": r.intent, "slots": r.slots,
         "understood": r.understood}
        for p, r in zip(pieces, parts, strict=True)
    ]  # fmt: skip
    heard = [(p, r) for p, r in zip(pieces, parts, strict=True) if r.understood]
    result.text = join_texts([r.text for _, r in heard], [p.hard_cut for p, _ in heard])
    result.understood = bool(heard)
    result.no_speech, result.reason = not heard, None if heard else "no speech"
    if len(heard) == 1:  # one command in a long recording: its parse is the file's
        result.intent, result.slots = heard[0][1].intent, heard[0][1].slots
    result.confidence = min((r.confidence for _, r in heard), default=0.0)
    result.decode_seconds = time.perf_counter() - start


def _note(result: Result, found: Searched, k: int, bundle: Bundle) -> None:
    """The checks' signals of batch item k onto its result (before `_fill` judges it)."""
    result.ctc_gap, result.free_gap = found.gaps[k], found.free_gaps[k]
    free = found.free[k]
    result.free_text = bundle.tokenizer.decode(free.tokens) if free is not None else None
    result.ctc_text = bundle.tokenizer.decode(found.ctc_best[k]) if bundle.dims.ctc else None


def _fill(
    result: Result, hyps: list[Hypothesis], bundle: Bundle, settings: DecodeSettings, grammar: Grammar | None
) -> None:
    texts = [bundle.tokenizer.decode(h.tokens) for h in hyps]
    result.nbest = [
        {"text": t, "score": h.score, "confidence": h.confidence, "flagged": h.flagged} for t, h in zip(texts, hyps)
    ]
    best = hyps[0] if hyps else None
    if best is None:
        result.no_speech, result.reason = True, "no answer"
        return
    result.score = float(best.score)
    result.confidence = float(best.confidence) if math.isfinite(best.confidence) else 0.0
    result.text = texts[0]
    # a looping or runaway hypothesis (flagged by the search) is never passed off as a command,
    # nor one the CTC head finds far less likely than what it heard (a made-up command, or the
    # grammar's nearest sentence to something it cannot say)
    margin = settings.margin(constrained=grammar is not None)
    made_up = margin > 0 and result.ctc_gap is not None and result.ctc_gap > margin
    if grammar is not None:
        # what the model hears when it may say anything, against what the grammar made of it
        heard = result.free_text if result.free_text is not None else result.ctc_text
        result.free_distance = word_distance(heard, result.text) if heard is not None else None
        made_up |= result.free_distance is not None and result.free_distance > settings.distance(constrained=True)
    reason = (
        "no answer" if not result.text
        else "cut off" if best.flagged
        else "rejected" if made_up
        else "low confidence" if result.confidence < settings.min_confidence
        else None
    )  # fmt: skip
    if reason is not None:
        result.text, result.no_speech, result.reason = "", True, reason
        return
    result.understood = True
    parse = grammar.parse(result.text) if grammar is not None else None
    if parse is not None:
        result.intent, result.slots = parse.intent, dict(parse.slots)


def native_bf16(device: torch.device) -> bool:
    """Whether bf16 matrix maths runs in hardware here (emulated bf16 on a CPU is slower than fp32)."""
    if device.type == "cuda":
        return True
    cpu = getattr(torch, "cpu", None)
    checks = ("_is_avx512_bf16_supported", "_is_amx_tile_supported")  # private, so looked up with care
    return device.type == "cpu" and any(bool(getattr(cpu, name, lambda: False)()) for name in checks)


def resolve_precision(device: torch.device, precision: str) -> str:
    """"auto" -> "bf16" where the hardware has it (the conv2d front-end runs ~2x faster), else "fp32"."""
    if precision == "auto":
        return "bf16" if native_bf16(device) else "fp32"
    return precision


def autocast_for(device: torch.device, precision: str) -> torch.autocast:
    """The autocast context decoding runs the model under for `decode.precision`."""
    # scores stay fp32 whatever this says: the search takes log-softmax in float32
    enabled = resolve_precision(device, precision) == "bf16"
    return torch.autocast(device_type=device.type, dtype=torch.bfloat16, enabled=enabled)


def transcribe_waves(
    bundle: Bundle,
    waves: list[torch.Tensor] | list,
    settings: DecodeSettings,
    names: list[str] | None = None,
    constraint: Constraint | None = None,
) -> list[Result]:
    """Transcribe waveforms already in memory (mono float, at `bundle.sample_rate`), in order.

    For audio that never was a file: `seqx listen`'s segments and the pieces of a long
    recording. Same gates, featurizing, batching, grammar and rejection as `transcribe_files`.
    """
    constraint = constraint or Constraint.of(bundle, settings)
    names = names or [f"<segment {i}>" for i in range(len(waves))]
    results = [Result(path=name) for name in names]
    loaded: list[tuple[int, torch.Tensor]] = []
    start = time.perf_counter()
    for index, wave in enumerate(waves):
        wave = torch.as_tensor(wave, dtype=torch.float32)
        results[index].duration = wave.numel() / bundle.sample_rate
        if _gate(results[index], wave, bundle.sample_rate, settings):
            loaded.append((index, featurize(bundle, wave)))
    loaded.sort(key=lambda item: item[1].shape[0])
    for first in range(0, len(loaded), settings.batch_size):
        chunk = loaded[first : first + settings.batch_size]
        found = search_checked(bundle, [feats for _, feats in chunk], settings, automaton=constraint.automaton)
        for k, (index, _) in enumerate(chunk):
            _note(results[index], found, k, bundle)
            _fill(results[index], found.nbests[k], bundle, settings, constraint.grammar)
    seconds = time.perf_counter() - start
    audio = sum(r.duration for r in results) or 1.0
    for result in results:
        result.decode_seconds = seconds * result.duration / audio
    return results
