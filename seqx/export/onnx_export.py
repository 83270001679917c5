"""`seqx export`: a bundle -> a folder the torch-free runtime (seqx.runtime) runs.

    encoder.onnx     EncoderGraph (seqx/export/graphs.py), dynamic batch and time axes
    decoder_step.onnx  StepGraph: one token with explicit past self-attention K/V in and out
    config.json      the bundle's config (dims, features, CMVN, decode, grammar) + the grammar's token
                     automaton and VAD record (seqx/export/decoding.py) + an `export` section
    tokenizer.model  the sentencepiece model
    melspectrogram.onnx    (features.kind speech_embedding[+fbank]) openwakeword's mel graph, copied
    embedding_stream.onnx  openwakeword's embedding graph rewired to run once over a whole
                     utterance (seqx/featurize/embedding_graph.py), checked against the window-by-window one;
                     the openwakeword version is the config's feature_model: the folder is all a
                     device needs
    silero_vad.onnx  openwakeword's Silero VAD, when installed (for the runtime's no-speech gate)

The legacy TorchScript exporter (`dynamo=False`) is used: on torch 2.11 it traces these
graphs with data-dependent shapes (the past length, the memory length) as shape ops, while
the dynamo exporter needs every dynamic dimension declared as a symbolic constraint. Each
graph is checked with `onnx.checker` and then run once by onnxruntime against the torch
model before the folder is declared complete (config.json is written last).
"""

from __future__ import annotations

import json
import logging
import shutil
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from seqx.decode.bundle import CONFIG, TOKENIZER, Bundle
from seqx.errors import SeqxError
from seqx.export.decoding import decoding_config
from seqx.export.graphs import EncoderGraph, StepGraph
from seqx.stage import atomic_write_text

ENCODER, STEP = "encoder.onnx", "decoder_step.onnx"
FORMAT = "seqx-onnx"
FORMAT_VERSION = 2  # 2: the grammar's token automaton (`automaton`) and the VAD record (`vad`)
OPSET = 17


@dataclass
class ExportReport:
    folder: Path
    int8: bool
    sizes: dict[str, int]  # file -> bytes
    max_abs_diff: dict[str, float]  # graph output -> largest |onnxruntime - torch| on the check input

    @property
    def total_bytes(self) -> int:
        return sum(self.sizes.values())


def _dummy(bundle: Bundle, batch: int = 2, frames: int = 50) -> tuple[torch.Tensor, torch.Tensor]:
    feats = torch.randn(batch, frames, bundle.dims.n_feats)
    lens = torch.tensor([frames] + [frames - 9] * (batch - 1), dtype=torch.long)
    return feats, lens


def _export(
    module: torch.nn.Module, args: tuple, path: Path, inputs: list[str], outputs: list[str], axes: dict
) -> None:
    with warnings.catch_warnings():  # the tracer warns about every shape it turns into a constant check
        warnings.simplefilter("ignore")
        torch.onnx.export(
            module, args, str(path), input_names=inputs, output_names=outputs, dynamic_axes=axes,
            opset_version=OPSET, dynamo=False, do_constant_folding=True,
        )  # fmt: skip


