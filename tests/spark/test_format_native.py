"""format("sleeper") in a session with the jar: Spark's own Parquet reader and writer, the log in Python.

Each read and write here is checked against what the helper API or the raw rows give, and each
claim that the native path was taken is checked on the plan (the table's file index) or on where
the files landed (Spark's write directory), not assumed.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from chispa import assert_df_equality
from pyspark.sql import DataFrame, SparkSession

import sleeper_spark as ss
from sleeper_spark.spark.common.jvm import NATIVE_CONF
from tests.fixtures.spark import spark_environment
from tests.spark.test_roundtrip import ALL_TYPES, all_types_rows, maps_by_id, without_maps

pytestmark = pytest.mark.spark


def load(spark: SparkSession, catalog: ss.Catalog, name: str, **options: Any) -> DataFrame:
    return spark.read.format("sleeper").options(**catalog.options()).options(**options).load(name)


def listed_files(entry: Any, df: DataFrame) -> int:
    return int(entry.indexOf(df._jdf).lastListedFiles())


def spark_written(table: ss.Table) -> bool:
    """Whether every live file came from Spark's own writer (its files live under data/spark-<write id>/)."""
    return all(f.path.startswith("data/spark-") for f in table.files())


def test_a_load_is_a_parquet_scan_over_the_tables_file_index(spark: SparkSession, catalog: ss.Catalog,
                                                             entry: Any) -> None:
    catalog.write(spark.range(10), "t")

    df = load(spark, catalog, "t")

    plan = df._jdf.queryExecution().executedPlan().toString()
    assert "FileScan parquet" in plan and "SleeperFileIndex" in plan
    assert str(entry.indexOf(df._jdf)) == "sleeper:t@2"


def test_every_type_reads_as_the_helper_reads_it(spark: SparkSession, catalog: ss.Catalog, entry: Any) -> None:
    df = spark.createDataFrame(all_types_rows(0, 50), ALL_TYPES).repartition(2)
    catalog.write(df, "typed", partition_by=["tiny", "flag"])

    back = load(spark, catalog, "typed")

    assert entry.indexOf(back._jdf) is not None
    assert back.schema == ALL_TYPES
    assert_df_equality(without_maps(back), without_maps(df), ignore_row_order=True)
    assert maps_by_id(back) == maps_by_id(df)


def test_each_query_on_one_loaded_dataframe_is_pruned_for_itself(spark: SparkSession, catalog: ss.Catalog,
                                                                 entry: Any) -> None:
    # Given 8 files, one per partition value, and one DataFrame loaded once
    rows = spark.range(80).selectExpr("id", "cast(id % 8 as string) as part").repartition(8, "part")
    catalog.write(rows, "t", partition_by=["part"])
    df = load(spark, catalog, "t")

    # Then each query lists only its own partition's files and still gets every matching row:
    # the Python source reuses one read plan per loaded DataFrame, this path plans per query
    assert df.where("part = '3'").count() == 10
    assert listed_files(entry, df) == 1
    assert df.where("part = '5' or part = '6'").count() == 20
    assert listed_files(entry, df) == 2
    assert df.where("id >= 40 and id < 42").count() == 2
    assert df.count() == 80
    assert listed_files(entry, df) == 8


def test_time_travel_options_select_the_version(spark: SparkSession, catalog: ss.Catalog, entry: Any) -> None:
    first = catalog.write(spark.range(10), "t")
    second = catalog.write(spark.range(5), "t")

    assert load(spark, catalog, "t").count() == 15
    by_version = load(spark, catalog, "t", versionAsOf=first.version)
    assert str(entry.indexOf(by_version._jdf)) == f"sleeper:t@{first.version}"
    assert by_version.count() == 10
    assert load(spark, catalog, "t", timestampAsOf=second.committed_at.isoformat()).count() == 15


def test_a_save_is_spark_written_and_one_snapshot_with_its_options(spark: SparkSession,
                                                                   catalog: ss.Catalog) -> None:
    df = spark.range(40).selectExpr("id", "cast(id % 4 as string) as day").repartition(4)

    (df.write.format("sleeper").options(**catalog.options()).partitionBy("day").option("metadata.job", "nightly")
     .option("app_id", "loader").option("app_version", 7).save("events"))
    (df.write.format("sleeper").options(**catalog.options()).option("app_id", "loader").option("app_version", 7)
     .mode("append").save("events"))  # the same app version again: skipped

    table = catalog.table("events")
    assert table.partition_by == ("day",)  # Spark's partitionBy() made the table's partitioning
    assert [s.operation for s in table.history()] == ["append"]
    latest = table.latest()
    assert (latest.version, latest.rows_added, latest.metadata) == (2, 40, {"job": "nightly"})
    assert spark_written(table)
    assert_df_equality(catalog.read(spark, "events"), df.select("id", "day"), ignore_row_order=True)


