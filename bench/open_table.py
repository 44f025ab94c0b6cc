"""Opening tables, planning reads over many files, warm commits on big states, state memory.

Three tables on the local catalog:

- *transactions*: N one-file transactions (the worst case for history), opened from a state
  snapshot and by a full replay of the log;
- *files*: 100 appends of 1,000 one-row files (real data files), p = 0..999 a partition
  column, v = p % 50 a data column — the shape of issue 15's measurements;
- *synthetic*: a state of 1,000,000 files (1,000 appends of 1,000) written straight as a state
  snapshot, for opening and planning only (its log holds only the table's creation).
"""

from __future__ import annotations

import shutil
import tempfile
import time
import tracemalloc
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

import sleeper_spark as ss
from bench.common import Report, Row, measure, percentile, seconds
from sleeper_spark.commit import utc_now
from sleeper_spark.datafiles.pruning import prune_table
from sleeper_spark.models import AddFiles, ColumnStats, FileRef, Snapshot
from sleeper_spark.state import FileSet, SnapshotLog, TableState
from sleeper_spark.state.file_columns import path_hash
from sleeper_spark.table.reading import planned_files

FILES_SCHEMA = pa.schema([("p", pa.int64()), ("v", pa.int64())])
BY_PARTITION = pc.field("p") == 5  # 100 of 100,000 files
BY_STATISTICS = pc.field("v") == 3  # 2,000 of 100,000 files, by min/max


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
        head.transaction_log.append(number, head.codec.encode(txn))

    # Numbers are fixed in advance, so appending them from threads keeps the log gap-free at the end.
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(append, range(start, start + transactions - 1)))


def open_state(warehouse: str, name: str) -> TableState:
    return ss.Catalog.local(warehouse).table(name).state()


def state_bytes(load: Callable[[], TableState]) -> tuple[TableState, int]:
    """The state ``load`` returns and what it holds: Python objects (traced) plus Arrow buffers."""
    arrow_before = pa.total_allocated_bytes()
    tracemalloc.start()
    state = load()
    python, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return state, python + pa.total_allocated_bytes() - arrow_before


def best_ms(action: Callable[[], object], repeat: int = 5) -> float:
    return measure(action, repeat).best * 1000


# -- one-file transactions: open from a state snapshot vs a replay ---------------------------------


def transactions(report: Report, warehouse: str, sizes: list[int]) -> None:
    catalog = ss.Catalog.local(warehouse)
    schema = pa.schema([("day", pa.string()), ("id", pa.int64())])
    for size in sizes:
        name = f"t{size}"
        table = catalog.create_table(name, schema, partition_by=["day"])
        fill_log(table, size)
        replay = measure(lambda name=name: open_state(warehouse, name), 1 if size >= 100_000 else 3)  # type: ignore[misc]
        table.create_state_snapshot()
        snapshot = measure(lambda name=name: open_state(warehouse, name), 3)  # type: ignore[misc]
        report.add(Row(f"open {size:,} one-file transactions", seconds(snapshot), seconds(replay),
                       snapshot.best / replay.best, "-", None, "ours: state snapshot + tail; baseline: full replay"))
    state, used = state_bytes(lambda: open_state(warehouse, f"t{sizes[-1]}"))
    per_file = used / max(1, len(state.files))
    report.add(Row(f"memory of the state of {len(state.files):,} one-file transactions", f"{per_file:.0f} B per file",
                   "847 B per file (JSON text per item)", per_file / 847, "<= 300 B", per_file <= 300,
                   "files + one history entry per file; Arrow buffers + Python objects"))