def export_bundle(bundle: Bundle, out: str | Path, int8: bool = False, wake_word: str | None = None) -> ExportReport:
    """Write the exported folder for `bundle` (fp32, or with int8 linear layers) and check it; with
    `wake_word` (a shipped name or an openWakeWord .onnx file), the folder carries it for `seqx listen`."""
    import onnx

    if bundle.features.kind in ("fbank", "mfcc") and getattr(bundle.features, "kaldi", False):
        raise SeqxError("export: features.kaldi=true is not supported by the runtime (its fbank is torchaudio's)")
    wake_model = _wake_model(wake_word) if wake_word else None  # a bad name fails before the work
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    (out / CONFIG).unlink(missing_ok=True)  # an interrupted export must not look complete
    model = bundle.model.float().cpu().eval()
    dims = model.dims
    # the wrappers must be in eval mode too: the exporter restores each one's own mode afterwards,
    # and a wrapper left in training mode would switch the model's dropout on for whoever uses it next
    enc, step = EncoderGraph(model).eval(), StepGraph(model).eval()
    feats, lens = _dummy(bundle)
    H, dh, L = dims.heads, dims.d_model // dims.heads, dims.dec_layers
    heads = model.slot_heads is not None
    with torch.no_grad():
        memory, mem_lens, ctc, ck, cv = enc(feats, lens)[:5]
        N, t = ck.shape[1] * 2, 3  # two beams per utterance: the graph must not take rows == utterances
        past = torch.randn(L, N, H, t, dh)
        token = torch.full((N, 1), dims.bos_id, dtype=torch.long)
        step_args = (token, past, past.clone(), ck, cv, mem_lens)
    fp32_enc, fp32_step = out / ENCODER, out / STEP
    _export(
        enc, (feats, lens), fp32_enc, ["feats", "lens"],
        ["memory", "mem_lens", "ctc_logprobs", "cross_k", "cross_v"] + (["slot_logprobs"] if heads else []),
        {"feats": {0: "batch", 1: "frames"}, "lens": {0: "batch"}, "memory": {0: "batch", 1: "steps"},
         "mem_lens": {0: "batch"}, "ctc_logprobs": {0: "batch", 1: "steps"},
         "cross_k": {1: "batch", 3: "steps"}, "cross_v": {1: "batch", 3: "steps"}}
        | ({"slot_logprobs": {0: "batch"}} if heads else {}),
    )  # fmt: skip
    _export(
        step, step_args, fp32_step,
        ["token", "self_k", "self_v", "cross_k", "cross_v", "mem_lens"], ["logprobs", "new_self_k", "new_self_v"],
        {"token": {0: "rows"}, "self_k": {1: "rows", 3: "past"}, "self_v": {1: "rows", 3: "past"},
         "cross_k": {1: "batch", 3: "steps"}, "cross_v": {1: "batch", 3: "steps"}, "mem_lens": {0: "batch"},
         "logprobs": {0: "rows"}, "new_self_k": {1: "rows", 3: "next"}, "new_self_v": {1: "rows", 3: "next"}},
    )  # fmt: skip
    for path in (fp32_enc, fp32_step):
        onnx.checker.check_model(onnx.load(str(path)))
    if int8:
        _quantize(fp32_enc)
        _quantize(fp32_step)
    for path in (fp32_enc, fp32_step):
        optimized = _optimize(path)  # the onnxruntime version that optimized them
    diffs = _check_against_torch(out, enc, step, bundle, int8)
    shutil.copyfile(bundle.folder / TOKENIZER, out / TOKENIZER)
    assets = _copy_assets(bundle, out, wake_model)
    config = decoding_config(bundle, json.loads((bundle.folder / CONFIG).read_text()))  # grammar, automaton, vad
    config["export"] = {
        "format": FORMAT, "version": FORMAT_VERSION, "int8": int8, "opset": OPSET,
        "encoder": ENCODER, "decoder_step": STEP, "torch": torch.__version__, "assets": assets,
        "optimized_for": optimized,
    } | ({"wake_word": wake_model[1]} if wake_model else {})  # fmt: skip
    atomic_write_text(out / CONFIG, json.dumps(config, indent=1))  # last: its presence means complete
    sizes = {p.name: p.stat().st_size for p in sorted(out.iterdir()) if p.is_file()}
    return ExportReport(out, int8, sizes, diffs)


def _wake_model(name: str) -> tuple[Path, str]:
    """The wake word's model file, checked to be an openWakeWord model, and its label."""
    from seqx.listen.wake import open_wake_model, wake_model_path, wake_word_label

    path = wake_model_path(name)
    open_wake_model(path)  # one line saying so when it is not
    return path, wake_word_label(name)


def _copy_assets(bundle: Bundle, out: Path, wake_model: tuple[Path, str] | None = None) -> list[str]:
    """Put the feature graphs (speech embedding) and the Silero VAD next to the model graphs, so the
    runtime needs no openwakeword package; with a wake word, its model and the graphs it listens
    through (any kind of model); the names written. Copies an earlier export left there that this
    one does not write are removed."""
    from seqx.featurize import embedding
    from seqx.featurize.embedding_graph import check_stream_model, write_stream_model
    from seqx.listen.vad import silero_model_path
    from seqx.listen.wake import EXPORT_FILE
    from seqx.runtime.embedding import MEL_MODEL, STREAM_MODEL, WINDOW_MODEL

    written: list[str] = []
    if bundle.features.kind.startswith("speech_embedding") or wake_model:
        folder = embedding.model_dir()
        shutil.copyfile(folder / MEL_MODEL, out / MEL_MODEL)
        write_stream_model(folder / WINDOW_MODEL, out / STREAM_MODEL)
        check_stream_model(folder / WINDOW_MODEL, out / STREAM_MODEL)
        written += [MEL_MODEL, STREAM_MODEL]
    if wake_model:
        shutil.copyfile(wake_model[0], out / EXPORT_FILE)
        written.append(EXPORT_FILE)
    vad = silero_model_path()
    if vad is not None:
        shutil.copyfile(vad, out / vad.name)
        written.append(vad.name)
    for name in (MEL_MODEL, WINDOW_MODEL, STREAM_MODEL, "silero_vad.onnx", EXPORT_FILE):
        if name not in written:
            (out / name).unlink(missing_ok=True)
    return written


