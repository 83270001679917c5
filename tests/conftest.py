"""Fixtures shared by several test files. Keep this small: a fixture used by one file lives in it."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def espeak_wav() -> Callable[..., Path]:
    """Write real speech: `espeak_wav(path, text="check the battery", voice="en-us")` (a 22.05 kHz wav)."""

    def make(path: Path, text: str = "check the battery", voice: str = "en-us") -> Path:
        wav = subprocess.run(["espeak-ng", "-v", voice, "--stdout", text], capture_output=True, check=True).stdout
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(wav)
        return path

    return make