def planning(report: Report, state: TableState, count: int, target_ms: float, judged: bool) -> None:
    """Pruning alone (the files table to the kept rows), and with the kept files built as FileRefs."""
    for label, filter in (("partition", BY_PARTITION), ("min/max", BY_STATISTICS)):
        files = state.files.table()
        kept = prune_table(files, state.schema, state.partition_by, filter).num_rows
        prune_ms = best_ms(lambda filter=filter: prune_table(  # type: ignore[misc]
            state.files.table(), state.schema, state.partition_by, filter))
        plan_ms = best_ms(lambda filter=filter: planned_files(state, filter), 3)  # type: ignore[misc]
        report.add(Row(f"plan a {label}-filtered read, {count:,} files ({kept:,} kept)", f"{prune_ms:.1f} ms",
                       "-", None, f"<= {target_ms:.0f} ms", prune_ms <= target_ms if judged else None,
                       f"vectorized pruning of the files table; {plan_ms:.1f} ms with the kept files as FileRefs"))


# -- 100 appends of 1,000 real one-row files -------------------------------------------------------


def files_table(catalog: ss.Catalog, name: str, appends: int, per_append: int) -> ss.Table:
    """A table of ``appends x per_append`` one-row data files; each p's file bytes are written once, copied after."""
    table = catalog.create_table(name, FILES_SCHEMA, partition_by=["p"])
    values = pa.table({"p": list(range(per_append)), "v": [p % 50 for p in range(per_append)]}, schema=FILES_SCHEMA)
    templates = table.data_file_writer().write_all(values.to_batches(max_chunksize=1))
    store = table.store
    contents = [(ref, store.get(f"{table.root}/{ref.path}")) for ref in templates]

    def copy(ref_and_bytes: tuple[FileRef, bytes]) -> FileRef:
        ref, data = ref_and_bytes
        path = f"data/p={ref.partition['p']}/{uuid.uuid4().hex}.parquet"
        store.put(f"{table.root}/{path}", data)
        return ref.model_copy(update={"path": path})

    table.commit_files(templates, "append", {}, uuid.uuid4().hex)
    with ThreadPoolExecutor(4) as pool:
        for _ in range(appends - 1):
            table.commit_files(list(pool.map(copy, contents)), "append", {}, uuid.uuid4().hex)
    return table


def commit_p50(table: ss.Table, count: int) -> float:
    """Median seconds of a warm commit of one staged file (no data written: the commit alone)."""
    def staged() -> FileRef:
        return FileRef(path=f"data/p=1/{uuid.uuid4().hex}.parquet", partition={"p": "1"}, size_bytes=1, row_count=1,
                       checksum="sha256:00", column_stats={"v": ColumnStats(min=1, max=1)})

    table.state()
    values = []
    for _ in range(count):
        started = time.perf_counter()
        table.commit_files([staged()], "append", {}, uuid.uuid4().hex)
        values.append(time.perf_counter() - started)
    return percentile(values, 0.5)


def real_files(report: Report, warehouse: str, quick: bool) -> None:
    catalog = ss.Catalog.local(warehouse)
    appends = 3 if quick else 100
    big = files_table(catalog, "files", appends, 1000)
    big.create_state_snapshot()
    count = appends * 1000
    opened = measure(lambda: open_state(warehouse, "files"), 3)
    report.add(Row(f"cold open, {count:,} files (state snapshot)", seconds(opened), "0.098 s (issue 15)", None, "-",
                   None))
    table = ss.Catalog.local(warehouse).table("files")
    state = table.state()
    listing = measure(lambda: table.files(), 2)
    report.add(Row(f"files() as FileRefs, {count:,} files", seconds(listing), "2.4 s (issue 15)", None, "-", None,
                   "built from the files table on demand"))
    planning(report, state, count, 20.0, count >= 100_000)
    for label, filter, target in (("p == 5", BY_PARTITION, 0.3), ("v == 3", BY_STATISTICS, None)):
        scan = measure(lambda filter=filter: table.scan(filter=filter), 3)  # type: ignore[misc]
        rows = table.scan(filter=filter).num_rows
        baseline = {"p == 5": "10.1 s", "v == 3": "11.4 s"}[label]
        report.add(Row(f"scan(filter={label}), {count:,} files, {rows:,} rows", seconds(scan),
                       f"{baseline} (issue 15)", None, "<= 0.3 s" if target else "-",
                       scan.best <= target if target and count >= 100_000 else None, "warm table, end to end"))
    _, used = state_bytes(lambda: open_state(warehouse, "files"))
    per_file = used / count
    report.add(Row(f"memory of the state of {count:,} files in 1,000-file appends", f"{per_file:.0f} B per file",
                   "-", None, "<= 300 B", per_file <= 300, "Arrow buffers + Python objects"))
    small = files_table(catalog, "small", 1, 1000)
    commits = 15 if quick else 60
    small_p50, big_p50 = commit_p50(small, commits), commit_p50(table, commits)
    report.add(Row(f"warm commit p50, {count:,} files vs 1,000", f"{big_p50 * 1000:.2f} ms",
                   f"{small_p50 * 1000:.2f} ms", big_p50 / small_p50, "<= 1.2x", big_p50 / small_p50 <= 1.2,
                   f"{commits} commits of one staged file each"))


