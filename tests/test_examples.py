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
    assert "after two appends: 5 rows in 4 files" in result.stdout
    assert "verify: 1 file, ok" in result.stdout


def test_concurrent_writers_commit_everything_once(tmp_path: Path) -> None:
    result = subprocess.run([sys.executable, str(EXAMPLES / "concurrent_writers.py"), str(tmp_path / "wh"),
                             "--writers", "3", "--appends", "4"],
                            capture_output=True, text=True, timeout=300, check=True)
    assert "12 snapshots, versions 2..13, 12 rows" in result.stdout
    assert "commits per writer: {'0': 4, '1': 4, '2': 4}" in result.stdout
    assert "history is linear: True" in result.stdout


def test_aws_moto_example_writes_reads_and_counts_requests() -> None:
    # moto's in-process server: no account, no network beyond loopback
    result = subprocess.run([sys.executable, str(EXAMPLES / "aws_moto.py")],
                            capture_output=True, text=True, timeout=120, check=True)
    assert "at version 2: 2 rows" in result.stdout
    # the request counts docs/aws.md states for a commit
    assert "warm append: {'PutItem': 1, 'PutObject': 1}" in result.stdout
    assert "append that lost a race: {'PutItem': 2, 'PutObject': 1, 'Query': 1}" in result.stdout
    assert "v5  append" in result.stdout
    assert "verify: ok" in result.stdout


def test_maintenance_example_compacts_vacuums_truncates_and_verifies(tmp_path: Path) -> None:
    result = subprocess.run([sys.executable, str(EXAMPLES / "maintenance.py"), str(tmp_path / "wh")],
                            capture_output=True, text=True, timeout=120, check=True)
    assert "after 24 appends: version 25, 24 files, 24 rows" in result.stdout
    assert "compact: v26 replaced 24 files with 2" in result.stdout
    assert "vacuum dry run: would delete 24 data files" in result.stdout
    assert "vacuum: deleted 24 data files" in result.stdout
    assert "truncate right away: cuts up to None" in result.stdout
    assert "deleted transactions up to 26 (26 entries); the log starts at 27" in result.stdout
    assert "time travel to v25: gone with the truncated log (SnapshotNotFoundError)" in result.stdout
    assert "verify: 3 files, ok; 25 rows at v27" in result.stdout
