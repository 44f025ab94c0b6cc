"""MERGE against rewriting the whole table, side by side, in one Spark session with the jar.

2,000,000 rows clustered by key in 2,000 files (``--quick``: 40,000 rows in 40 files), once with
4 columns and once with 22, the shape of the other Spark benchmarks. The source is 1,000 rows of
change data as a key-clustered table receives it: 500 updates of the newest keys and 500 inserts
of new keys. The baseline writes the same result by overwriting the table (read it, apply the
changes with a join, write every row back). Before each run the table is restored to its first
version, which copies nothing. A merge's cost is mostly fixed (a few small Spark jobs), an
overwrite's grows with the table's bytes: hence the two shapes.

UPDATE of one key in the 4-column table against the same UPDATE whose ``where`` holds for every
row, which reads and rewrites every file: both run in turn, the table restored before each.

A small MERGE at Spark's default settings (200 shuffle partitions, adaptive execution on), as CDC
upserts and streaming ``foreachBatch`` run all day: 1,000 rows (500 updates, 500 inserts) into a
1,000-row table, after a first, unmeasured one; its tasks counted by Spark's status tracker (the
jobs of the MERGE's own job group). The baseline overwrites the table with the same result.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import sleeper_spark as ss
from bench.common import Measurement, Report, Row, seconds
from bench.spark_io import session


def run(report: Report, quick: bool) -> None:
    rows, files = (40_000, 40) if quick else (2_000_000, 2_000)
    repeat = 1 if quick else 3
    work = Path(tempfile.mkdtemp(prefix="bench-merge-"))
    spark = session(work)
    try:
        for label, extra in (("4 columns", 2), ("22 columns, the Spark benchmarks' shape", 20)):
            _merge_against_overwrite(report, spark, work / label.split()[0], rows, files, extra, repeat, label)
        _update_against_rewrite(report, spark, work / "update", rows, files, repeat)
        _small_merge_at_spark_defaults(report, spark, work / "small", 3 if quick else 7)
    finally:
        spark.stop()
        shutil.rmtree(work, ignore_errors=True)


def _columns(extra: int) -> list[str]:
    """``id`` and ``extra`` more columns: alternately a string of 64 characters and a number."""
    return ["id"] + [f"sha2(cast(id + {i} AS string), 256) AS c{i}" if i % 2 == 0 else f"(id * {i}) % 10007 AS c{i}"
                     for i in range(extra)]


def _merge_against_overwrite(report: Report, spark: Any, folder: Path, rows: int, files: int, extra: int,
                             repeat: int, label: str) -> None:
    catalog = ss.Catalog.local(str(folder))
    first = catalog.write(spark.range(rows).selectExpr(*_columns(extra)).repartitionByRange(files, "id"), "t")
    table = catalog.table("t")
    changed = [c.replace("id + ", "id + 1 + ") for c in _columns(extra)]  # other values, same types
    source = spark.range(rows - 500, rows + 500).selectExpr(*changed).cache()
    source.count()

    def merge() -> ss.Snapshot:
        return table.merge(source, "target.id = source.id").when_matched_update().when_not_matched_insert().execute()

    def overwrite() -> ss.Snapshot:
        kept = catalog.read(spark, "t").join(source, "id", "left_anti")
        return catalog.write(kept.unionByName(source), "t", mode="overwrite")

    merge_runs, overwrite_runs = [], []
    merged: ss.Snapshot | None = None
    for _ in range(repeat):
        for action, runs in ((merge, merge_runs), (overwrite, overwrite_runs)):
            table.restore(first.version)
            started = time.perf_counter()
            result = action()
            runs.append(time.perf_counter() - started)
            if action is merge:
                merged = result
    ours, baseline = Measurement(tuple(merge_runs)), Measurement(tuple(overwrite_runs))
    ratio = ours.best / baseline.best
    assert merged is not None
    metrics = merged.operation_metrics
    note = (f"read {metrics['files_read']} and rewrote {metrics['files_rewritten']} of {first.files_added:,} files; "
            f"{metrics['rows_updated']} updated, {metrics['rows_inserted']} inserted")
    report.add(Row(f"MERGE of 1,000 rows (500 updates, 500 inserts) into {rows:,} rows of {label} in "
                   f"{first.files_added:,} files, vs overwriting the table with the same result", seconds(ours),
                   seconds(baseline), ratio, "<= 0.1x", ratio <= 0.1, note))
    _check_same_result(catalog, spark, rows)
    source.unpersist()


def _update_against_rewrite(report: Report, spark: Any, folder: Path, rows: int, files: int, repeat: int) -> None:
    catalog = ss.Catalog.local(str(folder))
    first = catalog.write(spark.range(rows).selectExpr(*_columns(2)).repartitionByRange(files, "id"), "t")
    table = catalog.table("t")
    key = rows // 2 + 7

    def one_key() -> ss.Snapshot:
        return table.update(spark, {"c1": "c1 + 1"}, where=f"id = {key}")

    def every_row() -> ss.Snapshot:
        return table.update(spark, {"c1": f"CASE WHEN id = {key} THEN c1 + 1 ELSE c1 END"}, where="id >= 0")

    runs: dict[str, list[float]] = {"ours": [], "baseline": []}
    snapshots: dict[str, ss.Snapshot] = {}
    for _ in range(repeat):
        for side, action in (("ours", one_key), ("baseline", every_row)):
            table.restore(first.version)
            started = time.perf_counter()
            snapshots[side] = action()
            runs[side].append(time.perf_counter() - started)
    ours, baseline = Measurement(tuple(runs["ours"])), Measurement(tuple(runs["baseline"]))
    ratio = ours.best / baseline.best
    read = snapshots["ours"].operation_metrics["files_read"]
    note = (f"read {read} and rewrote {snapshots['ours'].operation_metrics['files_rewritten']} of "
            f"{first.files_added:,} files; the baseline read {snapshots['baseline'].operation_metrics['files_read']:,}")
    report.add(Row(f"UPDATE of one key in {rows:,} rows of 4 columns in {first.files_added:,} files, vs the same "
                   "change by an UPDATE whose where holds for every row", seconds(ours), seconds(baseline), ratio,
                   "<= 0.2x, <= 2 files read", ratio <= 0.2 and read <= 2, note))
    updated = catalog.read(spark, "t").where(f"id = {key}").selectExpr("c1").collect()[0][0]
    assert updated == (key * 1) % 10007 + 1, updated


def _check_same_result(catalog: ss.Catalog, spark: Any, rows: int) -> None:
    """The last run was the overwrite: its rows are what the merge gives (both checked by count and sum)."""
    result = catalog.read(spark, "t").selectExpr("count(*) AS n", "sum(id) AS ids").collect()[0]
    assert result["n"] == rows + 500 and result["ids"] == sum(range(rows + 500)), result


def _small_merge_at_spark_defaults(report: Report, spark: Any, folder: Path, repeat: int) -> None:
    catalog = ss.Catalog.local(str(folder))
    first = catalog.write(spark.range(1_000).selectExpr(*_columns(2)).repartitionByRange(4, "id"), "t")
    table = catalog.table("t")
    source = spark.range(500, 1_500).selectExpr(*[c.replace("id + ", "id + 1 + ") for c in _columns(2)]).cache()
    source.count()
    context = spark.sparkContext
    tracker = context.statusTracker()
    before = spark.conf.get("spark.sql.shuffle.partitions")
    spark.conf.set("spark.sql.shuffle.partitions", "200")  # Spark's default; the session's is 8

    def merge(group: str) -> int:
        """Runs the merge in job group ``group``; the tasks its jobs ran."""
        context.setJobGroup(group, group)
        try:
            table.merge(source, "target.id = source.id").when_matched_update().when_not_matched_insert().execute()
        finally:
            context.setLocalProperty("spark.jobGroup.id", None)  # type: ignore[arg-type]
        stages = [tracker.getStageInfo(s) for job in tracker.getJobIdsForGroup(group)
                  for s in tracker.getJobInfo(job).stageIds]  # type: ignore[union-attr]
        return sum(s.numCompletedTasks for s in stages if s is not None)

    def overwrite() -> None:
        kept = catalog.read(spark, "t").join(source, "id", "left_anti")
        catalog.write(kept.unionByName(source), "t", mode="overwrite")

    try:
        table.restore(first.version)
        merge("small-merge-first")  # the first statement plans and compiles what the others reuse
        tasks: list[int] = []
        merge_runs, overwrite_runs = [], []
        for run in range(repeat):
            for side in ("merge", "overwrite") if run % 2 == 0 else ("overwrite", "merge"):
                table.restore(first.version)
                started = time.perf_counter()
                if side == "merge":
                    tasks.append(merge(f"small-merge-{run}"))
                    merge_runs.append(time.perf_counter() - started)
                else:
                    overwrite()
                    overwrite_runs.append(time.perf_counter() - started)
    finally:
        spark.conf.set("spark.sql.shuffle.partitions", before)
        source.unpersist()
    ours, baseline = Measurement(tuple(merge_runs)), Measurement(tuple(overwrite_runs))
    met = ours.median <= 2.0 and max(tasks) <= 20
    report.add(Row("MERGE of 1,000 rows (500 updates, 500 inserts) into 1,000 rows in 4 files at Spark's default "
                   "settings (200 shuffle partitions, adaptive execution), after the first, vs overwriting the table",
                   seconds(ours), seconds(baseline), ours.median / baseline.median, "<= 2 s (median), <= 20 tasks",
                   met, f"{min(tasks)}-{max(tasks)} tasks a MERGE"))
