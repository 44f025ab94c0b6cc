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


def test_a_run_of_some_benchmarks_changes_only_their_sections_and_keeps_their_notes(tmp_path: Path) -> None:
    from bench.__main__ import write_markdown
    from bench.common import Report, Row

    path = tmp_path / "benchmarks.md"
    path.write_text("# Benchmarks\n\nLatest full run: 2026-01-01 00:00 UTC; machine: old.\n\n"
                    "### First\n\n| benchmark | ours | baseline | ratio | target | met |\n| --- | --- | --- | --- | --- | --- |\n"
                    "| old row | 1 s | 1 s | 1.00x | - | - |\n\nA note on the first.\n\n"
                    "### Second\n\nRun by hand.\n\n| benchmark | ours | baseline | ratio | target | met |\n"
                    "| --- | --- | --- | --- | --- | --- |\n| kept row | 2 s | 1 s | 2.00x | - | - |\n\n"
                    "The benchmark's own table:\n\n| benchmark | ours | baseline | ratio | target | met |\n"
                    "| --- | --- | --- | --- | --- | --- |\n| second row | 5 s | 1 s | 5.00x | - | - |\n")
    report = Report("First")
    report.add(Row("new row", "3 s", "1 s", 3.0, "<= 4x", True))

    write_markdown(path, [report], full=False)

    text = path.read_text()
    assert "| new row | 3 s | 1 s | 3.00x | <= 4x | yes |" in text and "old row" not in text
    assert "A note on the first." in text and "Run by hand." in text and "| kept row |" in text
    assert "Latest full run: 2026-01-01 00:00 UTC; machine: old." in text  # not a full run
    assert text.index("Latest run of this section:") < text.index("new row") < text.index("### Second")
    assert text.count("Latest run of this section:") == 1

    write_markdown(path, [report], full=False)  # again: one date line, one table
    assert path.read_text().count("Latest run of this section:") == 1
    assert path.read_text().count("| benchmark |") == 3

    second = Report("Second")
    second.add(Row("second row", "4 s", "1 s", 4.0, "-", None))
    write_markdown(path, [second], full=False)  # the table whose rows it has, not the first
    text = path.read_text()
    assert "| kept row |" in text and "| second row | 4 s |" in text and "| second row | 5 s |" not in text

    write_markdown(path, [Report("Third")], full=True)
    text = path.read_text()
    assert "Latest full run: 2026-01-01" not in text and "### Third" in text and "| new row |" in text
