"""The speech embedding as one convolution over a whole utterance: `embedding_stream.onnx`.

openwakeword's embedding_model.onnx maps one window of 76 mel frames (N, 76, 32, 1) to a 96-d
vector, and openwakeword slides it every 8 frames: neighbouring windows share 68 of their 76
frames, so ~9/10 of its convolutions are computed again and again. Its layers allow running it
once over the whole mel sequence instead: every convolution is `valid` along time (the padding
is along the 32 mel bands only), and the three poolings that stride along time (2x2) make a
total time stride of 8, the windows' stride. Over (1, F, 32, 1) the same layers therefore give
(F - 76) // 8 + 1 outputs, the n-th being window n's embedding.

The rewrite only replaces the graph's first node (a Reshape to (N, 1, 76, 32), fixed at 76
frames) and its last (a Reshape of (N, 96, 1, 1) to (N, 1, 1, 96)) by Transposes that allow any
length; weights and every other node are openwakeword's. Measured: equal to the bit, 8x less
CPU on a 2 s command (docs/benchmarks.md, "2026-11-25: featurizer speed (issue #17)").

Two users, one rewrite (this module): `seqx export` writes the graph into the export folder (the
runtime needs no openwakeword package), and the torch featurizer (seqx.featurize.embedding) runs
it from a per-user cache, made once from the installed package's graph (`stream_model_path`).
Rewriting needs the `onnx` package; running the result needs only onnxruntime.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

import numpy as np

from seqx.errors import DiskFullError, SeqxError
from seqx.featurize.embedding import DIM, STRIDE, WINDOW, SpeechEmbedding, model_version
from seqx.featurize.embedding import MEL_BANDS as BANDS
from seqx.stage import atomic_write

REWRITE_VERSION = 1  # bump when stream_model changes: a cached graph of another version is not used


def stream_model(source: Path) -> Any:
    """embedding_model.onnx (one window a row) -> the same layers over a whole utterance (an onnx.ModelProto)."""
    import onnx
    from onnx import TensorProto, helper

    model = onnx.load(str(source))
    graph = model.graph
    first, last = graph.node[0], graph.node[-1]
    if first.op_type != "Reshape" or last.op_type != "Reshape" or len(graph.input) != 1:
        raise SeqxError(f"{source}: not the speech-embedding graph this rewrite knows (openwakeword 0.5.1's)")
    nodes = list(graph.node)
    # (1, F, 32, 1) -> (1, 1, F, 32): what the Reshape did to each 76-frame window
    nodes[0] = helper.make_node("Transpose", [first.input[0]], [first.output[0]], name="stream_in", perm=[0, 3, 1, 2])
    # (1, 96, n, 1) -> (1, n, 1, 96): one row per window position
    nodes[-1] = helper.make_node("Transpose", [last.input[0]], [last.output[0]], name="stream_out", perm=[0, 2, 3, 1])
    del graph.node[:]
    graph.node.extend(nodes)
    shapes = {first.input[1], last.input[1]}
    kept = [t for t in graph.initializer if t.name not in shapes]
    del graph.initializer[:]
    graph.initializer.extend(kept)
    name_in, name_out = graph.input[0].name, graph.output[0].name
    del graph.input[:], graph.output[:], graph.value_info[:]
    graph.input.append(helper.make_tensor_value_info(name_in, TensorProto.FLOAT, [1, "frames", BANDS, 1]))
    graph.output.append(helper.make_tensor_value_info(name_out, TensorProto.FLOAT, [1, "windows", 1, DIM]))
    onnx.checker.check_model(model)
    return model


def write_stream_model(source: Path, out: Path) -> None:
    """`stream_model(source)` saved at `out`."""
    import onnx

    onnx.save(stream_model(source), str(out))


def check_stream_model(source: Path, stream: Path, frames: int = 76 + 8 * 20 + 5) -> float:
    """Largest |stream - window by window| on a random mel sequence; above 1e-4 is an error."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.log_severity_level = 3
    windowed = ort.InferenceSession(str(source), options, providers=["CPUExecutionProvider"])
    whole = ort.InferenceSession(str(stream), options, providers=["CPUExecutionProvider"])
    mel = np.random.default_rng(0).uniform(-1.0, 3.0, (frames, BANDS)).astype(np.float32)
    windows = SpeechEmbedding.windows(mel)  # (n, 76, 32, 1)
    n = windows.shape[0]
    want = windowed.run(None, {windowed.get_inputs()[0].name: windows})[0].reshape(n, DIM)
    used = mel[: WINDOW + STRIDE * (n - 1)]  # the frames the windows cover (a short tail makes none)
    got = whole.run(None, {whole.get_inputs()[0].name: used[None, :, :, None]})[0].reshape(-1, DIM)
    if got.shape != want.shape:
        raise SeqxError(f"{stream.name} gives {got.shape[0]} embeddings for {n} windows")
    diff = float(np.abs(got - want).max())
    if diff > 1e-4:
        raise SeqxError(f"{stream.name} differs from the window-by-window embedding by {diff:.2g}")
    return diff


def cache_dir() -> Path:
    """Where made graphs are kept: $SEQX_CACHE_DIR when set (the test suite's own folder), else
    $XDG_CACHE_HOME/seqx (~/.cache/seqx)."""
    if os.environ.get("SEQX_CACHE_DIR"):
        return Path(os.environ["SEQX_CACHE_DIR"])
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "seqx"


def stream_model_path(source: Path) -> Path | None:
    """The whole-utterance graph of `source` (the installed package's embedding_model.onnx), made and
    checked once per user and kept in `cache_dir()` under a name holding the openwakeword version,
    the source's SHA-256 and REWRITE_VERSION, so that another package or rewrite never uses it.
    None when it cannot be made here (no `onnx` package, a cache folder that cannot be written):
    the caller then runs the window-by-window graph, which gives the same numbers, slower."""
    digest = hashlib.sha256(source.read_bytes()).hexdigest()[:16]  # ~2 ms: the graph is 1.3 MB
    path = cache_dir() / f"embedding_stream-openwakeword-{model_version()}-{digest}-r{REWRITE_VERSION}.onnx"
    if path.is_file():
        return path
    try:
        import onnx
    except ImportError:
        return None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with atomic_write(path) as tmp:  # several workers may make it at once: each renames a whole file
            onnx.save(stream_model(source), str(tmp))
            check_stream_model(source, tmp)  # a graph that differs is never kept
    except (OSError, DiskFullError):
        return None
    return path