def test_save_modes_behave_as_spark_documents_them(spark: SparkSession, catalog: ss.Catalog) -> None:
    def save(mode: str | None, rows: int) -> None:
        writer = spark.range(rows).write.format("sleeper").options(**catalog.options())
        (writer.mode(mode) if mode else writer).save("t")

    save(None, 3)  # errorifexists (Spark's default) creates a missing table
    with pytest.raises(Exception) as raised:
        save(None, 4)
    typed = ss.sleeper_error(raised.value)
    assert isinstance(typed, ss.TableAlreadyExistsError) and "errorifexists" in str(typed)
    assert str(raised.value).startswith("sleeper_spark.errors.TableAlreadyExistsError: table 't' exists")
    save("ignore", 5)
    assert catalog.table("t").latest().version == 2  # ignored: nothing committed
    save("append", 6)
    save("overwrite", 7)
    table = catalog.table("t")
    assert [s.operation for s in table.history()] == ["append", "append", "overwrite"]
    assert table.scan().num_rows == 7 and spark_written(table)


def test_errors_come_back_message_first_and_typed(spark: SparkSession, catalog: ss.Catalog) -> None:
    catalog.write(spark.range(3).selectExpr("id", "'a' as p"), "t", partition_by=["p"])
    cases: list[tuple[Any, type[ss.SleeperSparkError], str]] = [
        (lambda: load(spark, catalog, "nope"), ss.TableNotFoundError, "no table 'nope' in "),
        (lambda: load(spark, catalog, "t", colour="red"), ss.ConfigError, "unknown sleeper option 'colour'"),
        (lambda: load(spark, catalog, "t", versionAsOf=9), ss.SnapshotNotFoundError,
         "table 't' has no snapshot with version 9"),
        (lambda: spark.range(3).selectExpr("id", "'a' as p").write.format("sleeper").options(**catalog.options())
         .partitionBy("id").mode("append").save("t"), ss.ConfigError, "table 't' is partitioned by ['p']"),
        (lambda: spark.range(3).selectExpr("'x' as id", "'a' as p").write.format("sleeper")
         .options(**catalog.options()).mode("append").save("t"), ss.SchemaMismatchError,
         "the data does not fit table 't': column 'id' is string"),
    ]
    for action, error, start in cases:
        with pytest.raises(Exception) as raised:
            action()
        typed = ss.sleeper_error(raised.value)
        assert isinstance(typed, error) and str(typed).startswith(start), (typed, str(raised.value)[:500])
        assert "Traceback" not in str(raised.value)
    assert catalog.table("t").latest().version == 2  # no refused write committed anything


def test_a_sql_view_over_the_source_reads_natively(spark: SparkSession, catalog: ss.Catalog, entry: Any) -> None:
    catalog.write(spark.range(30).selectExpr("id", "cast(id % 3 as string) as part"), "t", partition_by=["part"])
    options = ", ".join(f"{key} '{value}'" for key, value in catalog.options().items())

    spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW sleeper_view USING sleeper OPTIONS (path 't', {options})")
    try:
        filtered = spark.sql("SELECT count(*) AS n FROM sleeper_view WHERE part = '1'")
        assert filtered.collect()[0]["n"] == 10
        assert "SleeperFileIndex" in filtered._jdf.queryExecution().executedPlan().toString()
    finally:
        spark.catalog.dropTempView("sleeper_view")


def test_a_session_switched_off_the_jar_runs_the_python_source(spark: SparkSession, catalog: ss.Catalog,
                                                               entry: Any) -> None:
    catalog.write(spark.range(10), "t")
    spark.conf.set(NATIVE_CONF, "false")
    try:
        df = load(spark, catalog, "t")
        assert entry.indexOf(df._jdf) is None
        assert df.count() == 10
        spark.range(4).write.format("sleeper").options(**catalog.options()).mode("append").save("t")
    finally:
        spark.conf.unset(NATIVE_CONF)
    table = catalog.table("t")
    assert table.scan().num_rows == 14 and not spark_written(table)


def test_the_format_survives_a_stopped_session_and_a_new_one(tmp_path: Path) -> None:
    # A process that stops its session and builds another keeps one JVM, which keeps the bridge
    done = subprocess.run([sys.executable, str(Path(__file__).with_name("format_restart_job.py")),
                           str(tmp_path / "warehouse")], capture_output=True, text=True, timeout=600,
                          env=spark_environment(tmp_path))
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.splitlines() == ["count 3 native True", "count 6 native True"]
