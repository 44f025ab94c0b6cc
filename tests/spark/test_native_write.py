"""The helper write on Spark's own Parquet writer: files either reader reads, verified, committed once."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pytest
from chispa import assert_df_equality
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

import sleeper_spark as ss
from sleeper_spark.spark.common.jvm import NATIVE_CONF
from tests.spark.conftest import data_files
from tests.spark.test_roundtrip import ALL_TYPES, all_types_rows, maps_by_id, without_maps

pytestmark = pytest.mark.spark

UTC = dt.timezone.utc


def python_path(spark: SparkSession) -> Any:
    """A context in which the helper uses the Python source, as a session without the jar does."""
    class Switch:
        def __enter__(self) -> None:
            spark.conf.set(NATIVE_CONF, "false")

        def __exit__(self, *exc: object) -> None:
            spark.conf.unset(NATIVE_CONF)

    return Switch()


@pytest.mark.usefixtures("entry")
def test_files_of_either_writer_read_alike_by_either_reader(spark: SparkSession, catalog: ss.Catalog) -> None:
    first = spark.createDataFrame(all_types_rows(0, 40), ALL_TYPES)
    second = spark.createDataFrame(all_types_rows(40, 40), ALL_TYPES)
    catalog.write(first, "t", partition_by=["day"])  # Spark's writer
    with python_path(spark):
        catalog.write(second, "t")  # the Python source's writer
    expected = first.union(second)

    native = catalog.read(spark, "t")
    with python_path(spark):
        python = catalog.read(spark, "t")
    for df in (native, python):
        assert_df_equality(without_maps(df), without_maps(expected), ignore_row_order=True)
        assert maps_by_id(df) == maps_by_id(expected)
    table = catalog.table("t")
    assert table.scan().num_rows == 80
    assert {f.partition["day"] for f in table.files()} == {r.day.isoformat() for r in expected.collect()}


@pytest.mark.usefixtures("entry")
def test_only_data_files_stay_and_verify_catches_damage(spark: SparkSession, catalog: ss.Catalog) -> None:
    df = spark.range(0, 1000, numPartitions=2).selectExpr("id", "cast(id % 3 as string) as part")
    snapshot = catalog.write(df, "t", partition_by=["part"])
    table = catalog.table("t")
    root = Path(catalog.config.warehouse) / table.root
    written = {str(p.relative_to(root)) for p in (root / "data").rglob("*") if p.is_file()}

    assert written == {f.path for f in table.files()} and snapshot.files_added == len(written) == 6
    assert table.verify().problems == ()
    first, second = sorted(table.files(), key=lambda f: f.path)[:2]
    (root / first.path).write_bytes((root / first.path).read_bytes()[:-10])  # truncated
    damaged = bytearray((root / second.path).read_bytes())
    damaged[len(damaged) // 2] ^= 0xFF
    (root / second.path).write_bytes(bytes(damaged))
    problems = {p.path: p.problem for p in table.verify().problems}
    assert problems == {first.path: "size", second.path: "checksum"}


@pytest.mark.usefixtures("entry")
def test_a_failed_job_leaves_no_files(spark: SparkSession, catalog: ss.Catalog) -> None:
    catalog.write(spark.range(10), "t")
    before = data_files(catalog, "t")
    bad = spark.range(0, 10_000, numPartitions=4).withColumn(
        "id", F.when(F.col("id") == 9_000, F.raise_error(F.lit("bad row"))).otherwise(F.col("id")))

    with pytest.raises(Exception, match="bad row"):
        catalog.write(bad, "t")

    assert data_files(catalog, "t") == before
    assert [s.version for s in catalog.table("t").history()] == [2]


@pytest.mark.usefixtures("entry")
def test_nulls_in_a_required_column_are_refused(spark: SparkSession, catalog: ss.Catalog) -> None:
    schema = T.StructType([T.StructField("id", T.LongType(), False)])
    catalog.create_table("t", schema)
    with_null = spark.createDataFrame([(1,), (None,)], "id long")

    with pytest.raises(ss.SchemaMismatchError, match="not nullable"):
        catalog.write(with_null, "t")

    assert catalog.table("t").history() == [] and data_files(catalog, "t") == set()


@pytest.mark.usefixtures("entry")
def test_event_time_overwrite_and_int96_sessions(spark: SparkSession, catalog: ss.Catalog) -> None:
    schema = T.StructType([T.StructField("n", T.LongType()), T.StructField("at", T.TimestampType())])
    catalog.create_table("t", schema, event_time_column="at")
    start = dt.datetime(2024, 5, 1, tzinfo=UTC)
    df = spark.createDataFrame([(i, start + dt.timedelta(minutes=i)) for i in range(30)], schema)
    catalog.write(df, "t")
    before = spark.conf.get("spark.sql.parquet.outputTimestampType")
    spark.conf.set("spark.sql.parquet.outputTimestampType", "INT96")
    try:
        latest = catalog.write(df.where("n >= 10"), "t", mode="overwrite", metadata={"job": "x"})
        assert spark.conf.get("spark.sql.parquet.outputTimestampType") == "INT96"  # restored
    finally:
        spark.conf.set("spark.sql.parquet.outputTimestampType", str(before))

    assert (latest.operation, latest.rows_removed, latest.rows_added) == ("overwrite", 30, 20)
    assert latest.metadata == {"job": "x"}
    assert (latest.min_event_time, latest.max_event_time) == (start + dt.timedelta(minutes=10),
                                                             start + dt.timedelta(minutes=29))
    assert_df_equality(catalog.read(spark, "t"), df.where("n >= 10"), ignore_row_order=True)


@pytest.mark.usefixtures("entry")
def test_vacuum_removes_what_a_killed_spark_job_left(spark: SparkSession, catalog: ss.Catalog) -> None:
    catalog.write(spark.range(0, 100, numPartitions=2).selectExpr("id", "cast(id % 2 as string) as p"), "t",
                  partition_by=["p"])
    table = catalog.table("t")
    root = Path(catalog.config.warehouse) / table.root
    dead = root / "data" / "spark-0123456789abcdef" / "_temporary" / "0" / "__sleeper_partition=42"
    dead.mkdir(parents=True)
    source = root / table.files()[0].path
    (dead / "part-00000-x.c000.snappy.parquet").write_bytes(source.read_bytes())  # what a killed job left

    report = table.vacuum(older_than=dt.timedelta(0))

    assert report.data_files_deleted == 1
    assert not (dead / "part-00000-x.c000.snappy.parquet").exists()
    assert table.verify().problems == () and table.scan().num_rows == 100
