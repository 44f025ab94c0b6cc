"""Optimized writes and automatic compaction: the files a write leaves, and what that costs.

Optimized write: 2,000,000 rows x 22 columns (50,000 in a quick run) in random order over 50
partition values, handed to the writer in 32 tasks that each hold every value. Ours writes them
with ``write.distribution=partition`` (one shuffle, then one file per value); the baseline is plain
``partitionBy("part").parquet()`` of the same cached DataFrame, which writes a file per task per
value. Both through Spark's own Parquet writer, in one session, alternating.

Automatic compaction: 1,000 one-row Arrow appends (200 in a quick run) to one partition of a fresh
local table each run. Ours: the table has ``compaction.auto=true`` (default ``min_files`` 16: a
compaction behind about every 17th commit, on the table's own thread in the same process, sharing
the interpreter with the appends). Baseline: the same appends to a table without it. Each side's
time is its appends alone, first write to last commit: the table is created before the clock
starts, and ours waits for the compactions still behind its last append after the clock stops,
so that none of them runs into the next run of either side (that wait is reported beside). The
ratio is append throughput with compaction against without (baseline time / ours), order-balanced
over the paired runs; the live files are counted, and every row checked, on the last run of each.
"""

from __future__ import annotations

import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import pyarrow as pa

import sleeper_spark as ss
from bench.common import Report, Row, measure_pair, measure_pair_timed, paired_ratio, seconds
from bench.spark_io import session

COLUMNS = 20  # c0 .. c19 beside id and part: 22 in all
PARTITION_VALUES = 50
TASKS = 32


def run(report: Report, quick: bool) -> None:
    work = Path(tempfile.mkdtemp(prefix="bench-layout-"))
    try:
        _optimized_write(report, work, 50_000 if quick else 2_000_000, 1 if quick else 2)
        _auto_compaction(report, work, 200 if quick else 1_000, 2 if quick else 8)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _optimized_write(report: Report, work: Path, rows: int, repeat: int) -> None:
    from pyspark.sql import functions as F

    spark = session(work)
    try:
        columns = [F.col("id"), (F.xxhash64("id") % PARTITION_VALUES).cast("string").alias("part")]
        columns += [((F.col("id") * (i + 1)) % 10_007 * 0.5).alias(f"c{i}") if i % 2 else
                    ((F.col("id") + i) % 100_003).alias(f"c{i}") for i in range(COLUMNS)]
        df = spark.range(rows).select(*columns).repartition(TASKS).cache()
        df.count()
        counter = iter(range(1000))
        plain_counter = iter(range(1000))
        tables: list[ss.Table] = []

        def ours() -> None:
            catalog = ss.Catalog.local(str(work / f"ours-{next(counter)}"))
            table = catalog.create_table("t", _arrow_schema(df), partition_by=["part"],
                                         properties={"write.distribution": "partition"})
            table.write(df)
            tables.append(table)

        def plain() -> None:
            df.write.mode("overwrite").partitionBy("part").parquet(str(work / f"plain-{next(plain_counter)}"))

        ours()  # unmeasured: the JVM compiles the write path on its first use
        plain()
        ours_m, plain_m = measure_pair(ours, plain, repeat)
        ratio = ours_m.best / plain_m.best
        per_value = max(_files_per_value(tables[-1]).values())
        plain_files = sum(1 for _ in (work / "plain-0").rglob("*.parquet"))
        report.add(Row(f"Spark write, {rows:,} rows x 22 columns in {TASKS} tasks, {PARTITION_VALUES} partition "
                       "values: write.distribution=partition vs plain partitionBy().parquet()", seconds(ours_m),
                       seconds(plain_m), ratio, "<= 1.15x, <= 2 files a value",
                       ratio <= 1.15 and per_value <= 2,
                       f"ours: at most {per_value} file(s) a value; plain: {plain_files:,} files"))
    finally:
        spark.stop()


def _arrow_schema(df: Any) -> pa.Schema:
    return pa.schema([("id", pa.int64()), ("part", pa.string())]
                     + [(f"c{i}", pa.float64() if i % 2 else pa.int64()) for i in range(COLUMNS)])


def _files_per_value(table: ss.Table) -> dict[str, int]:
    counts: dict[str, int] = {}
    for file in table.files():
        counts[file.partition["part"]] = counts.get(file.partition["part"], 0) + 1
    return counts


def _auto_compaction(report: Report, work: Path, appends: int, repeat: int) -> None:
    schema = pa.schema([("day", pa.string()), ("n", pa.int64())])
    counter = iter(range(1000))
    last: dict[str, ss.Table] = {}
    behind: list[float] = []  # seconds ours waited, after its last append, for its compactions

    def appending(label: str, properties: dict[str, str]) -> float:
        table = ss.Catalog.local(str(work / f"appends-{label}-{next(counter)}")).create_table(
            "clicks", schema, partition_by=["day"], properties=properties)
        started = time.perf_counter()
        for n in range(appends):
            table.write(pa.table({"day": ["2024-05-01"], "n": [n]}, schema=schema))
        took = time.perf_counter() - started
        if properties:
            assert table.auto_compaction.flush(300), "the compactions behind the appends did not finish"
            behind.append(time.perf_counter() - started - took)
        last[label] = table
        return took

    ours_m, plain_m = measure_pair_timed(lambda: appending("auto", {"compaction.auto": "true"}),
                                         lambda: appending("plain", {}), repeat)
    files = {label: len(table.files()) for label, table in last.items()}
    every_row = all(sorted(t.scan().column("n").to_pylist()) == list(range(appends)) for t in last.values())
    throughput = 1 / paired_ratio(ours_m, plain_m)
    report.add(Row(f"{appends:,} one-row appends to one partition, append throughput: compaction.auto=true vs "
                   "without", f"{seconds(ours_m)}, {files['auto']} live files",
                   f"{seconds(plain_m)}, {files['plain']} live files", throughput,
                   "throughput >= 0.8x, <= 20 live files, every row once",
                   throughput >= 0.8 and files["auto"] <= 20 and every_row,
                   f"{repeat} paired runs, order-balanced median ratio; every row once: {every_row}; compactions "
                   f"done {statistics.median(behind) * 1000:.0f} ms (median) after the last append"))
