"""Helper reads without the jar on the folders Spark's own writer makes: named by partition value
through hidden columns, a level per partition column, so Spark's partition discovery finds them and
a filter on a partition column skips folders; values no folder can carry are hashed and read
exactly, unpruned. Run on the local classic session, whose ``spark.read`` is a Connect server's."""

from __future__ import annotations

import pyarrow as pa
import pytest
from pyspark.sql import SparkSession

import sleeper_spark as ss
from sleeper_spark.spark.common.jvm import NATIVE_CONF
from sleeper_spark.spark.connect.connect_read import read_parquet
from sleeper_spark.spark.connect.parquet_scan import parquet_scan
from tests.spark.test_parquet_scan import SPARK_NAME, _plan, _rows, _scan_of, _truth, parquet_reads

__all__ = ["parquet_reads"]


def test_spark_writer_folders_named_by_value_give_spark_the_hidden_partition_column() -> None:
    paths = [f"data/spark-w{w}/__sleeper_partition={folder}/{SPARK_NAME.format(0)}"
             for w, folder in ((1, "a%2Fb"), (1, "__HIVE_DEFAULT_PARTITION__"), (2, "a%2Fb"))]
    scan = parquet_scan("file:/w/t", paths, {"part": ["a/b", None, "a/b"]}, {"part": "string"})
    assert scan.folder_columns == {"part": "__sleeper_partition"}
    assert scan.options["basePath"] == "file:/w/t/data" and scan.options["ignoreInvalidPartitionPaths"] == "true"
    assert "recursiveFileLookup" not in scan.options


@pytest.mark.parametrize(("folder", "value"), [("__hash_-1234", "V" * 70), ("a%2F", "a/b"), ("a%2", "a%2"),
                                               ("x", "y"), ("__HIVE_DEFAULT_PARTITION__", "__HIVE_DEFAULT_PARTITION__")])
def test_spark_writer_folders_that_do_not_read_back_as_the_value_give_no_partitions(folder: str, value: str) -> None:
    # a hash, a value cut short, a "%" Spark's writer would have escaped, another value, null for text
    path = f"data/spark-w1/__sleeper_partition={folder}/{SPARK_NAME.format(0)}"
    scan = parquet_scan("file:/w/t", [path], {"part": [value]}, {"part": "string"})
    assert (scan.folder_columns, scan.options["recursiveFileLookup"]) == ({}, "true")
    assert not scan.partitions_from_folders and "basePath" not in scan.options


@pytest.mark.spark
@pytest.mark.parametrize("kept_by", ["path", "files handed over"])
def test_spark_written_partitions_prune_folders_by_value_and_read_exactly_the_version(
        spark: SparkSession, catalog: ss.Catalog, parquet_reads: None, kept_by: str) -> None:
    spark.conf.unset(NATIVE_CONF)
    # Given values Spark's writer names folders by (escaped, null) over three writes, one overwriting
    # a partition (so names cannot tell the version's files); a space makes Spark's file URIs
    # unsure, and the files are then handed over one by one
    values = ["a/b", "x=y", "100%", None, "plain", "%2f", *(["with space"] if kept_by != "path" else [])]
    source = spark.createDataFrame([(i, values[i % len(values)]) for i in range(70)], "id long, part string")
    catalog.write(source.repartition(2), "by_value", partition_by=["part"])
    catalog.write(source.where("id < 20"), "by_value")
    table = catalog.table("by_value")
    table.delete_where(spark, f"part = 'plain' AND id = {values.index('plain')}")
    assert all("/__sleeper_partition=" in f.path and "__hash_" not in f.path for f in table.files())

    back = read_parquet(table, spark, None)

    # Then the rows are the version's, and a filter on the partition column prunes folders
    assert back is not None and back.columns == ["id", "part"] and _rows(back) == _truth(table)
    scan = _scan_of(table, spark)
    assert scan.folder_columns == {"part": "__sleeper_partition"}
    assert (scan.file_paths is not None) == (kept_by == "path") and "pathGlobFilter" not in scan.options
    truth = table.scan().to_pylist()
    for value in values:
        picked = back.where("part IS NULL" if value is None else f"part = '{value}'")
        assert sorted(r.id for r in picked.collect()) == sorted(r["id"] for r in truth if r["part"] == value)
        assert "PartitionFilters: [" in _plan(picked) and "__sleeper_partition" in _plan(picked).split(
            "PartitionFilters: [", 1)[1].split("]", 1)[0]
    assert sorted(r.id for r in back.where("part > 'p' OR part IS NULL").collect()) == sorted(
        r["id"] for r in truth if r["part"] is None or r["part"] > "p")


@pytest.mark.spark
def test_spark_written_values_no_folder_can_name_are_hashed_and_read_exactly(
        spark: SparkSession, catalog: ss.Catalog, parquet_reads: None) -> None:
    spark.conf.unset(NATIVE_CONF)
    values = ["", "Upper", "v" * 80, "__hash_1", "__HIVE_DEFAULT_PARTITION__", "ünï", "dot.", "space ", "lower"]
    source = spark.createDataFrame([(i, values[i % len(values)]) for i in range(30)], "id long, part string")
    catalog.write(source, "hashed", partition_by=["part"])
    table = catalog.table("hashed")
    hashed = {f.partition["part"] for f in table.files() if "/__sleeper_partition=__hash_" in f.path}
    assert hashed == set(values) - {"lower"}

    back = read_parquet(table, spark, None)

    assert back is not None and _rows(back) == _truth(table)
    assert not _scan_of(table, spark).partitions_from_folders
    for value in values:
        assert sorted(r.id for r in back.where(f"part = '{value}'").collect()) == [
            i for i in range(30) if values[i % len(values)] == value]


