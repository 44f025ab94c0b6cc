"""The helper read on Spark's own Parquet reader: the same rows as the Python source, fewer files read."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from chispa import assert_df_equality
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

import sleeper_spark as ss
from sleeper_spark.process_state import OnceSet
from sleeper_spark.spark.common import jvm
from sleeper_spark.spark.common.jvm import NATIVE_CONF, native_entry
from tests.spark.test_partitions import AWKWARD
from tests.spark.test_roundtrip import ALL_TYPES, all_types_rows, maps_by_id, without_maps

pytestmark = pytest.mark.spark


def python_source(spark: SparkSession, catalog: ss.Catalog, table: str, version: int | None = None) -> DataFrame:
    """The table through the Python data source: loaded while the session is switched off the jar
    (a load fixes its route), as a session without the jar reads it."""
    reader = spark.read.format("sleeper").options(**catalog.options())
    if version is not None:
        reader = reader.option("versionAsOf", version)
    spark.conf.set(NATIVE_CONF, "false")
    try:
        loaded = reader.load(table)
    finally:
        spark.conf.unset(NATIVE_CONF)
    entry = native_entry(spark)
    assert entry is not None and entry.indexOf(loaded._jdf) is None  # not Spark's reader
    return loaded


def listed_files(entry: Any, df: DataFrame) -> int:
    """How many files the table's file index handed Spark for the last query planned on ``df``."""
    return int(entry.indexOf(df._jdf).lastListedFiles())


def test_the_plan_is_spark_parquet_scan(spark: SparkSession, catalog: ss.Catalog, entry: Any) -> None:
    catalog.write(spark.range(10), "t")

    df = catalog.read(spark, "t")

    plan = df._jdf.queryExecution().executedPlan().toString()
    assert "FileScan parquet" in plan and "SleeperFileIndex" in plan


def test_every_type_reads_as_the_python_source_reads_it(spark: SparkSession, catalog: ss.Catalog,
                                                        entry: Any) -> None:
    first = spark.createDataFrame(all_types_rows(0, 50), ALL_TYPES).repartition(2)
    catalog.write(first, "typed", partition_by=["tiny", "flag"])
    v2 = catalog.table("typed").latest()
    catalog.write(spark.createDataFrame(all_types_rows(50, 30), ALL_TYPES), "typed")

    for version in (None, v2.version):
        native = catalog.read(spark, "typed", version=version)
        python = python_source(spark, catalog, "typed", version)
        assert native.schema == ALL_TYPES
        assert_df_equality(without_maps(native), without_maps(python), ignore_row_order=True)
        assert maps_by_id(native) == maps_by_id(python)
    assert catalog.read(spark, "typed", timestamp=v2.committed_at).count() == 50


def test_partition_filters_are_applied_by_the_index(spark: SparkSession, catalog: ss.Catalog, entry: Any) -> None:
    rows = [(value, i % 3, i) for i, value in enumerate(AWKWARD * 3)]
    df = spark.createDataFrame(rows, "key string, bucket int, n long")
    catalog.write(df, "t", partition_by=["key", "bucket"])
    native = catalog.read(spark, "t")
    python = python_source(spark, catalog, "t")
    files = catalog.table("t").files()

    for predicate, wanted in [
        ("key = 'a/b'", lambda p: p["key"] == "a/b"),
        ("key is null", lambda p: p["key"] is None),
        ("key in ('..', 'x=y') and bucket = 1", lambda p: p["key"] in ("..", "x=y") and p["bucket"] == "1"),
        ("key > 'v' or bucket < 1", lambda p: (p["key"] is not None and p["key"] > "v") or p["bucket"] == "0"),
        ("coalesce(key, 'none') = 'none'", lambda p: p["key"] is None),
    ]:
        result = native.where(predicate)
        assert_df_equality(result, python.where(predicate), ignore_row_order=True)
        assert listed_files(entry, result) == sum(1 for f in files if wanted(f.partition)), predicate


def test_min_max_statistics_skip_files(spark: SparkSession, catalog: ss.Catalog, entry: Any) -> None:
    columns = ("id", "'s' || lpad(id, 4, '0') as s", "cast(id / 10.0 as double) as d", "if(id < 500, null, id) as maybe")
    for start in range(0, 1000, 100):  # ten appends, one file each: ids 0-99, 100-199, ...
        catalog.write(spark.range(start, start + 100, numPartitions=1).selectExpr(*columns), "t")
    native = catalog.read(spark, "t")
    truth = spark.range(0, 1000, numPartitions=1).selectExpr(*columns)  # the same rows, in no file

    for predicate, files in [
        ("id = 250", 1), ("id < 100", 1), ("id <= 100", 2), ("350 > id", 4), ("id >= 900", 1),
        ("id in (5, 995)", 2), ("s = 's0420'", 1), ("s > 's0899'", 1), ("d < 10", 1),
        ("d > 95", 10),  # NaN sorts above every number and is kept out of the statistics: no skipping
        ("maybe is null", 5), ("maybe is not null", 5), ("id = 5 or id = 995", 2), ("id < 100 and s > 's0050'", 1),
        ("id + 1 = 10", 10), ("not (id = 5)", 10),
    ]:
        result = native.where(predicate)
        assert_df_equality(result, truth.where(predicate), ignore_row_order=True, ignore_nullable=True)
        assert listed_files(entry, result) == files, predicate


