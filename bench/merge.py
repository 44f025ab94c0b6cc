"""MERGE against rewriting the whole table, side by side, in one Spark session with the jar.

2,000,000 rows clustered by key in 2,000 files (``--quick``: 40,000 rows in 40 files). The
source is 1,000 rows of change data as a key-clustered table receives it: 500 updates of the
newest keys and 500 inserts of new keys. The baseline writes the same result by overwriting the
table (read it, apply the changes with a join, write every row back). Before each run the table
is restored to its first version, which copies nothing.
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
        catalog = ss.Catalog.local(str(work / "warehouse"))
        data = spark.range(rows).selectExpr("id", "id % 97 AS bucket", "sha2(cast(id AS string), 256) AS payload",
                                            "rand(7) AS score")
        first = catalog.write(data.repartitionByRange(files, "id"), "t")
        table = catalog.table("t")
        source = spark.range(rows - 500, rows + 500).selectExpr(
            "id", "id % 97 AS bucket", "concat('changed ', cast(id AS string)) AS payload", "0.5 AS score").cache()
        source.count()

        def merge() -> ss.Snapshot:
            return (table.merge(source, "target.id = source.id").when_matched_update()
                    .when_not_matched_insert().execute())

        def overwrite() -> ss.Snapshot:
            current = catalog.read(spark, "t")
            kept = current.join(source, "id", "left_anti")
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
        note = (f"read {metrics['files_read']} and rewrote {metrics['files_rewritten']} of {first.files_added} files; "
                f"{metrics['rows_updated']} updated, {metrics['rows_inserted']} inserted")
        report.add(Row(f"MERGE of 1,000 rows (500 updates, 500 inserts) into {rows:,} rows in {first.files_added:,} "
                       "files, vs overwriting the table with the same result", seconds(ours), seconds(baseline), ratio,
                       "<= 0.1x", ratio <= 0.1, note))
        _check_same_result(catalog, spark, rows)
    finally:
        spark.stop()
        shutil.rmtree(work, ignore_errors=True)


def _check_same_result(catalog: ss.Catalog, spark: Any, rows: int) -> None:
    """The last run was the overwrite: its rows are what the merge gives (both checked by count and sum)."""
    result = catalog.read(spark, "t").selectExpr("count(*) AS n", "sum(id) AS ids").collect()[0]
    assert result["n"] == rows + 500 and result["ids"] == sum(range(rows + 500)), result
