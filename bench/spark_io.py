"""Spark on the local backend: the helper API against plain Parquet, side by side, in one session.

1 M rows x 22 columns, 8 partition values, over 2,000 files (``--quick``: 40 k rows, 80 files). The
session has the jar (``ss.configure_spark``), so the helper reads and writes with Spark's own
Parquet reader and writer; the ``Python source`` rows switch that off and measure the ``sleeper``
Python data source, which a session without the jar uses. The selective query matches about
1 % of the files: each file holds a contiguous range of ``id``, and the filter picks a narrow one.
The ``format('sleeper')`` rows compare the standard DataFrameReader/Writer with the helper API
(``catalog.read`` / ``catalog.write``), both on Spark's own Parquet reader and writer, load
included in each timed read. The hand-over row times 100,000 files going to the JVM (synthetic
entries: no data read); the last row times the driver's work between a native write's Spark job
and its commit, for 10,000 files (synthetic facts in a real accumulator).
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import sleeper_spark as ss
from bench.common import Report, Row, measure, measure_pair, paired_ratio, seconds

PARTITIONS = 8
COLUMNS = 20  # c0 .. c19, besides id and part: 22 in all


def session(folder: Path) -> Any:
    os.environ["PYSPARK_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    log4j = folder / "log4j2.properties"
    log4j.write_text("rootLogger.level = error\nrootLogger.appenderRef.stdout.ref = console\n"
                     "appender.console.type = Console\nappender.console.name = console\n"
                     "appender.console.target = SYSTEM_ERR\nappender.console.layout.type = PatternLayout\n"
                     "appender.console.layout.pattern = %m%n\n")
    builder = (SparkSession.builder.master("local[2]").appName("sleeper-bench")
               .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.shuffle.partitions", str(PARTITIONS))
               .config("spark.driver.memory", "4g")
               .config("spark.driver.extraJavaOptions", f"-Dlog4j2.configurationFile={log4j}"))
    return ss.configure_spark(builder).getOrCreate()


def source(spark: Any, rows: int, files_per_partition: int) -> Any:
    from pyspark.sql import functions as F

    # Each (part, id range) lands in a file of its own: repartitioning by a bucket of id gives
    # files_per_partition tasks per partition value, each a narrow id range.
    columns = [F.col("id"), (F.col("id") % PARTITIONS).cast("string").alias("part")]
    columns += [((F.col("id") * (i + 1)) % 10_007 * 0.5).alias(f"c{i}") if i % 2 else
                ((F.col("id") + i) % 100_003).alias(f"c{i}") for i in range(COLUMNS)]
    bucket = (F.col("id") * files_per_partition / rows).cast("int")
    return spark.range(rows).select(*columns).repartition(PARTITIONS * files_per_partition, "part", bucket).cache()


def run(report: Report, quick: bool) -> None:
    # 300 tasks per partition value: hash collisions of (part, bucket) leave some empty, >= 2,000 files remain.
    rows, files_per_partition = (40_000, 10) if quick else (1_000_000, 300)
    repeat = 1 if quick else 3
    work = Path(tempfile.mkdtemp(prefix="bench-spark-"))
    spark = session(work)
    try:
        df = source(spark, rows, files_per_partition)
        df.count()
        _writes(report, spark, df, work, rows, repeat)
        catalog = ss.Catalog.local(str(work / "ours-0"))
        plain_path = str(work / "plain-0")
        files = len(catalog.table("t").files())

        def ours() -> Any:
            return catalog.read(spark, "t")

        def plain() -> Any:
            return spark.read.parquet(plain_path)

        low = rows // 2
        width = max(1, rows // (PARTITIONS * files_per_partition) // 2)
        queries: list[tuple[str, Callable[[Any], Any], str, float | None]] = [
            (f"count(), {files:,} files", lambda d: d.count(), "<= 1.05x", 1.05),
            ("one column of 22: sum(c0)", lambda d: d.selectExpr("sum(c0)").collect(), "<= 1.05x", 1.05),
            ("partition filter: part = '3', sum(c0)", lambda d: d.where("part = '3'").selectExpr("sum(c0)").collect(),
             "<= 1.05x", 1.05),
            ("full scan: sum of all 22 columns",
             lambda d: d.selectExpr(*[f"sum(c{i})" for i in range(COLUMNS)], "sum(id)", "max(part)").collect(),
             "<= 1.05x", 1.05),
            (f"selective min/max filter (~1 % of files): id in [{low}, {low + width})",
             lambda d: d.where(f"id >= {low} and id < {low + width}").selectExpr("sum(c1)").collect(),
             ">= 3x faster", None),
        ]
        for name, query, target, limit in queries:
            _compare(report, f"Spark read, {name}", lambda q=query: q(ours()), lambda q=query: q(plain()),
                     repeat, target, limit)

        def by_format() -> Any:
            return spark.read.format("sleeper").options(**catalog.options()).load("t")

        for name, query, _, _ in queries:
            _compare(report, f"format('sleeper') read vs catalog.read, {name}", lambda q=query: q(by_format()),
                     lambda q=query: q(ours()), repeat, "<= 1.05x", 1.05)
        _python_source_rows(report, spark, catalog, plain, queries, repeat)
        _read_after_adding_a_column(report, spark, catalog, queries[3][1], repeat)
        _hand_over(report, spark, 10_000 if quick else 100_000)
        _commit_after_job(report, spark, work, 1_000 if quick else 10_000)
    finally:
        spark.stop()
        shutil.rmtree(work, ignore_errors=True)


def _writes(report: Report, spark: Any, df: Any, work: Path, rows: int, repeat: int) -> None:
    counter = iter(range(1000))
    plain_counter = iter(range(1000))

    def ours_write() -> None:
        ss.Catalog.local(str(work / f"ours-{next(counter)}")).write(df, "t", partition_by=["part"])

    def plain_write() -> None:
        df.write.mode("overwrite").partitionBy("part").parquet(str(work / f"plain-{next(plain_counter)}"))

    # A write of each kind first, unmeasured: the JVM compiles the write path on its first use.
    ours_write()
    plain_write()
    # Then four runs each, alternating, the side that goes first too: a write takes half a minute
    # on two cores, and the best of two runs moved by 5-10 % between runs of this row. The ratio
    # is that of the pairs (paired_ratio), the best runs' ratio beside it.
    ours_m, plain_m = measure_pair(ours_write, plain_write, 4 if repeat > 1 else 1)
    ratio = paired_ratio(ours_m, plain_m)
    files = len(ss.Catalog.local(str(work / "ours-0")).table("t").files())
    report.add(Row(f"Spark write, {rows:,} rows x 22 columns, 8 partition values, {files:,} files", seconds(ours_m),
                   seconds(plain_m), ratio, "<= 1.03x", ratio <= 1.03,
                   f"paired; best runs {ours_m.best / plain_m.best:.3f}x"))

    def format_write() -> None:
        options = ss.Catalog.local(str(work / f"fmt-{next(counter)}")).options()
        df.write.format("sleeper").options(**options).partitionBy("part").mode("append").save("t")

    format_write()  # unmeasured, as above
    format_m, ours_m = measure_pair(format_write, ours_write, min(repeat, 2))
    ratio = format_m.best / ours_m.best
    report.add(Row("format('sleeper') write vs catalog.write, the same data", seconds(format_m), seconds(ours_m),
                   ratio, "<= 1.05x", ratio <= 1.05))
    spark.conf.set("spark.sleeper_spark.native", "false")
    try:
        python = measure(lambda: ss.Catalog.local(str(work / f"py-{next(counter)}")).write(df, "t",
                                                                                        partition_by=["part"]), 1)
    finally:
        spark.conf.unset("spark.sleeper_spark.native")
    plain = measure(plain_write, 1)
    report.add(Row("Python source write (a session without the jar)", seconds(python), seconds(plain),
                   python.best / plain.best, "(fallback)", None))


def _compare(report: Report, name: str, ours: Callable[[], Any], plain: Callable[[], Any], repeat: int,
             target: str, limit: float | None) -> None:
    ours_m, plain_m = measure_pair(ours, plain, repeat)
    ratio = ours_m.best / plain_m.best
    if limit is None:  # a speed-up target
        speedup = plain_m.best / ours_m.best
        report.add(Row(name, seconds(ours_m), seconds(plain_m), ratio, target, speedup >= 3,
                       f"{speedup:.1f}x faster"))
    else:
        report.add(Row(name, seconds(ours_m), seconds(plain_m), ratio, target, ratio <= limit))


def _python_source_rows(report: Report, spark: Any, catalog: ss.Catalog, plain: Callable[[], Any],
                        queries: list[tuple[str, Callable[[Any], Any], str, float | None]], repeat: int) -> None:
    spark.conf.set("spark.sleeper_spark.native", "false")
    try:
        for name, query, _, _ in (queries[0], queries[3], queries[4]):
            python = measure(lambda q=query: q(catalog.read(spark, "t")), 1)
            baseline = measure(lambda q=query: q(plain()), 1)
            report.add(Row(f"Python source read, {name}", seconds(python), seconds(baseline),
                           python.best / baseline.best, "(fallback)", None))
    finally:
        spark.conf.unset("spark.sleeper_spark.native")


def _read_after_adding_a_column(report: Report, spark: Any, catalog: ss.Catalog, query: Callable[[Any], Any],
                                repeat: int) -> None:
    """The full scan after ``add_columns`` against the version before it: every file now lacks a
    column, which Spark's reader fills with nulls."""
    import pyarrow as pa

    table = catalog.table("t")
    before = table.latest().version
    table.add_columns([pa.field("note", pa.string())])
    after_m, before_m = measure_pair(lambda: query(catalog.read(spark, "t")),
                                     lambda: query(catalog.read(spark, "t", version=before)), repeat)
    ratio = after_m.best / before_m.best
    report.add(Row("Spark read after adding a column (full scan) vs the version before", seconds(after_m),
                   seconds(before_m), ratio, "<= 1.05x", ratio <= 1.05))


