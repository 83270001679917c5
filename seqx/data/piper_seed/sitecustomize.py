"""Put on the `piper` command's PYTHONPATH by seqx (seqx/data/engines.py, Piper) to seed its noise.

Piper's voices draw their noise in the ONNX graph (RandomNormalLike without a seed), so the same
text said twice sounds different, and a corpus made twice differed in a quarter of its files.
onnxruntime seeds such nodes from its global seed when a session is made: set here, before piper
makes its session, from SEQX_ORT_SEED. Only onnxruntime is imported; piper itself is never
imported by seqx (GPL-3.0): it still runs as its own program.
"""

import os

_seed = os.environ.get("SEQX_ORT_SEED")
if _seed:
    import onnxruntime

    onnxruntime.set_seed(int(_seed))
