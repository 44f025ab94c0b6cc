"""A table's changes against reading the files they come from, side by side in one Spark session with the jar.

One MERGE: the merge benchmark's 4-column table, 2,000,000 rows clustered by key in 2,000 files
(``--quick``: 40,000 rows in 40 files), and a MERGE that updates 10 keys of one file, so it
removes that file and adds its rewrite. Its changes (10 deletes, 10 inserts) are read with
``t.read_changes(spark, v, v)``, with ``spark.read...changes("lake.m")`` through the SQL catalog
and with ``t.changes(v, v)`` (pyarrow); the baselines read only the rewritten file, with
``spark.read.parquet`` and ``pyarrow.parquet.read_table``. The changes read the removed file
too and compare the two, so this measures what that comparison and the version's planning add.

100 appends: 100 versions, each appending 20,000 rows of the Spark benchmarks' 22 columns in one
file (``--quick``: 10 of 2,000 rows). Their changes (every row an insert) are read with
``t.read_changes(spark, first, last)`` against ``spark.read.parquet`` of the same 100 files and
against ``t.read(spark)`` of the table, which holds only those files. Every Spark read runs to
the end with ``write.format("noop")``, on both sides. The reads of a shape run in turn, round by
round, after one round that is not timed (the JVM compiles each plan on its first use).
"""

from __future__ import annotations

import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

import sleeper_spark as ss
from bench.common import Measurement, Report, Row, measure, measure_pair, seconds
from bench.merge import _columns as merge_columns
from bench.spark_io import COLUMNS, session
from sleeper_spark.spark.common.jvm import catalog_conf
from sleeper_spark.table.changes import plan_changes

UPDATED_KEYS = 10


def run(report: Report, quick: bool) -> None:
    rows, files = (40_000, 40) if quick else (2_000_000, 2_000)
    appends, append_rows = (10, 2_000) if quick else (100, 20_000)
    repeat = 1 if quick else 5
    work = Path(tempfile.mkdtemp(prefix="bench-changes-"))
    spark = session(work)
    try:
        catalog = ss.Catalog.local(str(work / "wh"))
        for key, value in catalog_conf("lake", catalog).items():
            spark.conf.set(key, value)
        _merge_changes(report, spark, catalog, rows, files, repeat)
        _append_changes(report, spark, catalog, appends, append_rows, min(repeat, 3))
    finally:
        spark.stop()
        shutil.rmtree(work, ignore_errors=True)


def _run_all(df: Any) -> None:
    """Reads every row and column of ``df`` and keeps none: the same action on both sides."""
    df.write.format("noop").mode("overwrite").save()


def _read_all(read: Callable[[], Any]) -> None:
    _run_all(read())


def _compare(ours: Callable[[], object], baseline: Callable[[], object],
             repeat: int) -> tuple[Measurement, Measurement]:
    ours()  # one of each first, unmeasured
    baseline()
    return measure_pair(ours, baseline, repeat)


def _rotation(reads: list[Callable[[], Any]], repeat: int) -> list[Measurement]:
    """Every read run to the end, in turn, ``repeat`` rounds after an unmeasured one: the
    machine's drift falls on all of them alike, and each ratio comes from the same rounds."""
    runs: list[list[float]] = [[] for _ in reads]
    for round_ in range(repeat + 1):
        for read, times in zip(reads, runs, strict=True):
            started = time.perf_counter()
            _read_all(read)
            if round_:
                times.append(time.perf_counter() - started)
    return [Measurement(tuple(times)) for times in runs]