def _hand_over(report: Report, spark: Any, count: int) -> None:
    """Builds a DataFrame over ``count`` synthetic file entries and plans a scan of all of them."""
    import pyarrow as pa
    from pyspark.sql import DataFrame

    from sleeper_spark.models import TableSchema
    from sleeper_spark.spark.common.jvm import native_entry
    from sleeper_spark.spark.native import native_read

    entry = native_entry(spark)
    fields = [pa.field("part", pa.string()), *[pa.field(f"c{i}", pa.int64()) for i in range(21)]]
    schema = TableSchema.from_arrow(pa.schema(fields))
    columns: dict[str, Any] = {"path": [f"data/part={i % 8}/{i:032x}.parquet" for i in range(count)],
                               "size": pa.array([1 << 20] * count, pa.int64()), "mtime": pa.array([0] * count),
                               "rows": pa.array([1000] * count), "part:part": [str(i % 8) for i in range(count)]}
    for i in range(21):
        columns[f"nulls:c{i}"] = pa.array([0] * count)
        columns[f"min:c{i}"] = pa.array(range(0, count * 1000, 1000))
        columns[f"max:c{i}"] = pa.array(range(999, count * 1000, 1000))
    files = pa.table(columns)
    timings: list[tuple[float, float]] = []
    for _ in range(3):
        started = time.perf_counter()
        jdf = native_read.data_frame(spark, entry, "bench", "file:/nowhere", files, schema, ("part",))
        built = time.perf_counter()
        DataFrame(jdf, spark).where("part = '3' and c0 >= 5000000 and c0 < 5100000")._jdf.queryExecution().toRdd()
        timings.append((built - started, time.perf_counter() - built))
    build, plan = min(timings)
    report.add(Row(f"hand-over of {count:,} files to the JVM index (Arrow), then plan a selective scan",
                   f"{build:.3f} s + {plan:.3f} s", "-", None, "well under 1 s", build + plan < 1.0,
                   "JVM side; the FileRef-to-Arrow step is the next row"))
    state_files = pa.table({
        "path": columns["path"], "size_bytes": columns["size"], "row_count": columns["rows"],
        "checksum": pa.array(["sha256:0"] * count), "added_version": pa.array(range(count), pa.int64()),
        "partition.part": columns["part:part"],
        **{f"{kind}.c{i}": columns[f"{short}:c{i}"] for i in range(21)
           for kind, short in (("min", "min"), ("max", "max"), ("null_count", "nulls"))},
    })
    started = time.perf_counter()
    native_read.hand_over_columns(state_files, schema, ("part",))
    python = time.perf_counter() - started
    report.add(Row(f"the files table of {count:,} files in the hand-over format (Python side)",
                   f"{python:.3f} s", "-", None, "well under 1 s", python < 1.0))


