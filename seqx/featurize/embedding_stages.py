"""Shifted views of the speech embedding for half the CPU: the whole-utterance graph cut at its time poolings.

Training hears each utterance through one of `features.embed_views` embeddings whose windows start
STRIDE / n mel frames apart (seqx.featurize.embedding `views_of_mel`): 4 views were 4 runs of the
whole-utterance graph (seqx.featurize.embedding_graph) over the mel with its first 0, 2, 4, 6 frames
dropped. Every convolution of that graph is `valid` along time and three 2x2 max-poolings halve
time, so dropping 2k frames before the first pooling drops k frames after it: the layers up to the
first pooling give every even shift from one run, the layers up to the second give shifts 0 and 4
from one run and 2 and 6 from another, and only the layers after it run once per view. The graph
is cut after each pooling that strides along time but the last (`stage_models`), and `staged_views`
runs the stages with their outputs shared. Views 1 -> 4 of a command: the graph's cost 4x -> 2.2x
(docs/benchmarks.md "Shared stages for the views"); the same numbers to the bit (checked when the
stage graphs are made, and tested).

The stage graphs are made once per user from the whole-utterance graph, checked, and kept beside it
in seqx.featurize.embedding_graph's cache folder; making them needs the `onnx` package, running them
only onnxruntime. Without them, views are computed as before.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import pairwise
from pathlib import Path
from typing import Any

import numpy as np

from seqx.errors import DiskFullError, SeqxError
from seqx.featurize.embedding import DIM, MEL_BANDS, STRIDE, WINDOW, whole_embeddings, window_count
from seqx.stage import atomic_write

STAGES_VERSION = 1  # bump when the cut changes: cached stage graphs of another version are not used


def time_pool_outputs(model: Any) -> list[str]:
    """Outputs of the MaxPool nodes that halve time (the graph's third axis after `stream_in`)."""
    outputs = []
    for node in model.graph.node:
        strides = next((list(a.ints) for a in node.attribute if a.name == "strides"), [1, 1])
        if node.op_type == "MaxPool" and strides[0] == 2:
            outputs.append(node.output[0])
    return outputs


def stage_models(stream: Any) -> list[Any]:
    """The whole-utterance graph (an onnx.ModelProto) as consecutive graphs, cut after each pooling that
    halves time but the last: stage i's input is stage i - 1's output, the first's the mel, the last's
    output the embeddings."""
    import onnx
    from onnx.utils import Extractor

    inferred = onnx.shape_inference.infer_shapes(stream)  # the extractor needs the cut tensors' shapes
    cuts = time_pool_outputs(inferred)[:-1]
    if not cuts:
        raise SeqxError("the speech-embedding graph has no pooling along time to share views at")
    bounds = [inferred.graph.input[0].name, *cuts, inferred.graph.output[0].name]
    extractor = Extractor(inferred)
    return [extractor.extract_model([a], [b]) for a, b in pairwise(bounds)]


def staged_views(sessions: Sequence[Any], mel: np.ndarray, shifts: Sequence[int]) -> list[np.ndarray]:
    """(frames, 32) -> for each shift s, the (N_s, 96) embeddings of mel[s:]: what `whole_embeddings`
    gives for it, from stage runs shared between the shifts (module docstring). A shift that leaves
    less than one window gets (0, 96)."""
    outputs: dict[tuple[int, ...], np.ndarray] = {}  # stage outputs by the parities that led to them

    def stage_input(i: int, key: tuple[int, ...]) -> np.ndarray:
        if i == 0:
            return mel.astype(np.float32, copy=False)[None, :, :, None]  # (1, frames, 32, 1)
        return outputs[key]  # (1, channels, time, bands)

    def cut(x: np.ndarray, i: int, drop: int) -> np.ndarray:
        return np.ascontiguousarray(x[:, drop:] if i == 0 else x[:, :, drop:])

    last = len(sessions) - 1
    views = []
    for shift in shifts:
        want = window_count(mel.shape[0] - shift)  # the embeddings whole_embeddings(mel[shift:]) makes
        if want <= 0:
            views.append(np.zeros((0, DIM), np.float32))
            continue
        key: tuple[int, ...] = ()
        rest = shift
        for i in range(last):  # each stage ends in a pooling that halves time: drop the odd frame here
            parity, rest = rest % 2, rest // 2
            if key + (parity,) not in outputs:
                x = cut(stage_input(i, key), i, parity)
                outputs[key + (parity,)] = sessions[i].run(None, {sessions[i].get_inputs()[0].name: x})[0]
            key += (parity,)
        x = cut(stage_input(last, key), last, rest)
        out = sessions[last].run(None, {sessions[last].get_inputs()[0].name: x})[0].reshape(-1, DIM)
        views.append(out[:want])
    return views


def stage_model_paths(stream_path: Path) -> list[Path] | None:
    """The stage graphs of the whole-utterance graph at `stream_path`, made, checked and kept once per
    user beside it (its name holds the openwakeword version and the graph's digest; STAGES_VERSION is
    added). None when they cannot be made here (no `onnx` package, a folder that cannot be written):
    views are then computed one whole-graph run each, the same numbers."""
    stem = stream_path.name.removesuffix(".onnx")
    paths = [stream_path.with_name(f"{stem}-stage{i}-s{STAGES_VERSION}.onnx") for i in range(3)]
    if all(p.is_file() for p in paths):
        return paths
    try:
        import onnx
    except ImportError:
        return None
    try:
        models = stage_models(onnx.load(str(stream_path)))
        if len(models) != len(paths):
            raise SeqxError(f"{stream_path.name}: {len(models)} stages where 3 were expected")
        check_stage_models(stream_path, models)  # graphs that differ are never kept
        for model, path in zip(models, paths, strict=True):
            with atomic_write(path) as tmp:  # several workers may make them at once: each renames whole files
                onnx.save(model, str(tmp))
    except (OSError, DiskFullError):
        return None
    return paths


def check_stage_models(stream_path: Path, models: Sequence[Any], frames: int = WINDOW + STRIDE * 20 + 7) -> float:
    """Largest |staged views - one whole-graph run per view| over every shift of a random mel (0-7 frames:
    the views of 2, 4 and 8 are among them); above 1e-4 is an error."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.log_severity_level = 3
    whole = ort.InferenceSession(str(stream_path), options, providers=["CPUExecutionProvider"])
    staged = [ort.InferenceSession(m.SerializeToString(), options, providers=["CPUExecutionProvider"]) for m in models]
    mel = np.random.default_rng(0).uniform(-1.0, 3.0, (frames, MEL_BANDS)).astype(np.float32)
    shifts = list(range(STRIDE))
    got = staged_views(staged, mel, shifts)
    diff = 0.0
    for shift, view in zip(shifts, got, strict=True):
        want = whole_embeddings(whole, mel[shift:], 1 << 30)
        if view.shape != want.shape:
            raise SeqxError(f"{stream_path.name}: stage graphs give {view.shape[0]} embeddings for {want.shape[0]}")
        diff = max(diff, float(np.abs(view - want).max()) if want.size else 0.0)
    if diff > 1e-4:
        raise SeqxError(f"{stream_path.name}: stage graphs differ from the whole graph by {diff:.2g}")
    return diff
