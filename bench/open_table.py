"""Opening a table with many transactions: from a state snapshot vs a full replay; state memory."""

from __future__ import annotations

import shutil
import tempfile
import tracemalloc
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pyarrow as pa

import sleeper_spark as ss
from bench.common import Measurement, Report, Row, measure, seconds
from sleeper_spark.commit import utc_now
from sleeper_spark.models import AddFiles, ColumnStats, FileRef
from sleeper_spark.state import TableState


def fill_log(table: ss.Table, transactions: int) -> None:
    """Appends one-file transactions straight through the log interface (no data, no Spark)."""
    head = table.head
    start = head.state().version + 1

    def append(number: int) -> None:
        file = FileRef(path=f"data/day=2024-01-01/{uuid.uuid4().hex}.parquet", partition={"day": "2024-01-01"},
                       size_bytes=4096, row_count=100, checksum=f"sha256:{uuid.uuid4().hex}",
                       column_stats={"id": ColumnStats(min=number, max=number + 99), "day": ColumnStats(
                           min="2024-01-01", max="2024-01-01")})
        txn = AddFiles(snapshot_id=uuid.uuid4().hex, committed_at=utc_now(), operation="append",
                       write_id=uuid.uuid4().hex, files=(file,))
        head.log.append(number, head.codec.encode(txn))

    # Numbers are fixed in advance, so appending them from threads keeps the log gap-free at the end.
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(append, range(start, start + transactions - 1)))


def open_state(warehouse: str, name: str) -> TableState:
    return ss.Catalog.local(warehouse).table(name).state()


def run(report: Report, quick: bool) -> None:
    sizes = [1_000, 10_000] if quick else [1_000, 10_000, 100_000]
    work = Path(tempfile.mkdtemp(prefix="bench-open-"))
    try:
        warehouse = str(work)
        catalog = ss.Catalog.local(warehouse)
        schema = pa.schema([("day", pa.string()), ("id", pa.int64())])
        from_snapshot: dict[int, Measurement] = {}
        for size in sizes:
            name = f"t{size}"
            table = catalog.create_table(name, schema, partition_by=["day"])
            fill_log(table, size)
            replay = measure(lambda name=name: open_state(warehouse, name), 1 if size >= 100_000 else 3)  # type: ignore[misc]
            table.create_state_snapshot()
            snapshot = measure(lambda name=name: open_state(warehouse, name), 3)  # type: ignore[misc]
            from_snapshot[size] = snapshot
            target = "<= 1 s" if size == 100_000 else "-"
            report.add(Row(f"open {size:,} transactions ({size:,} files)", seconds(snapshot), seconds(replay),
                           snapshot.best / replay.best, target, snapshot.best <= 1.0 if size == 100_000 else None,
                           "ours: state snapshot + tail; baseline: full replay"))
        smallest, largest = sizes[0], sizes[-1]
        growth = from_snapshot[largest].best / from_snapshot[smallest].best
        report.add(Row(f"growth of open time {smallest:,} -> {largest:,}", f"{growth:.1f}x", "-", None, "<= 1.5x",
                       growth <= 1.5, "the state is O(files): paths are read at open"))

        tracemalloc.start()
        state = open_state(warehouse, f"t{largest}")
        used, _ = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        per_file = used / max(1, len(state.files))
        report.add(Row(f"driver memory for the state of {len(state.files):,} files", f"{per_file:.0f} B per file",
                       "-", None, "<= 1 KiB", per_file <= 1024, "includes each file's history entry"))
    finally:
        shutil.rmtree(work, ignore_errors=True)
