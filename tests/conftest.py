"""Fixtures shared by several test files. Keep this small: a fixture used by one file lives in it."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
# recipes/commands.yaml trains on four engines with flite heard only in test; tiny corpora use
# espeak-ng alone (piper loads a model per process, and a tiny model memorizes its one voice)
ESPEAK_ONLY = ["data.synth.engines=[espeak-ng]", "data.synth.test_engine=same"]


def pytest_configure(config: pytest.Config) -> None:
    """Graphs seqx makes and caches (seqx.featurize.embedding_graph) go to a folder of this run, never
    the user's ~/.cache/seqx; set before any worker or `seqx` subprocess starts, so they inherit it.

    numba's cache of librosa's kernels too: one folder for the run, shared by the pytest workers and
    every `seqx` process the tests start, with the lock (seqx.librosa_import) under which the first of
    them compiles the kernels and the rest wait, then read. Two processes compiling them at once can
    cache a kernel that crashes every process calling it (numba issue #10128): on 2026-11-30 CI's run
    died in `librosa.yin` (most likely the render workers of an earlier test's `seqx data`, which
    lengthen speech with librosa, had compiled them at once under no lock), and pytest-xdist then
    hung instead of ending.
    """
    if hasattr(config, "workerinput"):  # a pytest-xdist worker: it inherits the controller's folders
        return
    cache = tempfile.mkdtemp(prefix="seqx-test-cache-")
    os.environ["SEQX_CACHE_DIR"] = cache
    os.environ["NUMBA_CACHE_DIR"] = os.path.join(cache, "numba")
    if (config.getoption("numprocesses", None) or 0) > 1:
        one_thread_per_worker()


def one_thread_per_worker() -> None:
    """One OpenMP thread in each pytest worker and each process it starts (unless the caller set
    OMP_NUM_THREADS): the workers are the parallelism. With torch's default of a thread per core,
    two workers on two cores ran four threads whose waits spin: a test of `calibrate` on a tiny
    model took 82 s in `make test` and 7 s alone (2-core AMD EPYC, 2026-12-01)."""
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    os.environ.setdefault("MKL_NUM_THREADS", "1")


def pytest_unconfigure(config: pytest.Config) -> None:
    if not hasattr(config, "workerinput"):
        shutil.rmtree(os.environ.pop("SEQX_CACHE_DIR", ""), ignore_errors=True)


@pytest.fixture
def espeak_wav() -> Callable[..., Path]:
    """Write real speech: `espeak_wav(path, text="check the battery", voice="en-us")` (a 22.05 kHz wav)."""

    def make(path: Path, text: str = "check the battery", voice: str = "en-us") -> Path:
        wav = subprocess.run(["espeak-ng", "-v", voice, "--stdout", text], capture_output=True, check=True).stdout
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(wav)
        return path

    return make


@pytest.fixture
def threaded_process() -> Iterator[None]:
    """Leave this process as the runtime tests leave pytest's: onnxruntime sessions with their own
    thread pools, torch's intra-op pool used, and a Python thread running. Forking a worker from
    such a process can hang it on a copied lock (seqx.workers); the stages must not."""
    import numpy as np
    import onnxruntime as ort
    import torch

    from seqx.featurize.embedding import model_dir

    options = ort.SessionOptions()
    options.intra_op_num_threads = 2
    graph = str(model_dir() / "melspectrogram.onnx")
    session = ort.InferenceSession(graph, options, providers=["CPUExecutionProvider"])
    session.run(None, {"input": np.zeros((1, 16000), np.float32)})
    threads = torch.get_num_threads()
    torch.set_num_threads(2)
    torch.randn(256, 256) @ torch.randn(256, 256)
    torch.set_num_threads(threads)
    stop = threading.Event()
    threading.Thread(target=stop.wait, daemon=True).start()
    assert len(os.listdir("/proc/self/task")) > 2
    yield
    stop.set()


def enumerate_sentences(grammar) -> set[str]:  # noqa: ANN001
    """Brute force, for small grammars only: every sentence, by expanding each template's tree.

    Independent of seqx's automata on purpose, so that counts and acceptors are checked against it.
    """
    from itertools import product

    from seqx.grammar.syntax import Alt, Opt, Seq, SlotRef, Word

    def expand(expr) -> list[tuple[str, ...]]:  # noqa: ANN001
        if isinstance(expr, Word):
            return [(expr.text,)]
        if isinstance(expr, SlotRef):
            return [v.words for v in grammar.slots[expr.name].values]
        if isinstance(expr, Opt):
            return [(), *expand(expr.item)]
        if isinstance(expr, Alt):
            return [s for option in expr.options for s in expand(option)]
        assert isinstance(expr, Seq)
        return [tuple(w for part in parts for w in part) for parts in product(*(expand(i) for i in expr.items))]

    return {" ".join(words) for t in grammar.templates for words in expand(t.expr)}


def hassil_file(folder: Path, sentences: dict[str, list[str]], lists: dict) -> Path:
    """A file of Home Assistant's intent sentences (HassIL's YAML) in `folder`: one data block per intent."""
    import yaml

    path = folder / "ha.yaml"
    intents = {intent: {"data": [{"sentences": said}]} for intent, said in sentences.items()}
    path.write_text(yaml.safe_dump({"language": "en", "intents": intents, "lists": lists}))
    return path
