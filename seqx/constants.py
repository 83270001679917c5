"""Names the CLI needs before it knows which path it takes, kept out of seqx.recipe: importing the
recipe schema builds every pydantic model (about 0.2 s), which `seqx transcribe --model EXPORTED`
and `seqx --help` should not pay for. seqx.recipe re-exports both.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

DEFAULT_RECIPE = Path("recipes/commands.yaml")
Precision = Literal["auto", "fp32", "bf16"]  # decode.precision, --precision
