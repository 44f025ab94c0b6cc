"""What compaction buys: 500 one-row appends read as one file."""

from __future__ import annotations

import time

import sleeper_spark as ss
from tests.maintenance.tables import SCHEMA, rows


def median_scan_seconds(table: ss.Table, runs: int = 5) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        assert table.scan().num_rows == 500
        times.append(time.perf_counter() - started)
    return sorted(times)[runs // 2]


def test_compacting_500_one_row_appends_leaves_one_file_that_scans_faster(local_catalog: ss.Catalog) -> None:
    # Given 500 one-row appends to one partition: 500 files
    table = local_catalog.create_table("events", SCHEMA, partition_by=["day"])
    for seq in range(500):
        table.write(rows(seq, 1, "d1"))
    before_rows = sorted(table.scan().column("n").to_pylist())
    before_s = median_scan_seconds(table)
    # When it is compacted
    snapshot = table.compact(None)
    # Then one file holds the same rows and a scan opens one file instead of 500
    assert snapshot is not None and snapshot.files_removed == 500 and len(table.files()) == 1
    assert sorted(table.scan().column("n").to_pylist()) == before_rows
    assert median_scan_seconds(table) * 5 < before_s