def scan_metric(df: DataFrame, name: str) -> int:
    """The sum of Spark's own scan metric ``name`` (``numFiles`` is the Spark UI's "number of files
    read") over the scans of the last run of ``df``'s plan, adaptive stages included."""
    total, nodes = 0, [df._jdf.queryExecution().executedPlan()]
    while nodes:
        node = nodes.pop()
        if node.nodeName() == "AdaptiveSparkPlan":
            nodes.append(node.executedPlan())
            continue
        if node.getClass().getSimpleName().endswith("QueryStageExec"):
            nodes.append(node.plan())
            continue
        if node.metrics().contains(name):
            total += int(node.metrics().apply(name).value())
        children = node.children()
        nodes.extend(children.apply(i) for i in range(children.size()))
    return total


def test_skipped_files_show_in_spark_s_own_metric_and_in_explain(spark: SparkSession, catalog: ss.Catalog) -> None:
    # Given ten files of 100 ids each
    for start in range(0, 1000, 100):
        catalog.write(spark.range(start, start + 100, numPartitions=1), "t")
    # When a query selects ids of one file, and another reads every row
    selective = catalog.read(spark, "t").where("id = 250")
    everything = catalog.read(spark, "t").where("id >= 0")
    assert len(selective.collect()) == 1 and len(everything.collect()) == 1000
    # Then Spark's own "number of files read" (the Spark UI's) counts one file against ten
    assert (scan_metric(selective, "numFiles"), scan_metric(everything, "numFiles")) == (1, 10)
    # and the plan EXPLAIN prints names the filter handed to the scan
    explained = selective._jdf.queryExecution().explainString(
        spark._jvm.org.apache.spark.sql.execution.ExplainMode.fromString("simple"))
    assert "PushedFilters: [EqualTo(id,250)]" in explained, explained


def test_an_empty_table_reads_as_its_schema(spark: SparkSession, catalog: ss.Catalog, entry: Any) -> None:
    catalog.create_table("empty", ALL_TYPES, partition_by=["flag"])

    df = catalog.read(spark, "empty")

    assert df.schema == ALL_TYPES
    assert df.count() == 0
    assert df.where(F.col("flag")).count() == 0


def test_a_null_partition_value_reads_as_null(spark: SparkSession, catalog: ss.Catalog, entry: Any) -> None:
    df = spark.createDataFrame([(1, None), (2, "x"), (3, None)], "n long, key string")
    catalog.write(df, "t", partition_by=["key"])

    assert_df_equality(catalog.read(spark, "t").where("key is null"), df.where("key is null"), ignore_row_order=True)


def test_the_jar_ships_inside_the_package(entry: Any) -> None:
    assert ss.jar_path().endswith(f"sleeper-spark-{ss.__version__}.jar")
    assert entry.version() == ss.__version__


def test_a_session_without_the_jar_says_once_how_to_get_it(caplog: pytest.LogCaptureFixture,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    class NoJvm:
        """What a Spark Connect session looks like to the helper: no py4j gateway."""

    monkeypatch.setattr(jvm, "SAID_ONCE", OnceSet())  # as in a new process
    with caplog.at_level(logging.INFO, logger="sleeper_spark.spark.common.jvm"):
        assert native_entry(NoJvm()) is None
        assert native_entry(NoJvm()) is None
    assert len(caplog.records) == 1 and "jar_path()" in caplog.records[0].getMessage()


def test_a_temp_view_serves_sql(spark: SparkSession, catalog: ss.Catalog) -> None:
    catalog.write(spark.range(10).selectExpr("id", "id % 2 as p"), "my-table.v1")
    catalog.write(spark.range(10, 14).selectExpr("id", "id % 2 as p"), "my-table.v1")
    table = catalog.table("my-table.v1")

    name = table.create_temp_view(spark)
    older = table.create_temp_view(spark, "older", version=2)

    assert name == "my_table_v1" and older == "older"
    assert spark.sql(f"select count(*) from {name} where p = 1").first()[0] == 7
    assert spark.sql("select max(id) from older").first()[0] == 9


def test_the_warehouse_scheme_decides_the_path(monkeypatch: pytest.MonkeyPatch) -> None:
    class Conf:
        def __init__(self, values: dict[str, str]) -> None:
            self.values = values

        def get(self, key: str, default: str = "") -> str:
            return self.values.get(key, default)

    class Session:
        def __init__(self, values: dict[str, str] | None = None) -> None:
            self.conf = Conf(values or {})
            self._jsparkSession = None

    class Entry:
        def __init__(self, *schemes: str) -> None:
            self.schemes = schemes

        def hasFileSystem(self, session: object, scheme: str) -> bool:
            return scheme in self.schemes

    monkeypatch.setattr(jvm, "SAID_ONCE", OnceSet())  # as in a new process
    assert jvm.hadoop_location(Session(), Entry(), "/tmp/w/t", None) == "file:/tmp/w/t"
    assert jvm.hadoop_location(Session(), Entry("s3", "s3a"), "s3://b/w/t", None) == "s3://b/w/t"  # EMR
    assert jvm.hadoop_location(Session(), Entry("s3a"), "s3://b/w/t", None) == "s3a://b/w/t"  # hadoop-aws
    assert jvm.hadoop_location(Session(), Entry(), "s3://b/w/t", None) is None  # no connector: Python source
    assert jvm.hadoop_location(Session(), Entry("s3a"), "s3://b/w/t", "http://127.0.0.1:9000") is None
    endpoint = Session({"spark.hadoop.fs.s3a.endpoint": "http://127.0.0.1:9000"})
    assert jvm.hadoop_location(endpoint, Entry("s3a"), "s3://b/w/t", "http://127.0.0.1:9000") == "s3a://b/w/t"
