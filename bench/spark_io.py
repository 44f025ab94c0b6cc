"""Spark on the local backend: our write and reads against plain Parquet, side by side.

2 M rows x 5 columns, 8 partition values (``--quick``: 50 k rows). The selective query matches
about 1 % of the files: the table is written as 25 files per partition value (200 in all), each
holding a contiguous range of ``id``, and the filter picks a narrow ``id`` range.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import sleeper_spark as ss
from bench.common import Report, Row, measure, seconds

PARTITIONS = 8
FILES_PER_PARTITION = 25


def session(folder: Path) -> Any:
    os.environ["PYSPARK_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    log4j = folder / "log4j2.properties"
    log4j.write_text("rootLogger.level = error\nrootLogger.appenderRef.stdout.ref = console\n"
                     "appender.console.type = Console\nappender.console.name = console\n"
                     "appender.console.target = SYSTEM_ERR\nappender.console.layout.type = PatternLayout\n"
                     "appender.console.layout.pattern = %m%n\n")
    return (SparkSession.builder.master("local[2]").appName("sleeper-bench")
            .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
            .config("spark.sql.shuffle.partitions", str(PARTITIONS))
            .config("spark.driver.memory", "4g")
            .config("spark.driver.extraJavaOptions", f"-Dlog4j2.configurationFile={log4j}")
            .getOrCreate())


def source(spark: Any, rows: int) -> Any:
    from pyspark.sql import functions as F

    # Rows are laid out so that each (part, id range) lands in its own file: repartitioning by
    # a bucket of id gives FILES_PER_PARTITION tasks per partition value, each a narrow id range.
    df = spark.range(rows).select(
        F.col("id"),
        (F.col("id") % PARTITIONS).cast("string").alias("part"),
        (F.col("id") * 0.5).alias("value"),
        (F.col("id") % 1000).alias("count"),
        F.concat(F.lit("user-"), (F.col("id") % 5000).cast("string")).alias("name"),
    )
    bucket = (F.col("id") * FILES_PER_PARTITION / rows).cast("int")
    return df.repartition(PARTITIONS * FILES_PER_PARTITION, "part", bucket).cache()


def run(report: Report, quick: bool) -> None:
    rows = 50_000 if quick else 2_000_000
    repeat = 1 if quick else 3
    work = Path(tempfile.mkdtemp(prefix="bench-spark-"))
    spark = session(work)
    try:
        ss.register(spark)
        df = source(spark, rows)
        df.count()
        counter = iter(range(1000))

        def ours_write() -> None:
            catalog = ss.Catalog.local(str(work / f"ours-{next(counter)}"))
            catalog.write(df, "t", partition_by=["part"])

        def plain_write() -> None:
            df.write.mode("overwrite").partitionBy("part").parquet(str(work / f"plain-{next(counter)}"))

        ours = measure(ours_write, repeat)
        plain = measure(plain_write, repeat)
        report.add(Row(f"Spark write, {rows:,} rows x 5 columns, 8 partition values", seconds(ours), seconds(plain),
                       ours.best / plain.best, "<= 1.05x", ours.best / plain.best <= 1.05))

        catalog = ss.Catalog.local(str(work / "ours-0"))
        plain_path = str(work / f"plain-{repeat}")
        sums = "sum(id), sum(value), sum(count), count(distinct part), max(name)"

        def scan_ours() -> None:
            catalog.read(spark, "t").selectExpr(*sums.split(", ")).collect()

        def scan_plain() -> None:
            spark.read.parquet(plain_path).selectExpr(*sums.split(", ")).collect()

        ours_scan, plain_scan = measure(scan_ours, repeat), measure(scan_plain, repeat)
        report.add(Row("Spark full scan (aggregates over all columns)", seconds(ours_scan), seconds(plain_scan),
                       ours_scan.best / plain_scan.best, "<= 1.1x", ours_scan.best / plain_scan.best <= 1.1))

        low = rows // 2
        width = max(1, rows // (PARTITIONS * FILES_PER_PARTITION) // 2)
        predicate = f"id >= {low} and id < {low + width}"

        def select_ours() -> None:
            catalog.read(spark, "t").where(predicate).selectExpr("sum(value)").collect()

        def select_plain() -> None:
            spark.read.parquet(plain_path).where(predicate).selectExpr("sum(value)").collect()

        ours_sel, plain_sel = measure(select_ours, repeat), measure(select_plain, repeat)
        speedup = plain_sel.best / ours_sel.best
        report.add(Row("Spark selective filter (~1 % of files)", seconds(ours_sel), seconds(plain_sel),
                       ours_sel.best / plain_sel.best, ">= 5x faster", speedup >= 5,
                       f"{speedup:.1f}x faster"))
    finally:
        spark.stop()
        shutil.rmtree(work, ignore_errors=True)
