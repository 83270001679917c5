"""Put on the `piper` command's PYTHONPATH by seqx (seqx/data/engines.py, Piper): its onnxruntime
seeded, and on one thread.

Piper's voices draw their noise in the ONNX graph (RandomNormalLike without a seed), so the same
text said twice sounds different, and a corpus made twice differed in a quarter of its files.
onnxruntime seeds such nodes from its global seed when a session is made: set here, before piper
makes its session, from SEQX_ORT_SEED.

Piper makes its session with `onnxruntime.SessionOptions()`, a thread per core. The corpus runs
one piper per core already, so on 2 cores two pipers of two threads each said a command in 0.22 s
against 0.13 s on one thread each. SEQX_ORT_THREADS sets the threads of every session piper makes.

Only onnxruntime is imported; piper itself is never imported by seqx (GPL-3.0): it still runs as
its own program.
"""

import os

_seed = os.environ.get("SEQX_ORT_SEED")
_threads = os.environ.get("SEQX_ORT_THREADS")
if _seed or _threads:
    import onnxruntime

    if _seed:
        onnxruntime.set_seed(int(_seed))
    if _threads:

        class _Options(onnxruntime.SessionOptions):
            def __init__(self) -> None:
                super().__init__()
                self.intra_op_num_threads = int(_threads)
                self.inter_op_num_threads = 1

        onnxruntime.SessionOptions = _Options