def _commit_after_job(report: Report, spark: Any, work: Path, count: int) -> None:
    """What the driver does between the end of a native write's Spark job and the committed
    version, for ``count`` files: take the executors' facts from the accumulator, make the
    files table's rows and their JSON, commit, and remove the ``.crc`` files Hadoop leaves on
    the local disk. The facts are synthetic (what FactsOutputWriter reports for files of this
    bench's 22 columns), put into a real accumulator; no data file is needed or read."""
    import json

    from sleeper_spark.spark.common.jvm import native_entry
    from sleeper_spark.spark.native.native_write import commit_append, described_files, take_facts
    from sleeper_spark.state.file_columns import FileLayout
    from sleeper_spark.table.writes import new_write_id

    entry = native_entry(spark)
    catalog = ss.Catalog.local(str(work / "facts"))
    table = catalog.create_table("t", source(spark, 10, 1).schema, partition_by=["part"])
    state = table.state()
    columns = {"id": {"nulls": 0, "min": "0", "max": "999"}, "part": {"nulls": 0, "min": "3", "max": "3"}}
    columns.update({f"c{i}": {"nulls": 0, "min": "0.5" if i % 2 else "1", "max": "5003.0" if i % 2 else "100002"}
                    for i in range(COLUMNS)})
    lines = [json.dumps({"name": f"part-{i:05d}-bench.c000.snappy.parquet", "dir": "__sleeper_partition=3",
                         "rows": 1000, "size": 1 << 20, "sha256": "0" * 64, "columns": columns})
             for i in range(count)]
    accumulator = entry.factsAccumulator(spark._jsparkSession)
    gateway = spark.sparkContext._gateway
    batch = gateway.jvm.java.util.ArrayList()
    for line in lines:
        batch.add(line)
    accumulator.setValue(batch)

    started = time.perf_counter()
    write_id = new_write_id()
    files, cleanup = described_files(table, take_facts(entry, accumulator), f"data/spark-{write_id}",
                                     FileLayout(state.schema, state.partition_by), local=True)
    commit_append(table, files, {}, write_id, None, None)
    cleanup.result()
    elapsed = time.perf_counter() - started
    report.add(Row(f"from the end of a native write's Spark job to its committed version, {count:,} files",
                   f"{elapsed:.3f} s", "-", None, "<= 1 s", elapsed <= 1.0,
                   "facts from the executors' accumulator to the state's Arrow columns and the log entry's "
                   "JSON, no FileRef per file; one commit; no data file read"))
