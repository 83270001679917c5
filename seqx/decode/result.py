"""What a search's hypotheses become: the `Result` of a file and the verdict on it, torch-free.

One implementation for both decode paths: seqx/decode/transcribe.py (the torch bundle) and
seqx/runtime/ (an exported model run with onnxruntime + numpy) each search their own way,
then hand this module the same things (n-best hypotheses, CTC gap, the free beam's best,
the CTC best path), and it decides: the gates before the model is asked (silence, Silero
no-speech), the ranking of finished hypotheses, the rejection rules (CTC gap, free
transcript too far from the grammar's answer, confidence, cut off) and the intent/slot
parse. Nothing here imports torch (nor pydantic): tests/test_runtime.py checks that an
exported model's results are decided exactly as the bundle's.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from seqx.data.noise import with_noise_floor
from seqx.decode.distance import distances
from seqx.decode.gap_span import spanned_gap
from seqx.featurize.samples import AUDIO_SUFFIXES
from seqx.featurize.span import speech_span
from seqx.listen.level import at_vad_level, loudness_dbfs

if TYPE_CHECKING:
    from seqx.grammar.model import Output, Parse


Detokenize = Callable[[list[int]], str]


@dataclass
class Hypothesis:
    tokens: list[int]  # no bos, no eos
    score: float
    confidence: float  # exp(mean attention log-posterior of the tokens and eos); 0.0 when flagged
    flagged: bool = False  # cut off: a loop, or max_len reached without eos
    slot_score: float | None = None  # the intent/slot heads' log-prob of its parse (seqx/decode/slot_rescore.py)


def rank(items: list[tuple[bool, float, tuple[int, ...], float]], nbest: int) -> list[Hypothesis]:
    """(flagged, score, tokens, confidence) of every hypothesis that left the beam -> the n-best:
    proper endings before flagged ones, then by score; each token sequence once; at most nbest."""
    items.sort(key=lambda x: (x[0], -x[1]))
    seen: set[tuple[int, ...]] = set()
    hyps = []
    for flagged, score, tokens, conf in items:
        if tokens not in seen and len(hyps) < nbest:
            seen.add(tokens)
            hyps.append(Hypothesis(list(tokens), score, conf, flagged))
    return hyps


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
    heard_seconds: float | None = None  # the part of the file the model heard (`gate`); None before the gate
    decode_seconds: float = 0.0
    # nats per frame the CTC head believes the text less than its best path: a mean over the part
    # heard, or over the seconds a command of the text's words takes when the part is longer (`judge`)
    ctc_gap: float | None = None
    error: str | None = None
    intent: str | None = None  # the grammar's intent of `text`; None without a grammar or when not understood
    slots: dict[str, Output] = field(default_factory=dict)  # slot name -> output value
    understood: bool = False  # a command came out: False for silence, no speech, a rejected result
    # why not understood: silence, no speech, rejected, ambiguous, low confidence, cut off, no answer
    reason: str | None = None
    # share of the file's samples flattened at its peak when it is clipped (seqx/featurize/samples.py
    # `clipped_share`), else 0: a microphone's gain set too high, which costs right answers
    clipped: float = 0.0
    # a file longer than decode.max_segment_s: its pieces (start, end, text, intent, slots, understood)
    segments: list[dict[str, object]] | None = None
    # with a grammar and decode.free_beam: what a free search of the same encoder pass said, and
    # its joint score above the grammar's answer in nats per frame (`joint_gaps`)
    free_text: str | None = None
    free_gap: float | None = None
    ctc_text: str | None = None  # the CTC head's best path as text (with a grammar)
    # word edit distance of the free transcript (free_text, else ctc_text) to the grammar's answer
    free_distance: float | None = None
    # with decode.reject_nbest_margin: the answer's score above the best-ranked answer of the n-best
    # that is another command (`command_lead`); None when the check is off or no other command came up
    command_lead: float | None = None

    @property
    def heard_free(self) -> str | None:
        """What the model heard when it could say anything (the free beam's best, else the CTC head's
        best path): the free side of the distance check."""
        return self.free_text if self.free_text is not None else self.ctc_text

    @property
    def heard_nothing(self) -> bool:
        """The free beam's best or the CTC head's best path exists and has no word: the grammar's
        answer is then its guess at noise, turned away by `judge` whenever a check is on and left out
        of the calibration (reject._pair). Either side: where the CTC head hears nothing, the free
        beam's word is the decoder completing noise into a word (a warzone model's free beam heard
        "attack" in brown noise, its CTC head nothing); no person's accepted answer on six sets had an
        empty CTC path (docs/benchmarks.md "The CTC head heard nothing")."""
        return any(side is not None and not side.split() for side in (self.free_text, self.ctc_text))

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


# ------------------------------------------------------------------ the thresholds that apply


def ctc_margin(reject_margin: float | str, max_ctc_gap: float, constrained: bool) -> float:
    """The CTC-gap threshold that applies: reject_margin with a grammar (when it is a number),
    max_ctc_gap otherwise. 0 = no gap check."""
    if constrained and reject_margin != "auto":
        return float(reject_margin)
    return float(max_ctc_gap)


def ctc_weight_for(ctc_weight: float, free_ctc_weight: float | None, constrained: bool) -> float:
    """The CTC weight of a beam search: ctc_weight held to a grammar, free_ctc_weight (when set)
    for a free one (free decoding, and the free beam the distance check compares with)."""
    return ctc_weight if constrained or free_ctc_weight is None else free_ctc_weight


def distance_limit(reject_distance: float | str, constrained: bool) -> float:
    """The free/constrained word-distance threshold that applies (1.0 = no check: free
    decoding, or `auto` not chosen yet)."""
    if constrained and reject_distance != "auto":
        return float(reject_distance)
    return 1.0


@dataclass(frozen=True)
class Rules:
    """The thresholds a decoded result is judged by, from a decode section (DecodeSettings or an
    export's config.json) and whether a grammar constrained the search."""

    margin: float  # CTC gap above this: rejected (0 = off)
    distance: float  # free transcript farther than this from the answer: rejected (1 = off)
    min_confidence: float
    lead: float = 0.0  # with a grammar: an answer less than this above another command: ambiguous (0 = off)
    keep: int = 0  # n-best entries a result reports (decode.nbest; the search may hold more for `lead`); 0 = all
    slack: int = 0  # words of difference the distance check always lets through
    spans: tuple[float, ...] = ()  # the longest training utterance of at most n words (decode.gap_spans)
    span_factor: float = 0.0  # the gap is a mean over at most this many spans of the answer's words; 0 = off

    @property
    def checking(self) -> bool:
        """Whether any "not understood" check is on (every one off: the grammar's best path answers)."""
        return self.margin > 0 or self.distance < 1

    @classmethod
    def of(cls, decode: Any, constrained: bool) -> Rules:
        """`decode`: anything with the decode settings as attributes or keys."""
        get = decode.get if isinstance(decode, dict) else lambda key: getattr(decode, key)
        lead = get("reject_nbest_margin")  # None: an export config from before the setting
        return cls(
            ctc_margin(get("reject_margin"), get("max_ctc_gap"), constrained),
            distance_limit(get("reject_distance"), constrained),
            float(get("min_confidence")),
            float(lead or 0.0) if constrained else 0.0,
            int(get("nbest") or 0),
            int(get("reject_distance_slack") or 0),  # None: an export config from before the setting
            tuple(get("gap_spans") or ()),
            float(get("gap_span_factor") or 0.0),
        )

    def search_nbest(self, beam: int, rescore: bool) -> int:
        """Answers the search keeps: the whole beam when something judges the n-best after it (the
        slot heads' rerank, the ambiguity check), else the ones a result reports. Both paths use it."""
        return max(self.keep, beam) if rescore or self.lead > 0 else self.keep


# ------------------------------------------------------------------ before the model is asked


def heard_speech(wave: np.ndarray, sample_rate: int, threshold: float, vad_model: Path | None = None) -> bool:
    """The no-speech gate: whether some 32 ms window of the file reaches `threshold` of Silero
    VAD speech probability. True (no gate) when the threshold is 0 or the model is not installed.
    `vad_model`: the Silero graph to use (an export folder's copy) instead of openwakeword's."""
    return speech_bounds(wave, sample_rate, threshold, vad_model, first_only=True) is not None


def speech_bounds(
    wave: np.ndarray, sample_rate: int, threshold: float, vad_model: Path | None = None, first_only: bool = False,
    gate: float | None = None,
) -> tuple[int, int] | None:
    """(start, end) samples of the file from the first to the last 32 ms window that reaches
    `threshold` of Silero VAD speech probability; None when none does. The whole file when the
    threshold is 0 or the model is not installed. `first_only`: stop at the first such window
    (the gate's question; its end is then that window's). `gate` (never above `threshold`): a
    file none of whose windows reaches `threshold` but one reaches `gate` is speech the VAD
    cannot place, (len(wave), 0), which any span widens (speech_part); one pass either way."""
    vad = _silero(vad_model) if threshold > 0 else None
    if vad is None:
        return 0, len(wave)
    from seqx.listen.vad import SAMPLE_RATE, WINDOW, Windower

    audio = np.asarray(wave, dtype=np.float32)
    if sample_rate != SAMPLE_RATE:
        import soxr

        audio = soxr.resample(audio, sample_rate, SAMPLE_RATE)
    audio = at_vad_level(audio, SAMPLE_RATE)
    gate = threshold if gate is None else min(gate, threshold)
    vad.reset()
    windower = Windower()
    first = last = -1
    heard = False  # some window reached the gate
    for index, window in enumerate([*windower.feed(audio), *windower.flush()]):
        prob = vad.prob(window)
        heard = heard or prob >= gate
        if prob >= threshold:
            first = index if first < 0 else first
            last = index
        if first_only and heard:
            break
    if first < 0:
        return (len(wave), 0) if heard else None
    scale = sample_rate / SAMPLE_RATE
    return round(first * WINDOW * scale), min(len(wave), round((last + 1) * WINDOW * scale))


def speech_part(
    wave: np.ndarray, sample_rate: int, vad_threshold: float, margin_s: float | None, vad_model: Path | None = None,
    vad_gate: float | None = None,
) -> np.ndarray | None:
    """The part of a file the model is asked about: from `margin_s` before the speech to `margin_s`
    after it (the whole file when `margin_s` is None); None when Silero VAD hears no speech. Why:
    training files have 0.05-0.4 s of lead-in and tail, and a person's recording often has seconds
    of silence or room around the command, which the model never heard (2 s each side: 4 of 5
    human cards files -> 1 of 5, docs/benchmarks.md).

    The speech runs from the first to the last sound that either Silero VAD or loudness (a 10 ms
    frame within 20 dB of the loudest: seqx/featurize/span.py) finds: only what both call
    silence is cut. Silero alone misses the first word of a quiet recording ("front" of "front
    center" 30 dB down, over room tone); where the room is within 20 dB of the voice, loudness
    finds sound everywhere and nothing is cut, as before.

    None (no speech) only when no window reaches `vad_gate` either (None: vad_threshold; never
    above it): a file whose speech Silero hardly believes (band-limited, a radio) is cut by
    loudness alone."""
    bounds = speech_bounds(wave, sample_rate, vad_threshold, vad_model, margin_s is None, vad_gate)
    if bounds is None or margin_s is None:
        return None if bounds is None else wave
    loud = speech_span(np.asarray(wave, dtype=np.float32), sample_rate)
    first, last = min(bounds[0], loud[0]), max(bounds[1], loud[1])
    pad = round(margin_s * sample_rate)
    return wave[max(0, first - pad) : min(len(wave), last + pad)]


_VAD = threading.local()  # per thread, the Silero sessions by model file (None when one cannot be loaded)


def _silero(path: Path | None = None):  # noqa: ANN202 (SileroVad | None; imported late: onnxruntime is optional on the torch path)
    """This thread's Silero VAD, loaded once per thread: it carries its LSTM state from window to
    window, so threads reading files side by side (seqx/decode/transcribe.py) each need their own."""
    sessions: dict = _VAD.__dict__.setdefault("sessions", {})
    if path not in sessions:
        from seqx.listen.vad import SileroVad, silero_model_path

        found = path if path is not None else silero_model_path()
        try:
            sessions[path] = SileroVad(found) if found is not None else None
        except ImportError:
            sessions[path] = None
    return sessions[path]


def gate(
    result: Result, wave: np.ndarray, sample_rate: int, silence_dbfs: float, vad_threshold: float,
    vad_model: Path | None = None, margin_s: float | None = None, vad_gate: float | None = None,
    floor_snr_db: float | None = None,
) -> np.ndarray | None:
    """Silence and no-speech checks before the model is asked: None when the file stops here
    (`result` says why), else the part of it to decode (`speech_part`: the speech and `margin_s`
    either side; the whole file when `margin_s` is None), over a pink noise floor `floor_snr_db`
    below the speech when that is set (seqx/data/noise.py `with_noise_floor`)."""
    wave = np.asarray(wave, dtype=np.float32)
    if wave.size == 0 or loudness_dbfs(wave, sample_rate) < silence_dbfs:
        # digital silence is unlike anything a model trains on; don't let it guess a command
        result.no_speech, result.reason = True, "silence"
        return None
    part = speech_part(wave, sample_rate, vad_threshold, margin_s, vad_model, vad_gate)
    if part is None:
        result.no_speech, result.reason = True, "no speech"
        return None
    result.heard_seconds = len(part) / sample_rate
    return part if floor_snr_db is None else with_noise_floor(part, sample_rate, floor_snr_db)


# ------------------------------------------------------------------ after the search


@dataclass
class Searched:
    """A batch's search: the n-best lists, the CTC gap of each best, and with a grammar and
    `decode.free_beam` the free (unconstrained) best of the same encoder pass beside it."""

    nbests: list[list[Hypothesis]]
    gaps: list[float | None]
    free: list[Hypothesis | None]  # the free beam's best; None without one
    free_gaps: list[float | None]  # the constrained best's joint score below the free best's, per frame
    ctc_best: list[list[int]]  # the CTC head's best path, collapsed: its tokens ([] without a CTC head)


def joint_gaps(
    best: Sequence[Hypothesis | None], free: Sequence[Hypothesis | None], mem_lens: Sequence[int], length_penalty: float
) -> list[float | None]:
    """Per utterance, (free best's joint log-score - constrained best's) / encoder frames: a
    log-likelihood ratio per frame (0 when they agree; large when the grammar's answer is far
    less likely than what the model would say freely; below 0 when the narrower free beam found
    a longer answer of lower total score). Scores are un-normalized first (the beam ranks by
    score / (tokens + 1) ** length_penalty); a flagged free best does not count."""
    gaps: list[float | None] = []
    for b, f, frames in zip(best, free, mem_lens, strict=True):
        if b is None or f is None or f.flagged:
            gaps.append(None)
            continue
        raw_b = b.score * float(len(b.tokens) + 1) ** length_penalty
        raw_f = f.score * float(len(f.tokens) + 1) ** length_penalty
        gaps.append((raw_f - raw_b) / max(int(frames), 1))
    return gaps


def ctc_best_paths(logp: np.ndarray, mem_lens: np.ndarray, blank: int) -> list[list[int]]:
    """The CTC head's best path of each utterance, repeats merged and blanks dropped (B lists of
    token ids): the cheapest free transcript, from log-posteriors logp (B, S, V) already computed."""
    best = np.asarray(logp).argmax(axis=-1)  # (B, S)
    S = best.shape[1]
    valid = np.arange(S)[None, :] < np.asarray(mem_lens)[:, None]
    changed = np.ones_like(valid)
    changed[:, 1:] = best[:, 1:] != best[:, :-1]
    keep = valid & changed & (best != blank)
    return [row[mask].tolist() for row, mask in zip(best, keep, strict=True)]


def note(result: Result, found: Searched, k: int, detokenize: Detokenize, has_ctc: bool) -> None:
    """The checks' signals of batch item k onto its result (before `judge` decides on it)."""
    result.ctc_gap, result.free_gap = found.gaps[k], found.free_gaps[k]
    free = found.free[k]
    result.free_text = detokenize(free.tokens) if free is not None else None
    result.ctc_text = detokenize(found.ctc_best[k]) if has_ctc else None


class Parser(Protocol):
    """What `judge` needs of a grammar (seqx.grammar.model.Grammar)."""

    def parse(self, text: str) -> Parse | None: ...


def command_lead(hyps: list[Hypothesis], texts: list[str], grammar: Parser) -> float | None:
    """The best answer's score minus that of the best-ranked answer in the n-best that is another
    command (another intent or slot value, or no parse); None when every answer is the same command.

    Why: a right answer usually stands far above its nearest rival, a wrong one (fourteen heard as
    forty) has a close one; on the demo models this tells right from wrong answers far better than
    the CTC gap (AUC 0.90-0.95 against 0.65-0.67, docs/benchmarks.md "The grammar's n-best")."""

    def command(text: str) -> tuple[str, tuple[tuple[str, str], ...]] | None:
        parse = grammar.parse(text)
        return None if parse is None else (parse.intent, tuple(sorted((k, str(v)) for k, v in parse.slots.items())))

    best = command(texts[0])
    for hyp, text in zip(hyps[1:], texts[1:]):
        if command(text) != best:
            return float(hyps[0].score) - float(hyp.score)
    return None


def judge(
    result: Result, hyps: list[Hypothesis], detokenize: Detokenize, rules: Rules, grammar: Parser | None
) -> None:
    """The n-best onto the result and the verdict: understood (with the grammar's parse), or not
    understood with the reason (no answer, cut off, rejected, ambiguous, low confidence)."""
    texts = [detokenize(h.tokens) for h in hyps]
    result.nbest = [
        {"text": t, "score": h.score, "confidence": h.confidence, "flagged": h.flagged}
        | ({"slot_score": h.slot_score} if h.slot_score is not None else {})
        for t, h in zip(texts, hyps)
    ][: rules.keep or None]
    best = hyps[0] if hyps else None
    if best is None:
        result.no_speech, result.reason = True, "no answer"
        return
    result.score = float(best.score)
    result.confidence = float(best.confidence) if math.isfinite(best.confidence) else 0.0
    result.text = texts[0]
    if result.heard_seconds is not None:  # over a long piece, the mean over a command's length (gap_span.py)
        result.ctc_gap = spanned_gap(result.ctc_gap, result.heard_seconds, len(result.text.split()), rules.spans,
                                     rules.span_factor)  # fmt: skip
    # a looping or runaway hypothesis (flagged by the search) is never passed off as a command,
    # nor one the CTC head finds far less likely than what it heard (a made-up command, or the
    # grammar's nearest sentence to something it cannot say)
    made_up = rules.margin > 0 and result.ctc_gap is not None and result.ctc_gap > rules.margin
    if grammar is not None:
        # what the model hears when it may say anything, against what the grammar made of it
        heard = result.heard_free
        if heard is not None:
            result.free_distance, checked = distances(heard, result.text, rules.slack)
            made_up |= checked > rules.distance
            # nothing heard: the slack would let a one-word answer through, and the CTC gap may still be
            # under the margin (a free beam that made "attack" of brown noise, docs/decoding.md)
            made_up |= rules.checking and result.heard_nothing
    ambiguous = False
    if grammar is not None and rules.lead > 0 and result.text:
        result.command_lead = command_lead(hyps, texts, grammar)
        ambiguous = result.command_lead is not None and result.command_lead < rules.lead
    reason = (
        "no answer" if not result.text
        else "cut off" if best.flagged
        else "rejected" if made_up
        else "ambiguous" if ambiguous
        else "low confidence" if result.confidence < rules.min_confidence
        else None
    )  # fmt: skip
    if reason is not None:
        result.text, result.no_speech, result.reason = "", True, reason
        return
    result.understood = True
    parse = grammar.parse(result.text) if grammar is not None else None
    if parse is not None:
        result.intent, result.slots = parse.intent, dict(parse.slots)


def join_pieces(result: Result, pieces: Sequence[Any], parts: Sequence[Result]) -> None:
    """A long recording's result from its pieces (seqx.listen.segment.Piece) and theirs: the
    understood pieces' texts joined, one command's parse as the file's."""
    from seqx.listen.segment import join_texts

    result.segments = [
        {"start": round(p.start, 3), "end": round(p.end, 3), "text": r.text, "intent": r.intent, "slots": r.slots,
         "understood": r.understood}
        for p, r in zip(pieces, parts, strict=True)
    ]  # fmt: skip
    heard = [(p, r) for p, r in zip(pieces, parts, strict=True) if r.understood]
    result.text = join_texts([r.text for _, r in heard], [p.hard_cut for p, _ in heard])
    result.understood = bool(heard)
    # nothing understood: say why from the pieces, so speech the checks turned away is not called
    # "no speech" (the first piece that heard something gives its reason: rejected, ambiguous, ...)
    said = next((r.reason for r in parts if r.reason not in (None, "silence", "no speech")), "no speech")
    result.no_speech, result.reason = not heard, None if heard else said
    if len(heard) == 1:  # one command in a long recording: its parse is the file's
        result.intent, result.slots = heard[0][1].intent, heard[0][1].slots
    result.confidence = min((r.confidence for _, r in heard), default=0.0)


def clipping_warning(result: Result) -> str | None:
    """What `seqx transcribe` says of a clipped file (stderr; the result line stays as scripts read it)."""
    if not result.clipped:
        return None
    return f"{result.path}: clipped ({100 * result.clipped:.1f}% of samples flat at the peak): turn the microphone's gain down"


def result_line(result: Result) -> str:
    """One result as text, as `seqx transcribe` prints it on every path: the words and
    `intent {slot=value ...}`, or `not understood (reason)`."""
    if not result.understood:
        return "not understood" + (f" ({result.reason})" if result.reason else "")
    if result.intent is None:
        return result.text
    return f"{result.text}   {command_text(result.intent, result.slots)}"


def command_text(intent: str, slots: dict[str, Any] | None) -> str:
    """`intent {slot=value ...}`: a command as `seqx transcribe` and `seqx listen` print it."""
    from seqx.grammar.model import output_text

    filled = " ".join(f"{name}={output_text(value)}" for name, value in (slots or {}).items())
    return f"{intent} {{{filled}}}"
