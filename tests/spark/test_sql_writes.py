"""Writes through the SQL catalog that replace what is there: ``CREATE OR REPLACE``, ``REPLACE``,
``INSERT OVERWRITE`` of static and dynamic partitions, ``writeTo(...).overwrite`` and
``.overwritePartitions()``; each checked against the rows it must leave and the snapshots it
must commit."""

from __future__ import annotations

from typing import Any

import pytest
from pyspark.errors import AnalysisException
from pyspark.sql import SparkSession
from pyspark.sql.functions import col, lit

import sleeper_spark as ss
from tests.fixtures.sql_catalog import session_conf

pytestmark = pytest.mark.spark

ORDERS = "CREATE TABLE lake.db.t (id BIGINT, day STRING) USING sleeper PARTITIONED BY (day)"


def rows_of(lake: ss.Catalog, name: str = "db.t") -> list[tuple[Any, ...]]:
    return sorted(tuple(r.values()) for r in lake.table(name).scan().to_pylist())


def operations(lake: ss.Catalog, name: str = "db.t") -> list[str]:
    return [s.operation for s in lake.table(name).history()]


def test_create_or_replace_keeping_the_columns_is_one_overwrite_with_the_history_kept(
        spark: SparkSession, lake: ss.Catalog) -> None:
    # Given a table with one version
    spark.sql("CREATE TABLE lake.db.t USING sleeper PARTITIONED BY (day) TBLPROPERTIES ('k' = '1') "
              "AS SELECT 1L AS id, 'a' AS day")
    before = lake.table("db.t").latest().version

    # When it is replaced by rows with the same columns and one more
    spark.sql("CREATE OR REPLACE TABLE lake.db.t USING sleeper PARTITIONED BY (day) TBLPROPERTIES ('k' = '2') "
              "AS SELECT 2L AS id, 'b' AS day, 'x' AS note")

    # Then one overwrite snapshot holds the new rows and column, the properties follow, and the
    # version before is still readable
    assert rows_of(lake) == [(2, "b", "x")]
    assert operations(lake) == ["append", "overwrite", "properties"]
    assert lake.table("db.t").state().properties["k"] == "2"
    old = spark.sql(f"SELECT id FROM lake.db.t VERSION AS OF {before}").collect()
    assert [r["id"] for r in old] == [1]


def test_create_or_replace_that_retypes_a_column_is_refused_and_changes_nothing(spark: SparkSession,
                                                                               lake: ss.Catalog) -> None:
    spark.sql("CREATE TABLE lake.db.t USING sleeper AS SELECT 1L AS id")

    with pytest.raises(Exception) as raised:
        spark.sql("CREATE OR REPLACE TABLE lake.db.t USING sleeper AS SELECT 'one' AS id")

    assert isinstance(ss.sleeper_error(raised.value), ss.ConfigError)
    assert "DROP TABLE" in str(raised.value)
    assert rows_of(lake) == [(1,)]
    assert operations(lake) == ["append"]


def test_write_to_create_or_replace_twice_replaces_in_place(spark: SparkSession, lake: ss.Catalog) -> None:
    rows = spark.range(3).selectExpr("id", "'d' AS day")

    rows.writeTo("lake.db.t").partitionedBy(col("day")).createOrReplace()
    rows.where("id > 0").writeTo("lake.db.t").partitionedBy(col("day")).createOrReplace()

    assert rows_of(lake) == [(1, "d"), (2, "d")]
    assert operations(lake) == ["append", "overwrite"]


def test_replace_of_a_missing_table_is_table_not_found(spark: SparkSession, lake: ss.Catalog) -> None:
    with pytest.raises(AnalysisException, match="TABLE_OR_VIEW_NOT_FOUND"):
        spark.sql("REPLACE TABLE lake.db.nope USING sleeper AS SELECT 1L AS id")
    with pytest.raises(ss.TableNotFoundError):
        lake.table("db.nope")


