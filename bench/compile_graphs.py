"""How many graphs `train.compile` compiles, and how long its run takes, on a tiny model (issue #17).

Usage:
    TORCHINDUCTOR_CACHE_DIR=$(mktemp -d) TORCH_LOGS=recompiles python bench/compile_graphs.py \\
        --files 5 --max-frames 400 --frontend linear

The recipe of tests/test_train_compile.py (espeak-ng files of tests/test_train_corpus.py, the
convolution module, 4 epochs, one thread), trained eager and then compiled. Why: every graph is a
compile of tens of seconds (a minute or more on a CPU), so the count decides whether compiling can
pay in a run of minutes; TORCH_LOGS=recompiles names the guard behind each extra graph. With an
empty inductor cache (as above) the times include the C++ compile, as on a fresh machine.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=5, help="espeak-ng files (1-6): which batch sizes occur")
    parser.add_argument("--max-frames", type=int, default=400, help="train.max_frames")
    parser.add_argument("--frontend", default="linear", choices=["linear", "conv2d", "none"])
    args = parser.parse_args()

    import torch
    from test_train_corpus import PHRASES, speak

    torch.set_num_threads(1)
    root = Path(tempfile.mkdtemp(prefix="seqx-compile-"))
    rows = speak(root / "audio", PHRASES[: args.files])
    try:
        results = _train_both(args, root, rows)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(json.dumps({"files": args.files, "max_frames": args.max_frames, "frontend": args.frontend, **results}))


def _train_both(args: argparse.Namespace, root: Path, rows: list) -> dict[str, dict]:
    """The eager run, then the compiled one: each one's seconds and the graphs dynamo compiled."""
    from test_train_corpus import tiny_recipe
    from torch._dynamo.utils import counters

    from seqx.train.stage import run_train_stage

    results = {}
    for name in ("eager", "compiled"):
        recipe = tiny_recipe(root / name, rows, compile=name == "compiled", epochs=4, max_frames=args.max_frames,
                             deterministic=False)
        model = recipe.model.model_copy(update={"conv_kernel": 3, "frontend": args.frontend})
        recipe = recipe.model_copy(update={"model": model})
        counters.clear()
        started = time.monotonic()
        run_train_stage(recipe, device="cpu")
        results[name] = {"seconds": round(time.monotonic() - started, 1), "graphs": counters["stats"]["unique_graphs"]}
    return results


if __name__ == "__main__":
    main()
