"""The golden files that pin every stored shape, and the one way a test compares with them."""

from __future__ import annotations

import os
from pathlib import Path

GOLDEN = Path(__file__).parents[1] / "golden"


def check_golden(name: str, actual: str) -> None:
    """``actual`` must equal ``tests/golden/<name>``; ``SLEEPER_UPDATE_GOLDEN=1`` rewrites the file."""
    path = GOLDEN / name
    if os.environ.get("SLEEPER_UPDATE_GOLDEN"):
        path.write_text(actual)
    assert path.exists(), f"golden file {path} is missing; run with SLEEPER_UPDATE_GOLDEN=1 once"
    assert actual == path.read_text(), f"the stored form of {name} changed"
