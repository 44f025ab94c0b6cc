"""Single-writer commit latency on the local backend, against one bare conditional put."""

from __future__ import annotations

import shutil
import tempfile
import time
import uuid
from pathlib import Path

import pyarrow as pa

import sleeper_spark as ss
from bench.common import Report, Row, percentile
from sleeper_spark.models import ColumnStats, FileRef
from sleeper_spark.storage import ObjectStore


def staged_file() -> FileRef:
    return FileRef(path=f"data/{uuid.uuid4().hex}.parquet", size_bytes=1, row_count=100, checksum="sha256:00",
                   column_stats={"x": ColumnStats(min=0, max=99)})


def latencies(action: object, count: int) -> list[float]:
    assert callable(action)
    values = []
    for _ in range(count):
        started = time.perf_counter()
        action()
        values.append(time.perf_counter() - started)
    return values


def describe(values: list[float]) -> str:
    return f"p50 {percentile(values, 0.5) * 1000:.2f} ms, p95 {percentile(values, 0.95) * 1000:.2f} ms"


def compare(report: Report, label: str, catalog: ss.Catalog, store: ObjectStore, count: int) -> None:
    schema = pa.schema([("x", pa.int64())])
    table = catalog.create_table(f"commits_{uuid.uuid4().hex[:8]}", schema)
    rows = pa.table({"x": list(range(100))}, schema=schema)
    appends = latencies(lambda: table.write(rows), count)
    commits = latencies(lambda: table.commit_files([staged_file()], "append", {}, uuid.uuid4().hex), count)
    body = b"x" * 600  # about the size of a one-file log entry
    puts = latencies(lambda: store.create_if_absent(f"bench-puts/{uuid.uuid4().hex}.json", body), count)
    bare = percentile(puts, 0.5)
    report.add(Row(f"{label}: append of 100 rows (data file + commit), {count}x", describe(appends), describe(puts),
                   percentile(appends, 0.5) / bare, "-", None, "two conditional writes plus Parquet encoding"))
    report.add(Row(f"{label}: commit of a staged file, {count}x", describe(commits), describe(puts),
                   percentile(commits, 0.5) / bare, "<= 1.5x", percentile(commits, 0.5) / bare <= 1.5))


def run(report: Report, quick: bool) -> None:
    count = 20 if quick else 200
    work = Path(tempfile.mkdtemp(prefix="bench-commit-"))
    try:
        catalog = ss.Catalog.local(str(work))
        compare(report, "local disk", catalog, catalog.backend.store, count)
    finally:
        shutil.rmtree(work, ignore_errors=True)
