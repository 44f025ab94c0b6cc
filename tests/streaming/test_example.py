"""examples/streaming.py runs and shows one snapshot per batch and each row delivered once."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.fixtures.spark import spark_environment

pytestmark = pytest.mark.spark

EXAMPLE = Path(__file__).parents[2] / "examples" / "streaming.py"


def test_the_streaming_example_runs(tmp_path: Path) -> None:
    run = subprocess.run([sys.executable, str(EXAMPLE), str(tmp_path / "work")], capture_output=True, text=True,
                         timeout=300, env=spark_environment(tmp_path))
    assert run.returncode == 0, run.stderr[-3000:]
    assert "v2  append  +100 rows  batch 0" in run.stdout
    assert "v4  append  +100 rows  batch 2" in run.stdout
    assert "source delivered 300 rows" in run.stdout
    assert "after one more append: 305 rows delivered in all" in run.stdout
