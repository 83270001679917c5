"""An exported model folder (written by `seqx export`), opened with onnxruntime: `load_exported(folder)`.

A folder missing a file, or one whose files do not load, is one `SeqxError` line that names the
folder and what is wrong; `is_exported(folder)` tells the CLI which path (torch bundle or this) to take.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from seqx.errors import SeqxError
from seqx.runtime.features import NumpyFeatures

CONFIG, TOKENIZER, ENCODER, STEP = "config.json", "tokenizer.model", "encoder.onnx", "decoder_step.onnx"
FORMAT = "seqx-onnx"
REQUIRED = (CONFIG, ENCODER, STEP, TOKENIZER)


def is_exported(folder: str | Path) -> bool:
    """An export folder (has, or should have, ONNX graphs) rather than a torch bundle."""
    folder = Path(folder)
    return (folder / ENCODER).exists() or (folder / STEP).exists() or _format(folder) == FORMAT


def _format(folder: Path) -> str | None:
    try:
        return json.loads((folder / CONFIG).read_text()).get("export", {}).get("format")
    except (OSError, ValueError, AttributeError):
        return None


@dataclass
class ExportedModel:
    folder: Path
    config: dict[str, Any]
    dims: dict[str, Any]
    decode: dict[str, Any]
    sample_rate: int
    features: NumpyFeatures
    encoder: Any  # onnxruntime.InferenceSession
    step: Any
    sp: Any  # sentencepiece.SentencePieceProcessor
    special_ids: set[int]
    automaton: dict[str, Any] | None  # the grammar over the tokens (TokenAutomaton.to_dict()): the search's mask
    grammar: Any  # seqx.grammar.model.Grammar, the same grammar as data: the parse of an answer; None without

    @cached_property
    def mask(self) -> tuple[Any, int] | None:
        """The automaton as the search's dense next-state table (built once, on first use)."""
        from seqx.runtime.search import automaton_table

        return automaton_table(self.automaton) if self.automaton is not None else None

    @cached_property
    def vad_model(self) -> Path | None:
        """The folder's own Silero graph (export copies it) so the no-speech gate needs no openwakeword."""
        path = self.folder / "silero_vad.onnx"
        return path if path.is_file() else None

    def detokenize(self, ids: list[int]) -> str:
        return self.sp.decode([int(i) for i in ids if int(i) not in self.special_ids])


def _threads() -> int:
    """onnxruntime threads: OMP_NUM_THREADS when set (a shared machine), else onnxruntime's choice (0)."""
    try:
        return max(0, int(os.environ.get("OMP_NUM_THREADS", "0")))
    except ValueError:
        return 0


def onnx_session(path: Path, threads: int, optimized: bool = False) -> Any:
    """An onnxruntime CPU session on `path`; a file that does not load is one SeqxError line.
    `optimized`: the graph was saved already optimized by this onnxruntime version (`seqx export`
    does so), so the session skips graph optimization (about half of opening a session)."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.log_severity_level = 3
    if optimized:
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    try:
        return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    except Exception as err:  # onnxruntime raises its own Fail/InvalidProtobuf types
        first = (str(err).splitlines() or [type(err).__name__])[0]
        raise SeqxError(f"{path}: not a loadable ONNX graph ({first[:160]})") from None


def _grammar(folder: Path, config: dict[str, Any]) -> tuple[dict[str, Any] | None, Any]:
    """The export's grammar, as a token automaton (the search's mask) and as a Grammar (the parse
    into intent and slots, with the torch path's own parser); (None, None) without one."""
    raw, automaton = config.get("grammar"), config.get("automaton")
    if not raw:
        return None, None
    if not (isinstance(automaton, dict) and "arcs" in automaton and "num_states" in automaton):
        raise SeqxError(f"{folder / CONFIG}: the model has a grammar but the export no token automaton for it "
                        f"(exported by an older seqx): run `seqx export` again")
    from seqx.grammar.errors import GrammarError
    from seqx.grammar.model import Grammar

    try:
        return automaton, Grammar.from_dict(raw)
    except (GrammarError, AttributeError, TypeError) as err:
        raise SeqxError(f"{folder / CONFIG}: broken export config (grammar: {err})") from None


def load_exported(folder: str | Path, threads: int | None = None) -> ExportedModel:
    folder = Path(folder)
    if not folder.is_dir():
        raise SeqxError(f"{folder}: no such model folder")
    missing = [name for name in REQUIRED if not (folder / name).is_file()]
    if missing:
        raise SeqxError(f"{folder}: incomplete export, missing {', '.join(missing)} (run `seqx export` again)")
    try:
        config = json.loads((folder / CONFIG).read_text())
        dims, decode, features = config["dims"], config["decode"], config["features"]
        sample_rate, cmvn = int(config["sample_rate"]), config["cmvn"]
    except (ValueError, KeyError, TypeError) as err:
        what = f"no {err}" if isinstance(err, KeyError) else "not valid JSON"
        raise SeqxError(f"{folder / CONFIG}: broken export config ({what})") from None
    if config.get("export", {}).get("format") != FORMAT:
        raise SeqxError(f"{folder / CONFIG}: not an exported model (no export section; run `seqx export`)")
    import sentencepiece as spm

    try:
        sp = spm.SentencePieceProcessor(model_file=str(folder / TOKENIZER))
    except (OSError, RuntimeError) as err:
        raise SeqxError(f"{folder / TOKENIZER}: not a sentencepiece model ({str(err)[:120]})") from None
    import onnxruntime as ort

    threads = _threads() if threads is None else threads
    optimized = config["export"].get("optimized_for") == ort.__version__
    specials = {dims["pad_id"], dims["bos_id"], dims["eos_id"], dims["blank_id"], sp.unk_id()}
    automaton, grammar = _grammar(folder, config)
    return ExportedModel(
        folder=folder, config=config, dims=dims, decode=decode, sample_rate=sample_rate,
        features=NumpyFeatures(features, sample_rate, cmvn, models=folder),
        encoder=onnx_session(folder / ENCODER, threads, optimized), step=onnx_session(folder / STEP, threads, optimized),
        sp=sp, special_ids=specials, automaton=automaton, grammar=grammar,
    )  # fmt: skip
