"""What compaction buys: 500 one-row appends read as one file."""

from __future__ import annotations

from typing import Any

import sleeper_spark as ss
from tests.maintenance.tables import SCHEMA, rows


class CountingGets:
    """The table's store, counting the objects a read fetches."""

    def __init__(self, store: Any) -> None:
        self.store = store
        self.keys: list[str] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)

    def get(self, key: str) -> bytes:
        self.keys.append(key)
        return self.store.get(key)


def files_a_scan_reads(table: ss.Table) -> int:
    counting = CountingGets(table.store)
    table.store = counting
    try:
        assert table.scan().num_rows == 500
    finally:
        table.store = counting.store
    return len([key for key in counting.keys if key.endswith(".parquet")])


def test_compacting_500_one_row_appends_leaves_one_file_that_a_scan_reads_once(local_catalog: ss.Catalog) -> None:
    # Given 500 one-row appends to one partition: 500 files
    table = local_catalog.create_table("events", SCHEMA, partition_by=["day"])
    for seq in range(500):
        table.write(rows(seq, 1, "d1"))
    before_rows = sorted(table.scan().column("n").to_pylist())
    assert files_a_scan_reads(table) == 500
    # When it is compacted
    snapshot = table.compact(None)
    # Then one file holds the same rows and a scan opens one file instead of 500
    assert snapshot is not None and snapshot.files_removed == 500 and len(table.files()) == 1
    assert sorted(table.scan().column("n").to_pylist()) == before_rows
    assert files_a_scan_reads(table) == 1
