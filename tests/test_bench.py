"""A smoke run of the benchmarks that need no servers and no Spark (tiny sizes; times not checked)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).parents[1]


def test_quick_benchmarks_run_and_print_their_tables(tmp_path: Path) -> None:
    output = tmp_path / "benchmarks.md"
    result = subprocess.run(
        [sys.executable, "-m", "bench", "--quick", "--only", "arrow_io", "--only", "commits", "--only", "open_table",
         "--only", "iceberg", "--output", str(output)],
        cwd=REPO, capture_output=True, text=True, timeout=300,
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    report = output.read_text()
    for title in ("pyarrow write and scan", "Commit latency", "Opening tables and state memory",
                  "Iceberg metadata: publishing after each commit, and from scratch"):
        assert f"### {title}" in report
    assert "| 400 files built in 4 commits of 100: t.publish_iceberg(rebuild=True) |" in report
    assert "| pyarrow write, 20,000 rows, 8 partitions |" in report
