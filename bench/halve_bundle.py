"""Store a bundle's weights as float16 and record the new file's size and checksum in its config.

Why: a lent GPU returns what a call writes under a size limit, and the full recipe's float32
weights (37 MB) make two bundles too large to come back together. Loading casts the float16
tensors back into the float32 model (the rounding is below what decoding can tell apart). The
config's checksum is written again so that the bundle loads: without it, `load_bundle` rightly
says the weights are truncated or corrupt.

Usage: python bench/halve_bundle.py BUNDLE_DIR [BUNDLE_DIR...]
"""

from __future__ import annotations

import sys
from pathlib import Path

from safetensors.torch import load_file, save_file

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from seqx.decode.bundle import WEIGHTS, file_checksums, update_config  # noqa: E402


def halve(bundle: Path) -> None:
    weights = load_file(bundle / WEIGHTS)
    save_file({k: v.half() if v.is_floating_point() else v for k, v in weights.items()}, bundle / WEIGHTS)
    update_config(bundle, files=file_checksums(bundle))


if __name__ == "__main__":
    for folder in sys.argv[1:]:
        halve(Path(folder))
