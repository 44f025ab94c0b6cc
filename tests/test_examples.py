"""Every example runs."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

EXAMPLES = Path(__file__).parents[1] / "examples"


def test_quickstart_runs_and_prints_the_history(tmp_path: Path) -> None:
    result = subprocess.run([sys.executable, str(EXAMPLES / "quickstart.py"), str(tmp_path / "wh")],
                            capture_output=True, text=True, timeout=120, check=True)
    assert "v4  overwrite" in result.stdout
    assert "verify: 1 files, ok" in result.stdout