def test_a_failed_replacement_leaves_the_table_as_it_was(spark: SparkSession, lake: ss.Catalog) -> None:
    spark.sql(ORDERS)
    spark.sql("INSERT INTO lake.db.t VALUES (1, 'a')")

    with pytest.raises(Exception, match="boom"):
        spark.sql("CREATE OR REPLACE TABLE lake.db.t USING sleeper PARTITIONED BY (day) AS "
                  "SELECT id, IF(id = 3, raise_error('boom'), 'x') AS day FROM range(5)")

    assert rows_of(lake) == [(1, "a")]
    assert operations(lake) == ["append"]


def test_insert_overwrite_of_a_static_partition(spark: SparkSession, lake: ss.Catalog) -> None:
    spark.sql(ORDERS)
    spark.sql("INSERT INTO lake.db.t VALUES (1, 'a'), (2, 'b'), (3, 'c')")

    spark.sql("INSERT OVERWRITE lake.db.t PARTITION (day = 'b') SELECT 20L AS id")

    assert rows_of(lake) == [(1, "a"), (3, "c"), (20, "b")]
    assert operations(lake) == ["append", "overwrite"]


def test_insert_overwrite_in_dynamic_mode_replaces_the_partitions_written(spark: SparkSession,
                                                                           lake: ss.Catalog) -> None:
    spark.sql(ORDERS)
    spark.sql("INSERT INTO lake.db.t VALUES (1, 'a'), (2, 'b'), (3, 'c')")

    with session_conf(spark, {"spark.sql.sources.partitionOverwriteMode": "dynamic",
                              **{k: v for k, v in ss.catalog_conf("lake", lake).items()}}):
        spark.sql("INSERT OVERWRITE lake.db.t VALUES (10, 'a'), (30, 'c')")

    assert rows_of(lake) == [(2, "b"), (10, "a"), (30, "c")]


def test_write_to_overwrite_by_condition_and_overwrite_partitions(spark: SparkSession, lake: ss.Catalog) -> None:
    spark.sql(ORDERS)
    spark.sql("INSERT INTO lake.db.t VALUES (1, 'a'), (2, 'b'), (3, 'c')")

    # writeTo(...).overwrite(condition): the partitions the condition selects, even those the rows miss
    spark.createDataFrame([(4, "a")], "id long, day string").writeTo("lake.db.t").overwrite(
        col("day").isin("a", "b"))
    assert rows_of(lake) == [(3, "c"), (4, "a")]

    # overwritePartitions(): the partitions the rows fall in
    spark.createDataFrame([(5, "c")], "id long, day string").writeTo("lake.db.t").overwritePartitions()
    assert rows_of(lake) == [(4, "a"), (5, "c")]

    # and a row outside the condition refuses the write, which commits nothing
    with pytest.raises(Exception) as raised:
        spark.createDataFrame([(6, "z")], "id long, day string").writeTo("lake.db.t").overwrite(lit(True) & (
            col("day") == "a"))
    assert isinstance(ss.sleeper_error(raised.value), ss.ConfigError)
    assert rows_of(lake) == [(4, "a"), (5, "c")]


def test_write_to_with_merge_schema_adds_the_columns_the_rows_bring(spark: SparkSession, lake: ss.Catalog) -> None:
    spark.sql(ORDERS)
    spark.sql("INSERT INTO lake.db.t VALUES (1, 'a')")
    rows = spark.createDataFrame([(2, "a", "x")], "id long, day string, note string")

    # Without the option Spark refuses the extra column; with it the column is added, then the rows written
    with pytest.raises(AnalysisException, match="INSERT_COLUMN_ARITY_MISMATCH"):
        rows.writeTo("lake.db.t").append()
    rows.writeTo("lake.db.t").option("mergeSchema", "true").append()

    assert rows_of(lake) == [(1, "a", None), (2, "a", "x")]
    assert operations(lake) == ["append", "schema", "append"]


def test_write_to_with_app_id_and_version_commits_once(spark: SparkSession, lake: ss.Catalog) -> None:
    spark.sql(ORDERS)
    rows = spark.createDataFrame([(1, "a")], "id long, day string")

    for _ in range(2):
        rows.writeTo("lake.db.t").option("app_id", "nightly").option("app_version", "7").append()

    assert rows_of(lake) == [(1, "a")]
    assert operations(lake) == ["append"]
