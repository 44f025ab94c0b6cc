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


def test_concurrent_writers_commit_everything_once(tmp_path: Path) -> None:
    result = subprocess.run([sys.executable, str(EXAMPLES / "concurrent_writers.py"), str(tmp_path / "wh"),
                             "--writers", "3", "--appends", "4"],
                            capture_output=True, text=True, timeout=300, check=True)
    assert "12 snapshots, versions 2..13, 12 rows" in result.stdout
    assert "commits per writer: {'0': 4, '1': 4, '2': 4}" in result.stdout
    assert "history is linear: True" in result.stdout
