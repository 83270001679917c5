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
- no speech: no 32 ms window reaches `decode.vad_gate` of Silero VAD speech probability
  (loud noise; the model is not asked either). Otherwise the model hears the file from
  `decode.speech_margin_s` before its first sound to as much after the last: a person's seconds
  of silence around a command are nothing it trained on;
- rejected: the CTC gap of the answer (seqx/decode/ctc_gap.py: how much less likely per
  frame than the CTC head's own best path) is above `decode.reject_margin` when a grammar
  constrained the search, `decode.max_ctc_gap` when it did not; or, with a grammar, the
  free transcript of the same encoder pass (a free beam of `decode.free_beam`, else the CTC
  best path) is more than `decode.reject_distance` of its words away from the grammar's
  answer: the model heard something the grammar cannot say, and the grammar's nearest
  sentence is not what was said;
- low confidence: below `decode.min_confidence` (off by default); cut off: a loop or the
  length cap; no answer: the constrained beam ended no sentence.

Those decisions, the `Result` and the ranking of hypotheses are seqx/decode/result.py, which
imports no torch: the exported-model runtime (seqx/runtime/) decides with the same code.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
import torch

from seqx.decode.bundle import Bundle
from seqx.decode.ctc_gap import ctc_gaps_from
from seqx.decode.result import (  # the torch-free half, shared with seqx.runtime
    AUDIO_SUFFIXES, Hypothesis, Result, Rules, Searched, ctc_best_paths, expand_inputs, gate, heard_speech,
    join_pieces, joint_gaps, judge, loudness_dbfs, note,
)  # fmt: skip
from seqx.decode.search import decode_batch
from seqx.decode.slot_rescore import Rescorer, rerank_all
from seqx.errors import AudioError
from seqx.featurize.samples import read_audio
from seqx.grammar.errors import GrammarError
from seqx.grammar.model import Grammar
from seqx.grammar.tokens import TokenAutomaton
from seqx.recipe import DecodeSettings
from seqx.report import Collect, Reporter
from seqx.runtime.ctc import ctc_gaps as runtime_ctc_gaps
from seqx.runtime.ctc import forgiven, word_starts
from seqx.torch_threads import ThreadGovernor

__all__ = [  # the result half is re-exported: callers import it from here as before
    "AUDIO_SUFFIXES", "Constraint", "Hypothesis", "PreparedFiles", "Result", "Searched", "expand_inputs",
    "heard_speech", "loudness_dbfs", "search", "search_checked", "transcribe_files", "transcribe_waves",
]


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


def search_checked(
    bundle: Bundle,
    feats: list[torch.Tensor],
    settings: DecodeSettings,
    use_cache: bool = True,
    automaton: TokenAutomaton | None = None,
    rescorer: Rescorer | None = None,
) -> Searched:
    """`search`, and with a grammar a free beam of `decode.free_beam` over the same encoder
    output: what the model hears when it may say anything, to check the grammar's answer by.

    `rescorer` (the model's intent/slot heads, `decode.slot_weight`): the constrained beam keeps
    its whole n-best (nbest = beam), which the heads rerank before the checks measure the best."""
    device, model = bundle.device, bundle.model
    lengths = torch.tensor([f.shape[0] for f in feats], device=device)
    batch = torch.nn.utils.rnn.pad_sequence(feats, batch_first=True).to(device)
    B = len(feats)
    with torch.inference_mode():
        with autocast_for(device, settings.precision):
            memory, mem_lens = model.encode(batch, lengths)
        ctc = model.ctc_logprobs(memory.float()) if bundle.dims.ctc else None
        rescore = rescorer is not None and automaton is not None and model.slot_heads is not None
        slots = model.slot_logprobs(memory.float(), mem_lens).cpu().numpy() if rescore else None
        keep = Rules.of(settings, automaton is not None).search_nbest(settings.beam, rescore)
        wide = settings.merged(nbest=keep)
        with autocast_for(device, settings.precision):
            nbests = decode_batch(
                model, memory, mem_lens, wide, use_cache=use_cache, ctc_logprobs=ctc, grammar=automaton
            )
            free_nbests = (
                decode_batch(model, memory, mem_lens, settings.merged(beam=settings.free_beam, nbest=1),
                             use_cache=use_cache, ctc_logprobs=ctc)  # fmt: skip
                if automaton is not None and settings.free_beam > 0
                else None
            )
        nbests = rerank_all(rescorer if rescore else None, nbests, slots, bundle.tokenizer.decode, keep)
        free: list[Hypothesis | None] = [h[0] if h else None for h in free_nbests] if free_nbests else [None] * B
        best = [h[0] if h else None for h in nbests]
        free_gaps = joint_gaps(best, free, mem_lens.tolist(), settings.length_penalty)
        if ctc is None:
            return Searched(nbests, [None] * B, free, free_gaps, [[] for _ in range(B)])
        answers = [h[0].tokens if h else [] for h in nbests]
        ctc_host, lens_host = ctc.cpu().numpy(), mem_lens.cpu().numpy()  # one copy off the device, for both below
        if automaton is not None and settings.gap_forgives_insertions:
            starts = word_starts(bundle.tokenizer.id_to_piece, ctc.shape[-1])
            agree = forgiven([h.tokens if h else None for h in best], [h.tokens if h else None for h in free])
            gaps = runtime_ctc_gaps(ctc_host, lens_host, answers, bundle.dims.blank_id, starts, agree)
        else:
            gaps = ctc_gaps_from(ctc, mem_lens, answers, bundle.dims.blank_id)
        best_paths = ctc_best_paths(ctc_host, lens_host, bundle.dims.blank_id)
    gaps_or_none = [g if h else None for g, h in zip(gaps.tolist(), nbests, strict=True)]
    return Searched(nbests, gaps_or_none, free, free_gaps, best_paths)


def featurize(bundle: Bundle, wave: torch.Tensor, views: int = 1) -> torch.Tensor:
    """Raw waveform -> CMVN-normalized feature frames, as in training; with a speech embedding and
    views > 1, the mean of that many views of it (decode.views)."""
    with torch.inference_mode():
        return bundle.cmvn(bundle.extractor.averaged(wave, views)).float()


@dataclass
class Constraint:
    """What a decode call restricts its answers to: the grammar and its compiled automaton (or none)."""

    grammar: Grammar | None = None
    automaton: TokenAutomaton | None = None
    rescorer: Rescorer | None = None  # the intent/slot heads' vote on the n-best (decode.slot_weight > 0)

    @classmethod
    def of(cls, bundle: Bundle, settings: DecodeSettings) -> Constraint:
        """`settings.grammar` resolved against the bundle and compiled once (a GrammarError names
        a word the tokenizer cannot spell)."""
        grammar = bundle.decode_grammar(settings.grammar)
        if grammar is None:
            return cls()
        try:
            return cls.of_grammar(bundle, grammar, settings)
        except GrammarError as err:
            where = "the model's grammar" if settings.grammar == "recipe" else settings.grammar
            raise GrammarError(f"{where}: {err}") from None

    @classmethod
    def of_grammar(cls, bundle: Bundle, grammar: Grammar, settings: DecodeSettings) -> Constraint:
        """`grammar` compiled, with the intent/slot heads' vote when `settings.slot_weight` asks for
        it, the bundle has heads and `grammar` is the one they were built from (the training grammar)."""
        grammar = grammar.spoken(bundle.tokenizer.normalize)  # parsed as decoded texts spell its words
        trained = bundle.grammar is not None and grammar.to_json() == bundle.grammar.to_json()
        heads = bundle.heads if trained and settings.slot_weight > 0 else None
        rescorer = Rescorer(heads, grammar, settings.slot_weight) if heads is not None else None
        return cls(grammar, bundle.automaton(grammar), rescorer)


class PreparedFiles:
    """Files read, gated and featurized once, for several decodes of the same files that differ only
    in the search: `seqx evaluate`'s free and constrained passes, bench/human.py's four systems.
    Silero VAD's gate and the speech embedding were 33 of the 57 s of `seqx evaluate` on the demo
    model (2-core AMD EPYC, cProfile), each done twice. A file is reused only by a call on the same
    bundle with the same gate and views settings (`key`); unreadable and long files are not kept
    (read again: the warning is said again, and a long file is cut by `_transcribe_long`)."""

    def __init__(self) -> None:
        self._files: dict[tuple, tuple[Result, torch.Tensor | None, float]] = {}
        self._bundles: list[Bundle] = []  # held, so that no other bundle can take a kept one's id()

    @staticmethod
    def key(bundle: Bundle, settings: DecodeSettings, path: str) -> tuple:
        gate = (settings.silence_dbfs, settings.vad_threshold, settings.speech_margin_s, settings.vad_gate,
                settings.floor_snr_db, settings.max_segment_s, settings.views)
        return id(bundle), path, gate

    def keep(self, bundle: Bundle, settings: DecodeSettings, result: Result, feats: torch.Tensor | None,
             seconds: float) -> None:
        """`result` as the gate left it (before any search), and its features (None: it stopped there)."""
        if not any(b is bundle for b in self._bundles):
            self._bundles.append(bundle)
        self._files[self.key(bundle, settings, result.path)] = (copy.deepcopy(result), feats, seconds)

    def get(self, bundle: Bundle, settings: DecodeSettings, path: str) -> tuple[Result, torch.Tensor | None, float] | None:
        """A fresh copy of a kept file's result, its features and what reading them cost; None if not kept."""
        found = self._files.get(self.key(bundle, settings, path))
        return None if found is None else (copy.deepcopy(found[0]), found[1], found[2])


def _gate(result: Result, wave: torch.Tensor, sample_rate: int, settings: DecodeSettings) -> torch.Tensor | None:
    """Silence and no-speech checks before the model is asked, and the part of the wave to decode
    (seqx/decode/result.py gate); None when the file stops here."""
    part = gate(result, wave.numpy(), sample_rate, settings.silence_dbfs, settings.vad_threshold,
                margin_s=settings.speech_margin_s, vad_gate=settings.vad_gate,
                floor_snr_db=settings.floor_snr_db)  # fmt: skip
    return None if part is None else torch.from_numpy(np.ascontiguousarray(part))


@dataclass
class _Read:
    """One file as reading it left it: its result so far and what comes next."""

    result: Result
    feats: torch.Tensor | None = None  # features to search; None: nothing to search (it stopped, or is long)
    seconds: float = 0.0  # reading, gating and featurizing it
    long_wave: torch.Tensor | None = None  # longer than decode.max_segment_s: cut at pauses afterwards
    error: AudioError | None = None  # unreadable


def _read(bundle: Bundle, settings: DecodeSettings, path: str) -> _Read:
    """Read, gate and featurize one file. Safe to run in several threads at once: the VAD is per thread
    (seqx/decode/result.py `_silero`), onnxruntime and torch release the GIL while they work."""
    start = time.perf_counter()
    result = Result(path=path)
    try:
        audio = read_audio(path, bundle.sample_rate)
    except AudioError as err:
        result.error = err.problem
        return _Read(result, error=err)
    wave, result.clipped = torch.from_numpy(audio.samples), audio.clipped
    result.duration = wave.numel() / bundle.sample_rate
    if result.duration > settings.max_segment_s:
        return _Read(result, seconds=time.perf_counter() - start, long_wave=wave)
    speech = _gate(result, wave, bundle.sample_rate, settings)
    if speech is None:
        result.decode_seconds = time.perf_counter() - start
        return _Read(result, seconds=result.decode_seconds)
    feats = featurize(bundle, speech, settings.views)
    return _Read(result, feats, time.perf_counter() - start)


def read_threads(files: int) -> int:
    """Threads that read files side by side: torch's thread count (OMP_NUM_THREADS where it is set), at
    most 8 and one per file. Why: reading a file (Silero's 32 ms windows, the speech embedding) runs on
    one core; two threads read the demo's 300 test files in 4.7 s against 9.5 s, the same features
    (2-core AMD EPYC, docs/benchmarks.md "Reading files side by side")."""
    return max(1, min(torch.get_num_threads(), 8, files))


def _read_all(bundle: Bundle, settings: DecodeSettings, paths: list[str]) -> Iterator[_Read]:
    """`_read` of every path, in order, by `read_threads` threads."""
    threads = read_threads(len(paths))
    if threads == 1:
        yield from (_read(bundle, settings, path) for path in paths)
        return
    pool = ThreadPoolExecutor(threads, thread_name_prefix="seqx-read")
    try:
        yield from pool.map(lambda path: _read(bundle, settings, path), paths)
    finally:  # Ctrl-C or an error: the files not started yet are not read (a `with` would read them all first)
        pool.shutdown(wait=True, cancel_futures=True)


def _giving_way(bundle: Bundle, files: int, settings: DecodeSettings) -> ThreadGovernor:
    """torch's threads for a search of `files` on a CPU in batches: fewer while another program keeps a
    core busy (seqx/torch_threads.py: 82 -> 48 s for `seqx evaluate` beside one busy process); a single
    batch is over before the first check."""
    return ThreadGovernor(enabled=bundle.device.type == "cpu" and files > settings.batch_size)


def transcribe_files(
    bundle: Bundle,
    paths: list[str],
    settings: DecodeSettings,
    reporter: Reporter | None = None,
    use_cache: bool = True,
    warn_unreadable: bool = True,
    constraint: Constraint | None = None,
    prepared: PreparedFiles | None = None,
) -> list[Result]:
    """Transcribe every path; unreadable files come back with `error` set, in input order.

    `warn_unreadable=False` is for a caller that prints each result's error itself
    (`seqx transcribe`), so the user is not told about the same file twice. `constraint`:
    the grammar already resolved (default: `settings.grammar` resolved here). `prepared`: files
    already read, gated and featurized by an earlier call on the same bundle (PreparedFiles).
    Files are read by `read_threads` threads, then searched in batches on the model's device.
    """
    constraint = constraint or Constraint.of(bundle, settings)
    reporter = reporter or Collect()
    results = [Result(path=p) for p in paths]
    loaded: list[tuple[int, torch.Tensor, float]] = []  # (index, features, load+featurize seconds)
    task = reporter.task("transcribe", total=len(paths), unit="file")
    unknown: list[int] = []  # files no earlier call read
    for index, path in enumerate(paths):
        known = prepared.get(bundle, settings, path) if prepared is not None else None
        if known is None:
            unknown.append(index)
            continue
        results[index], feats, seconds = known
        if feats is None:
            task.advance(1)
        else:
            loaded.append((index, feats, seconds))
    for index, read in zip(unknown, _read_all(bundle, settings, [paths[i] for i in unknown]), strict=True):
        results[index] = read.result
        if read.error is not None:
            if warn_unreadable:
                reporter.warn(str(read.error))
        elif read.long_wave is not None:
            _transcribe_long(read.result, read.long_wave, bundle, settings, constraint, time.perf_counter() - read.seconds)
        else:
            if prepared is not None:
                prepared.keep(bundle, settings, read.result, read.feats, read.seconds)
            if read.feats is not None:
                loaded.append((index, read.feats, read.seconds))
                continue
        task.advance(1)
    loaded.sort(key=lambda item: item[1].shape[0])
    with _giving_way(bundle, len(loaded), settings) as threads:
        for first in range(0, len(loaded), settings.batch_size):
            threads.tick()
            chunk = loaded[first : first + settings.batch_size]
            start = time.perf_counter()
            found = search_checked(
                bundle, [feats for _, feats, _ in chunk], settings, use_cache=use_cache,
                automaton=constraint.automaton, rescorer=constraint.rescorer,
            )
            batch_seconds = time.perf_counter() - start
            batch_audio = sum(results[i].duration for i, _, _ in chunk) or 1.0
            for k, (index, _, prep_seconds) in enumerate(chunk):
                result = results[index]
                # the batch's search time is shared in proportion to each file's audio length
                result.decode_seconds = prep_seconds + batch_seconds * result.duration / batch_audio
                _judge(result, found, k, bundle, settings, constraint.grammar)
            task.advance(len(chunk))
    task.close()
    return results


def _transcribe_long(
    result: Result, wave: torch.Tensor, bundle: Bundle, settings: DecodeSettings, constraint: Constraint, start: float
) -> None:
    """A recording longer than `decode.max_segment_s`: cut at pauses (seqx/listen/segment.py),
    each piece decoded like a file of its own, the understood pieces' texts joined."""
    from seqx.listen.segment import split_long
    from seqx.listen.vad import load_vad

    vad, _ = load_vad("silero")
    pieces = split_long(wave.numpy(), vad, settings.max_segment_s, sample_rate=bundle.sample_rate)
    parts = transcribe_waves(bundle, [torch.from_numpy(p.wave) for p in pieces], settings, constraint=constraint)
    join_pieces(result, pieces, parts)
    result.decode_seconds = time.perf_counter() - start


def _judge(
    result: Result, found: Searched, k: int, bundle: Bundle, settings: DecodeSettings, grammar: Grammar | None
) -> None:
    """Batch item k's signals and n-best onto its result, and the verdict (seqx/decode/result.py)."""
    note(result, found, k, bundle.tokenizer.decode, bundle.dims.ctc)
    judge(result, found.nbests[k], bundle.tokenizer.decode, Rules.of(settings, grammar is not None), grammar)


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
        speech = _gate(results[index], wave, bundle.sample_rate, settings)
        if speech is not None:
            loaded.append((index, featurize(bundle, speech, settings.views)))
    loaded.sort(key=lambda item: item[1].shape[0])
    with _giving_way(bundle, len(loaded), settings) as threads:
        for first in range(0, len(loaded), settings.batch_size):
            threads.tick()
            chunk = loaded[first : first + settings.batch_size]
            found = search_checked(
                bundle, [feats for _, feats in chunk], settings, automaton=constraint.automaton,
                rescorer=constraint.rescorer,
            )
            for k, (index, _) in enumerate(chunk):
                _judge(results[index], found, k, bundle, settings, constraint.grammar)
    seconds = time.perf_counter() - start
    audio = sum(r.duration for r in results) or 1.0
    for result in results:
        result.decode_seconds = seconds * result.duration / audio
    return results