def _optimize(path: Path) -> str:
    """onnxruntime's graph optimizations up to the `extended` level (constant folding, LayerNorm,
    GELU, attention and MatMul fusions), applied once here and saved in place, so that the
    runtime's sessions need not redo them at every start: 48 -> 20 ms of CPU to open the two
    graphs of the cpu-profile model, and no slower to run. Returns the onnxruntime version (the
    runtime skips its own optimization only under that version; `all`-level fusions are left to
    the runtime, as they depend on the CPU). The graphs then hold onnxruntime's contrib ops
    (com.microsoft domain): they are for onnxruntime."""
    import onnxruntime as ort

    tmp = path.with_suffix(".opt.onnx")
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
    options.optimized_model_filepath = str(tmp)
    options.log_severity_level = 3
    ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    tmp.replace(path)
    return ort.__version__


def _quantize(path: Path) -> None:
    """Dynamic int8 (weights int8, activations quantized per batch at run time) of the MatMul/Gemm
    layers, in place. Per-channel weights keep the small projections' accuracy."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    tmp = path.with_suffix(".int8.onnx")
    root = logging.getLogger()
    level = root.level
    root.setLevel(logging.ERROR)  # quantize_dynamic logs "consider pre-processing" on the root logger each time
    try:
        quantize_dynamic(
            str(path), str(tmp), weight_type=QuantType.QInt8, per_channel=True, op_types_to_quantize=["MatMul", "Gemm"]
        )
    finally:
        root.setLevel(level)
    tmp.replace(path)


def _check_against_torch(out: Path, enc: EncoderGraph, step: StepGraph, bundle: Bundle, int8: bool) -> dict[str, float]:
    """Run both graphs on a fresh input (other sizes than the traced ones, past length 0) and compare
    with torch; an fp32 export that disagrees by more than 1e-3 is an error, not a warning."""
    import onnxruntime as ort

    feats, lens = _dummy(bundle, batch=3, frames=77)
    opts = ort.SessionOptions()
    opts.log_severity_level = 3
    e = ort.InferenceSession(str(out / ENCODER), opts, providers=["CPUExecutionProvider"])
    s = ort.InferenceSession(str(out / STEP), opts, providers=["CPUExecutionProvider"])
    with torch.no_grad():
        ref = enc(feats, lens)
        got = e.run(None, {"feats": feats.numpy(), "lens": lens.numpy()})
        dims = bundle.dims
        L, H, dh, N = dims.dec_layers, dims.heads, dims.d_model // dims.heads, feats.shape[0]
        N *= 3  # three beams per utterance here (two when traced)
        empty = torch.zeros(L, N, H, 0, dh)
        token = torch.full((N, 1), dims.bos_id, dtype=torch.long)
        ref_step = step(token, empty, empty, ref[3], ref[4], ref[1])
        got_step = s.run(None, {
            "token": token.numpy(), "self_k": empty.numpy(), "self_v": empty.numpy(), "cross_k": got[3],
            "cross_v": got[4], "mem_lens": got[1],
        })  # fmt: skip
    diffs = {
        "memory": float(np.abs(got[0] - ref[0].numpy()).max()),
        "ctc_logprobs": float(np.abs(got[2] - ref[2].numpy()).max()),
        "step_logprobs": float(np.abs(got_step[0] - ref_step[0].numpy()).max()),
    }
    if len(ref) > 5:  # the intent/slot heads' log-probs
        diffs["slot_logprobs"] = float(np.abs(got[5] - ref[5].numpy()).max())
    if not np.array_equal(got[1], ref[1].numpy()):
        raise SeqxError("export: the encoder graph's output lengths differ from the model's")
    if not int8 and max(diffs.values()) > 1e-3:
        worst = max(diffs, key=diffs.get)  # type: ignore[arg-type]
        raise SeqxError(f"export: onnxruntime differs from torch by {diffs[worst]:.2g} on {worst}")
    return diffs
