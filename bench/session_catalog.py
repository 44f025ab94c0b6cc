"""Spark's session catalog with sleeper tables in it, side by side in one Spark context.

Reads: three of the Spark I/O benchmark's queries through ``spark.table("db.t")`` in a session
whose ``spark_catalog`` is the sleeper session catalog, against ``spark.table("lake.db.t")``, the
same table through the ``lake`` catalog. Writes: ``INSERT INTO db.w SELECT ...`` against the same
``INSERT`` into a ``lake`` table of its own. An ordinary Parquet table of the session catalog:
the same queries in a session with the sleeper session catalog against a session without it
(Spark's own), both over the one in-memory metastore of the context.

Both sides of each row run the same Spark code once the name is resolved, so what the rows can
show is the catalog's cost per query, a few per cent at most. That needs many runs: 100 pairs
of reads (200,000 rows in about 20 files: 0.1-0.3 s a query), 300 for the Parquet table's rows,
whose target (1.02x) is inside what 100 pairs tell apart, and 25 pairs of inserts (with 9, the
row read 0.95x in one run and 1.07x in the next, the medians within 4 %), each ratio taken from
runs made one after the other (``bench.common.paired_ratio``: the geometric mean of the median
ratio with ours first and with ours second). Runs on 1,000,000 rows in 2,000 files took 1-4 s
with the medians of one side moving by 10 % between runs of this benchmark, and 14 pairs gave
0.95x, 1.05x and 1.10x for the same row in three runs; the planning rows (name to physical plan,
300 runs a side) show the catalog's part alone.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import sleeper_spark as ss
from bench.common import Report, Row, measure_pair, ordered_ratios, paired_ratio, seconds
from bench.spark_io import COLUMNS, session, source
from sleeper_spark.spark.common.jvm import catalog_conf


def run(report: Report, quick: bool) -> None:
    rows, files_per_partition = (40_000, 2) if quick else (200_000, 2)
    read_pairs, parquet_pairs, insert_pairs = (2, 2, 1) if quick else (100, 300, 25)
    work = Path(tempfile.mkdtemp(prefix="bench-session-catalog-"))
    spark = session(work)
    try:
        df = source(spark, rows, files_per_partition)
        df.count()
        catalog = ss.Catalog.local(str(work / "wh"))
        with_sleeper = spark.newSession()  # its spark_catalog: the sleeper session catalog
        for key, value in {**catalog_conf("spark_catalog", catalog), **catalog_conf("lake", catalog)}.items():
            with_sleeper.conf.set(key, value)
        plain = spark.newSession()  # Spark's own session catalog, over the same in-memory metastore
        # In the work folder, not the Spark warehouse of the current directory: nothing is left behind.
        with_sleeper.sql(f"CREATE DATABASE IF NOT EXISTS db LOCATION '{work / 'spark-db'}'")
        df.createOrReplaceGlobalTempView("bench_source")  # one cached source, seen by both sessions
        for name, provider in (("db.t", "sleeper"), ("db.p", "parquet")):
            with_sleeper.sql(f"CREATE TABLE {name} USING {provider} PARTITIONED BY (part) "
                             "AS SELECT * FROM global_temp.bench_source")
        queries = _queries()
        _read_pairs(report, queries, lambda: with_sleeper.table("db.t"), lambda: with_sleeper.table("lake.db.t"),
                    "session catalog read vs the lake catalog, the same table", 1.05, read_pairs)
        _read_pairs(report, queries, lambda: with_sleeper.table("db.p"), lambda: plain.table("db.p"),
                    "a Parquet table's read, sleeper session catalog vs Spark's own", 1.02, parquet_pairs)
        _planning(report, "a sleeper table's query planned, name to physical plan, session catalog vs the lake catalog",
                  lambda: with_sleeper.table("db.t"), lambda: with_sleeper.table("lake.db.t"), 20 if quick else 300,
                  1.05)
        _planning(report, "a Parquet table's query planned, name to physical plan, sleeper session catalog vs "
                  "Spark's own", lambda: with_sleeper.table("db.p"), lambda: plain.table("db.p"),
                  20 if quick else 300, 1.02)
        _writes(report, with_sleeper, insert_pairs)
    finally:
        spark.stop()
        shutil.rmtree(work, ignore_errors=True)


def _queries() -> list[tuple[str, Callable[[Any], Any]]]:
    return [
        ("count()", lambda d: d.count()),
        ("partition filter: part = '3', sum(c0)", lambda d: d.where("part = '3'").selectExpr("sum(c0)").collect()),
        ("full scan: sum of all 22 columns",
         lambda d: d.selectExpr(*[f"sum(c{i})" for i in range(COLUMNS)], "sum(id)", "max(part)").collect()),
    ]


def _read_pairs(report: Report, queries: list[tuple[str, Callable[[Any], Any]]], ours: Callable[[], Any],
                baseline: Callable[[], Any], label: str, target: float, repeat: int) -> None:
    """Each query on ``ours()`` against the same query on ``baseline()``: a row each, named ``label, <query>``."""
    for name, query in queries:
        query(ours())  # unmeasured: the first plan of each kind compiles code
        query(baseline())
        ours_m, baseline_m = measure_pair(lambda q=query: q(ours()), lambda q=query: q(baseline()), repeat)
        ratio = paired_ratio(ours_m, baseline_m)
        first, second = ordered_ratios(ours_m, baseline_m)
        report.add(Row(f"{label}, {name}", seconds(ours_m), seconds(baseline_m), ratio, f"<= {target}x",
                       ratio <= target, f"{repeat} paired runs: median ratio {first:.2f}x with ours first, "
                       f"{second or first:.2f}x second; ratio of the bests {ours_m.best / baseline_m.best:.2f}x"))


def _planning(report: Report, label: str, ours: Callable[[], Any], baseline: Callable[[], Any], repeat: int,
              target: float) -> None:
    """A query from the table's name to its physical plan, where a session catalog's cost per query
    lies (the reading is Spark's own): many short runs, so that a difference of a few per cent shows."""
    def plan(table: Callable[[], Any]) -> Callable[[], Any]:
        return lambda: table().where("part = '3'").selectExpr("sum(c0)")._jdf.queryExecution().executedPlan()

    for _ in range(20):  # unmeasured: the planner's code is compiled first
        plan(ours)()
        plan(baseline)()
    ours_m, baseline_m = measure_pair(plan(ours), plan(baseline), repeat)
    ratio = ours_m.median / baseline_m.median
    report.add(Row(label, f"median {ours_m.median * 1000:.1f} ms", f"median {baseline_m.median * 1000:.1f} ms", ratio,
                   f"<= {target}x", ratio <= target, f"ratio of the medians of {repeat} runs each"))


def _writes(report: Report, spark: Any, repeat: int) -> None:
    spark.sql("CREATE TABLE db.w USING sleeper PARTITIONED BY (part) AS SELECT * FROM global_temp.bench_source LIMIT 0")
    spark.sql("CREATE TABLE lake.db.w2 USING sleeper PARTITIONED BY (part) "
              "AS SELECT * FROM global_temp.bench_source LIMIT 0")

    def by_session() -> None:
        spark.sql("INSERT INTO db.w SELECT * FROM global_temp.bench_source")

    def by_lake() -> None:
        spark.sql("INSERT INTO lake.db.w2 SELECT * FROM global_temp.bench_source")

    by_session()  # one of each first, unmeasured
    by_lake()
    session_m, lake_m = measure_pair(by_session, by_lake, repeat)
    ratio = paired_ratio(session_m, lake_m)
    report.add(Row("session catalog INSERT INTO vs the lake catalog's, the same rows", seconds(session_m),
                   seconds(lake_m), ratio, "<= 1.05x", ratio <= 1.05,
                   f"{repeat} paired runs (order-balanced median ratio); ratio of the bests "
                   f"{session_m.best / lake_m.best:.2f}x"))
