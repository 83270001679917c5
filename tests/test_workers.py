"""Stage worker pools start from the fork server, never by forking a process that runs threads."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import torch

from seqx.workers import worker_pool

pytest.importorskip("onnxruntime")


def _threaded_onnxruntime_and_torch() -> threading.Event:
    """Leave this process as the runtime tests leave pytest's: onnxruntime sessions with their own
    thread pools, torch's intra-op pool used, and a thread of ours still running."""
    import onnxruntime as ort

    from seqx.featurize.embedding import model_dir

    options = ort.SessionOptions()
    options.intra_op_num_threads = 2
    session = ort.InferenceSession(str(model_dir() / "melspectrogram.onnx"), options, providers=["CPUExecutionProvider"])
    session.run(None, {"input": np.zeros((1, 16000), np.float32)})
    threads = torch.get_num_threads()
    torch.set_num_threads(2)
    torch.randn(256, 256) @ torch.randn(256, 256)
    torch.set_num_threads(threads)
    stop = threading.Event()
    threading.Thread(target=stop.wait, daemon=True).start()  # a Python thread alive during the pool start
    assert len(os.listdir("/proc/self/task")) > 2
    return stop  # set it to end the thread


@pytest.mark.timeout(120)
def test_workers_are_not_children_of_a_threaded_process() -> None:
    stop = _threaded_onnxruntime_and_torch()
    with worker_pool(2) as pool:
        parents = set(pool.map(_parent_pid, range(4)))
    stop.set()
    assert os.getpid() not in parents  # forked from the fork server, a clean single-threaded process


def _parent_pid(_: int) -> int:
    return os.getppid()


@pytest.mark.timeout(180)  # a worker deadlocked on an inherited lock would hang here, not fail
def test_speech_embedding_featurize_with_workers_after_onnxruntime_threads(
    tmp_path: Path, espeak_wav: Callable[..., Path]
) -> None:
    from seqx.featurize.audio import load_audio
    from seqx.featurize.features import FeatureExtractor
    from seqx.featurize.stage import run_featurize_stage
    from seqx.featurize.store import FeatureStore, to_float16
    from seqx.recipe import recipe_from_dict

    stop = _threaded_onnxruntime_and_torch()
    texts = ["check the battery", "scroll down", "stop"]
    wavs = [espeak_wav(tmp_path / "wav" / f"{i}.wav", text) for i, text in enumerate(texts)]
    recipe = recipe_from_dict({
        "name": "t", "exp_dir": str(tmp_path),
        "data": {"source": "manifest", "manifest": {"train": str(tmp_path / "unused.jsonl")}},
        "features": {"kind": "speech_embedding", "workers": 2}, "model": {"frontend": "linear"},
    })  # fmt: skip
    recipe.data_dir.mkdir(parents=True)
    for split in ("train", "valid", "test"):
        rows = [{"id": f"{split}{i}", "audio": str(w), "text": t, "duration": 1.0, "speaker": "s"}
                for i, (w, t) in enumerate(zip(wavs, texts))]  # fmt: skip
        (recipe.data_dir / f"{split}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    report = run_featurize_stage(recipe)
    stop.set()
    assert not report.skipped and report.splits["train"].utterances == 3
    want = FeatureExtractor(recipe.features, 16000)(load_audio(wavs[1], 16000)).numpy()
    got = FeatureStore(recipe.feats_dir / "train")[1].astype(np.float32)
    np.testing.assert_array_equal(got, to_float16(want).astype(np.float32))  # the worker's = this process's