def _merge_changes(report: Report, spark: Any, catalog: ss.Catalog, rows: int, files: int, repeat: int) -> None:
    first = catalog.write(spark.range(rows).selectExpr(*merge_columns(2)).repartitionByRange(files, "id"), "m")
    table = catalog.table("m")
    # The first keys of a file in the middle: the MERGE then rewrites that one file.
    middle = sorted(table.files(), key=lambda f: f.path)[len(table.files()) // 2]
    keys = pq.read_table(f"{table.location}/{middle.path}", columns=["id"])["id"].to_pylist()[:UPDATED_KEYS]
    changed = [c.replace("id + ", "id + 1 + ") for c in merge_columns(2)]  # other values, same types
    source = spark.createDataFrame([(k,) for k in keys], "id LONG").selectExpr(*changed)
    merged = table.merge(source, "target.id = source.id").when_matched_update().execute()
    version = merged.version
    added = {f.path for f in table.files(version)} - {f.path for f in table.files(version - 1)}
    assert merged.operation_metrics["files_rewritten"] == 1 and len(added) == 1, merged.operation_metrics
    rewritten = f"{table.location}/{added.pop()}"
    changes = table.read_changes(spark, version, version)
    assert changes.count() == 2 * UPDATED_KEYS, changes.groupBy("_change_type").count().collect()
    shape = (f"MERGE updating {UPDATED_KEYS} keys of 1 file of {first.files_added:,} ({rows:,} rows, 4 columns)")

    def sql_changes() -> Any:
        return (spark.read.option("startingVersion", str(version)).option("endingVersion", str(version))
                .changes("lake.m"))

    sides: list[tuple[str, Callable[[], Any]]] = [
        ("t.read_changes(spark, v, v)", lambda: table.read_changes(spark, version, version)),
        ('SQL spark.read...changes("lake.m")', sql_changes),
    ]
    *measured, baseline = _rotation([read for _, read in sides] + [lambda: spark.read.parquet(rewritten)], repeat)
    for (name, _), ours in zip(sides, measured, strict=True):
        ratio = ours.best / baseline.best
        report.add(Row(f"{shape}: changes by {name} vs spark.read.parquet of the rewritten file, noop write",
                       seconds(ours), seconds(baseline), ratio, "<= 1.2x", ratio <= 1.2,
                       f"{UPDATED_KEYS} deletes and {UPDATED_KEYS} inserts, from the removed and the added file"))
    _merge_changes_arrow(report, table, version, rewritten, shape, repeat)


def _merge_changes_arrow(report: Report, table: ss.Table, version: int, rewritten: str, shape: str,
                         repeat: int) -> None:
    assert table.changes(version, version).num_rows == 2 * UPDATED_KEYS
    ours, baseline = _compare(lambda: table.changes(version, version), lambda: pq.read_table(rewritten), repeat * 4)
    planning = measure(lambda: plan_changes(table, version, version), repeat * 4)
    ratio = ours.best / baseline.best
    report.add(Row(f"{shape}: changes by t.changes(v, v) (pyarrow) vs pyarrow.parquet.read_table of the "
                   "rewritten file", seconds(ours), seconds(baseline), ratio, "-", None,
                   f"the changes read the removed file too and group both files' rows; planning "
                   f"{planning.best * 1000:.1f} ms of it"))


def _append_batch(start: int, count: int) -> pa.Table:
    """Rows ``start..start+count`` of the Spark benchmarks' 22 columns (see ``bench.spark_io.source``)."""
    ids = np.arange(start, start + count, dtype=np.int64)
    columns: dict[str, Any] = {"id": ids, "part": pa.array((ids % 8).astype(str))}
    for i in range(COLUMNS):
        columns[f"c{i}"] = ((ids * (i + 1)) % 10_007) * 0.5 if i % 2 else (ids + i) % 100_003
    return pa.table(columns)


def _append_changes(report: Report, spark: Any, catalog: ss.Catalog, appends: int, append_rows: int,
                    repeat: int) -> None:
    snapshots = [catalog.write(_append_batch(i * append_rows, append_rows), "a") for i in range(appends)]
    table = catalog.table("a")
    first, last = snapshots[0].version, snapshots[-1].version
    paths = [f"{table.location}/{f.path}" for f in table.files()]
    assert len(paths) == appends and all(s.files_added == 1 for s in snapshots), (len(paths), appends)
    assert table.read_changes(spark, first, last).count() == appends * append_rows
    shape = f"{appends} appends of {append_rows:,} rows x 22 columns in 1 file each"
    baselines: list[tuple[str, Callable[[], Any]]] = [
        (f"spark.read.parquet of the {appends} files", lambda: spark.read.parquet(*paths)),
        ("t.read(spark) of the table (only those files)", lambda: table.read(spark)),
    ]
    ours, *measured = _rotation([lambda: table.read_changes(spark, first, last)] + [r for _, r in baselines], repeat)
    for (name, _), baseline in zip(baselines, measured, strict=True):
        ratio = ours.best / baseline.best
        report.add(Row(f"{shape}: changes by t.read_changes(spark, first, last) vs {name}, noop write",
                       seconds(ours), seconds(baseline), ratio, "<= 1.11x (>= 0.9x the speed)", ratio <= 1.11,
                       "the changes have 25 columns: the table's 22 and 3 change columns"))
