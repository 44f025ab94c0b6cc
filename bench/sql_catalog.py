"""The SQL catalog against the helper API, side by side in one session (the Spark I/O benchmark's data).

Reads: the Spark I/O benchmark's five queries through ``spark.table("lake.t")`` against
``catalog.read(spark, "t")``, both on Spark's own Parquet reader, the load included in each timed
read. Writes: ``INSERT INTO lake.t SELECT * FROM source`` against ``catalog.write(df, "t")``,
each appending the same rows to a table of its own.

MERGE: ``MERGE INTO`` against ``t.merge`` on the merge benchmark's 4-column table (1,000 source
rows: 500 updates, 500 inserts), the table restored to its first version before each run. DELETE
of one partition through SQL, with the Spark jobs it starts counted (none may start), against
``t.delete_where`` with the same condition as an Arrow expression.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import sleeper_spark as ss
from bench.common import Report, Row, measure_pair, seconds
from bench.merge import _columns as merge_columns
from bench.spark_io import COLUMNS, session, source
from sleeper_spark.spark.common.jvm import catalog_conf


def run(report: Report, quick: bool) -> None:
    rows, files_per_partition = (40_000, 10) if quick else (1_000_000, 300)
    repeat = 1 if quick else 3
    work = Path(tempfile.mkdtemp(prefix="bench-sql-"))
    spark = session(work)
    try:
        df = source(spark, rows, files_per_partition)
        df.count()
        catalog = ss.Catalog.local(str(work / "wh"))
        for key, value in catalog_conf("lake", catalog).items():
            spark.conf.set(key, value)
        catalog.write(df, "t", partition_by=["part"])
        _reads(report, spark, catalog, rows, files_per_partition, 1 if quick else 5)  # short rows: more runs
        _writes(report, spark, catalog, df, repeat)
        merge_rows, merge_files = (40_000, 40) if quick else (2_000_000, 2_000)
        _merge(report, spark, catalog, merge_rows, merge_files, repeat)
        _partition_delete(report, spark, catalog, repeat)
    finally:
        spark.stop()
        shutil.rmtree(work, ignore_errors=True)


def _reads(report: Report, spark: Any, catalog: ss.Catalog, rows: int, files_per_partition: int,
           repeat: int) -> None:
    low = rows // 2
    width = max(1, rows // (8 * files_per_partition) // 2)
    queries: list[tuple[str, Callable[[Any], Any]]] = [
        ("count()", lambda d: d.count()),
        ("one column of 22: sum(c0)", lambda d: d.selectExpr("sum(c0)").collect()),
        ("partition filter: part = '3', sum(c0)", lambda d: d.where("part = '3'").selectExpr("sum(c0)").collect()),
        ("full scan: sum of all 22 columns",
         lambda d: d.selectExpr(*[f"sum(c{i})" for i in range(COLUMNS)], "sum(id)", "max(part)").collect()),
        (f"selective min/max filter: id in [{low}, {low + width})",
         lambda d: d.where(f"id >= {low} and id < {low + width}").selectExpr("sum(c1)").collect()),
    ]
    for name, query in queries:
        query(spark.table("lake.t"))  # unmeasured: the first plan of each kind compiles code
        sql_m, helper_m = measure_pair(lambda q=query: q(spark.table("lake.t")),
                                       lambda q=query: q(catalog.read(spark, "t")), repeat)
        ratio = sql_m.best / helper_m.best
        report.add(Row(f"SQL catalog read vs catalog.read, {name}", seconds(sql_m), seconds(helper_m), ratio,
                       "<= 1.05x", ratio <= 1.05))


def _writes(report: Report, spark: Any, catalog: ss.Catalog, df: Any, repeat: int) -> None:
    df.createOrReplaceTempView("bench_source")
    spark.sql("CREATE TABLE lake.by_sql USING sleeper PARTITIONED BY (part) AS SELECT * FROM bench_source LIMIT 0")
    catalog.write(df.limit(0), "by_helper", partition_by=["part"])

    def by_sql() -> None:
        spark.sql("INSERT INTO lake.by_sql SELECT * FROM bench_source")

    def by_helper() -> None:
        catalog.write(df, "by_helper")

    by_sql()  # one of each first, unmeasured: the JVM compiles each write path on its first use
    by_helper()
    sql_m, helper_m = measure_pair(by_sql, by_helper, min(repeat, 2))
    ratio = sql_m.best / helper_m.best
    report.add(Row("SQL INSERT INTO vs catalog.write, the same rows", seconds(sql_m), seconds(helper_m), ratio,
                   "<= 1.05x", ratio <= 1.05))


def _merge(report: Report, spark: Any, catalog: ss.Catalog, rows: int, files: int, repeat: int) -> None:
    first = catalog.write(spark.range(rows).selectExpr(*merge_columns(2)).repartitionByRange(files, "id"), "m")
    table = catalog.table("m")
    changed = [c.replace("id + ", "id + 1 + ") for c in merge_columns(2)]
    merge_source = spark.range(rows - 500, rows + 500).selectExpr(*changed).cache()
    merge_source.count()
    merge_source.createOrReplaceTempView("merge_source")

    def by_sql() -> None:
        table.restore(first.version)
        spark.sql("MERGE INTO lake.m t USING merge_source s ON t.id = s.id "
                  "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *")

    def by_python() -> None:
        table.restore(first.version)
        table.merge(merge_source, "target.id = source.id").when_matched_update().when_not_matched_insert().execute()

    by_sql()  # one of each first, unmeasured
    by_python()
    sql_m, python_m = measure_pair(by_sql, by_python, repeat)
    ratio = sql_m.best / python_m.best
    metrics = table.history()[-1].operation_metrics
    report.add(Row(f"SQL MERGE INTO vs t.merge, 1,000 rows into {rows:,} rows in {first.files_added:,} files "
                   "(restore included in both)", seconds(sql_m), seconds(python_m), ratio, "<= 1.1x", ratio <= 1.1,
                   f"{metrics['rows_updated']} updated, {metrics['rows_inserted']} inserted, "
                   f"{metrics['files_read']} files read"))
    merge_source.unpersist()


def _partition_delete(report: Report, spark: Any, catalog: ss.Catalog, repeat: int) -> None:
    import pyarrow.compute as pc

    table = catalog.table("t")
    first = table.history()[-1].version
    jobs = spark._jsparkSession.sparkContext().dagScheduler()
    started_jobs: list[int] = []

    def by_sql() -> None:
        table.restore(first)
        before = jobs.nextJobId()
        spark.sql("DELETE FROM lake.t WHERE part = '3'")
        started_jobs.append(jobs.nextJobId() - before)

    def by_python() -> None:
        table.restore(first)
        table.delete_where(spark, pc.field("part") == "3")

    by_sql()
    by_python()
    sql_m, python_m = measure_pair(by_sql, by_python, repeat)
    ratio = sql_m.best / python_m.best
    removed = table.history()[-1].files_removed
    report.add(Row("SQL DELETE of one partition vs t.delete_where(Arrow expression), restore included in both",
                   seconds(sql_m), seconds(python_m), ratio, "no Spark job", max(started_jobs) == 0,
                   f"{max(started_jobs)} Spark jobs started; {removed} files dropped whole"))