# -- a synthetic state of a million files ----------------------------------------------------------


def synthetic_state(table: ss.Table, appends: int, per_append: int) -> TableState:
    """The state ``appends`` appends of ``per_append`` one-row files would make, built column-wise."""
    base = table.state()
    count = appends * per_append
    ids = [uuid.uuid4().hex for _ in range(count)]
    p = pa.array([i % per_append for i in range(count)], pa.int64())
    v = pa.array([i % per_append % 50 for i in range(count)], pa.int64())
    paths = [f"data/p={i % per_append}/{ids[i]}.parquet" for i in range(count)]
    columns = {
        "path_hash": pa.array([path_hash(path) for path in paths], pa.uint64()), "path": pa.array(paths),
        "size_bytes": pa.repeat(pa.scalar(1024), count), "row_count": pa.repeat(pa.scalar(1), count),
        "checksum": pa.array([f"sha256:{i}" for i in ids]),
        "added_version": pa.array([2 + i // per_append for i in range(count)], pa.int64()),
        "partition.p": pc.cast(p, pa.string()), "min.p": p, "min.v": v, "max.p": p, "max.v": v,
        "null_count.p": pa.repeat(pa.scalar(0), count), "null_count.v": pa.repeat(pa.scalar(0), count),
    }
    files = FileSet.of_table(base.layout, pa.table(columns))
    at = utc_now()
    history = SnapshotLog.of([Snapshot(version=2 + n, snapshot_id=uuid.uuid4().hex, committed_at=at + timedelta(
        seconds=n), operation="append", rows_added=per_append, files_added=per_append, bytes_added=1024 * per_append,
        write_id=uuid.uuid4().hex) for n in range(appends)])
    return TableState(table_id=base.table_id, name=base.name, schema=base.schema, partition_by=base.partition_by,
                      event_time_column=None, files=files, history=history, version=1 + appends)


def synthetic(report: Report, warehouse: str, quick: bool) -> None:
    appends = 20 if quick else 1000
    count = appends * 1000
    table = ss.Catalog.local(warehouse).create_table("synthetic", FILES_SCHEMA, partition_by=["p"])
    table.head.state_snapshots.write(synthetic_state(table, appends, 1000))
    opened = measure(lambda: open_state(warehouse, "synthetic"), 3)
    report.add(Row(f"cold open, {count:,} files (synthetic state snapshot)", seconds(opened), "-", None, "<= 1 s",
                   opened.best <= 1.0 if count >= 1_000_000 else None, "read, decompress, map the Arrow tables"))
    state, used = state_bytes(lambda: open_state(warehouse, "synthetic"))
    planning(report, state, count, 200.0, count >= 1_000_000)
    report.add(Row(f"memory of the state of {count:,} files (synthetic)", f"{used / count:.0f} B per file", "-", None,
                   "<= 300 B", used / count <= 300, "Arrow buffers + Python objects"))


def run(report: Report, quick: bool) -> None:
    work = Path(tempfile.mkdtemp(prefix="bench-open-"))
    try:
        warehouse = str(work)
        transactions(report, warehouse, [500, 2_000] if quick else [1_000, 10_000, 100_000])
        real_files(report, warehouse, quick)
        synthetic(report, warehouse, quick)
    finally:
        shutil.rmtree(work, ignore_errors=True)