@pytest.mark.spark
def test_typed_spark_written_partitions_prune_by_value(
        spark: SparkSession, catalog: ss.Catalog, parquet_reads: None) -> None:
    spark.conf.unset(NATIVE_CONF)
    for name, sql_type, value in (("ints", "int", "cast(id % 3 - 1 AS int)"),
                                  ("days", "date", "date_add(DATE'2024-01-30', cast(id % 3 AS int))"),
                                  ("flags", "boolean", "id % 2 = 0")):
        catalog.write(spark.range(30).selectExpr("id", f"{value} AS k"), name, partition_by=["k"])
        table = catalog.table(name)

        back = read_parquet(table, spark, None)

        assert back is not None and _rows(back) == _truth(table), name
        assert _scan_of(table, spark).partitions_from_folders, name
        first = sorted(table.scan().to_pylist(), key=lambda r: r["id"])[0]["k"]
        literal = {"int": str(first), "date": f"DATE'{first}'", "boolean": str(first).lower()}[sql_type]
        picked = back.where(f"k = {literal}")
        assert sorted(r.id for r in picked.collect()) == sorted(
            r["id"] for r in table.scan().to_pylist() if r["k"] == first), name
        assert "__sleeper_partition" in _plan(picked).split("PartitionFilters: [", 1)[1].split("]", 1)[0], name


def test_nested_spark_writer_folders_give_spark_a_hidden_column_per_partition_column() -> None:
    paths = [f"data/spark-w1/__sleeper_partition={a}/__sleeper_partition_1={b}/{SPARK_NAME.format(0)}"
             for a, b in (("1", "x%3Dy"), ("2", "__HIVE_DEFAULT_PARTITION__"))]
    scan = parquet_scan("file:/w/t", paths, {"k": ["1", "2"], "s": ["x=y", None]}, {"k": "int32", "s": "string"})
    assert scan.folder_columns == {"k": "__sleeper_partition", "s": "__sleeper_partition_1"}
    # the levels in another order, or one missing, are not the partitions
    swapped = [p.replace("__sleeper_partition=", "__x=").replace("__sleeper_partition_1=", "__sleeper_partition=")
               for p in paths]
    assert not parquet_scan("file:/w/t", swapped, {"k": ["1", "2"], "s": ["x=y", None]},
                            {"k": "int32", "s": "string"}).partitions_from_folders


@pytest.mark.spark
@pytest.mark.parametrize("writer", ["no-jar helper", "jar"])
def test_a_write_of_several_partition_columns_names_a_folder_level_each_and_reads_pruned(
        spark: SparkSession, catalog: ss.Catalog, parquet_reads: None, writer: str) -> None:
    from sleeper_spark.spark.connect.connect_write import WRITE_CONF, write_parquet

    # Given a table partitioned by a date, an int and a string, written twice by the no-jar helper
    # write, or by the jar's writer (the helper write of a classic session)
    table = catalog.create_table("nested", pa.schema([("id", pa.int64()), ("day", pa.date32()),
                                                      ("k", pa.int32()), ("s", pa.string())]),
                                 partition_by=["day", "k", "s"])
    rows = spark.range(60).selectExpr("id", "date_add(DATE'2024-02-28', cast(id % 3 AS int)) AS day",
                                      "cast(id % 2 AS int) AS k", "CASE WHEN id % 5 = 0 THEN NULL ELSE "
                                      "concat('v/', cast(id % 4 AS string)) END AS s")
    for chunk in ("id < 30", "id >= 30"):
        if writer == "jar":
            spark.conf.unset(NATIVE_CONF)
            catalog.write(rows.where(chunk), "nested")
            continue
        spark.conf.set(WRITE_CONF, "parquet")
        try:
            assert write_parquet(table, rows.where(chunk), table.state(), "append", {}, None, None) is not None
        finally:
            spark.conf.unset(WRITE_CONF)
    assert all(f.path.count("/__sleeper_partition") == 3 and "__hash_" not in f.path for f in table.files())
    assert table.verify().ok

    back = read_parquet(table, spark, None)

    # Then the read is the version's rows, and a filter on any partition column prunes folders by it
    assert back is not None and back.columns == ["id", "day", "k", "s"] and _rows(back) == _truth(table)
    assert _scan_of(table, spark).folder_columns == {"day": "__sleeper_partition", "k": "__sleeper_partition_1",
                                                     "s": "__sleeper_partition_2"}
    truth = table.scan().to_pylist()
    for condition, hidden, keep in (
            ("day = DATE'2024-03-01'", "__sleeper_partition", lambda r: str(r["day"]) == "2024-03-01"),
            ("k = 1 AND s = 'v/3'", "__sleeper_partition_2", lambda r: r["k"] == 1 and r["s"] == "v/3"),
            ("s IS NULL OR day < DATE'2024-02-29'", "__sleeper_partition",
             lambda r: r["s"] is None or str(r["day"]) < "2024-02-29")):
        picked = back.where(condition)
        assert sorted(r.id for r in picked.collect()) == sorted(r["id"] for r in truth if keep(r)), condition
        assert hidden in _plan(picked).split("PartitionFilters: [", 1)[1].split("]", 1)[0], condition
