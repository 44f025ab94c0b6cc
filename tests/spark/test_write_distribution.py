"""Optimized writes (``write.distribution``): rows spread over many tasks make one file per
partition value, clustered writes lay each file out along the curve, and the rows are the rows."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql import SparkSession

import sleeper_spark as ss
from sleeper_spark.datafiles.curves import sort_by_curve

SCHEMA = pa.schema([("day", pa.int32()), ("id", pa.int64()), ("x", pa.int64()), ("y", pa.int64())])
ROWS = 600
DAYS = 5
TASKS = 8


def spread_rows(spark: SparkSession) -> tuple[object, list[tuple[int, int, int, int]]]:
    """``ROWS`` rows over ``DAYS`` partition values, in ``TASKS`` tasks that each hold every value;
    and the rows themselves, the truth a read is compared with."""
    truth = [(i % DAYS, i, (i * 7919) % 1000, (i * 104729) % 997) for i in range(ROWS)]
    df = spark.createDataFrame(truth, "day int, id long, x long, y long").repartition(TASKS)
    return df, truth


def rows_of(table: ss.Table) -> list[tuple[int, int, int, int]]:
    data = table.scan()
    return sorted(zip(*(data.column(c).to_pylist() for c in SCHEMA.names), strict=True))


def files_per_day(table: ss.Table) -> dict[str, int]:
    counts: dict[str, int] = {}
    for file in table.files():
        counts[file.partition["day"]] = counts.get(file.partition["day"], 0) + 1
    return counts


@pytest.mark.parametrize("distribution", ["none", "partition", "clustered"])
def test_a_write_from_many_tasks_makes_one_file_a_partition_value_when_distributed(
        spark: SparkSession, catalog: ss.Catalog, io_path: str, distribution: str) -> None:
    # Given a partitioned table with the distribution, and rows spread over 8 tasks
    properties = {"write.distribution": distribution, "clustering.columns": '["x","y"]'}
    table = catalog.create_table("t", SCHEMA, partition_by=["day"], properties=properties)
    df, truth = spread_rows(spark)
    # When they are written
    table.write(df)
    # Then the rows are exactly the rows
    assert rows_of(table) == sorted(truth)
    # And as written as they came, each task wrote a file a partition value; distributed, one a value
    counts = files_per_day(table)
    assert sorted(counts) == [str(d) for d in range(DAYS)]
    if distribution == "none":
        assert set(counts.values()) == {TASKS}, counts
    else:
        assert set(counts.values()) == {1}, counts


def test_a_clustered_write_lays_each_file_out_along_the_curve(spark: SparkSession, catalog: ss.Catalog,
                                                              io_path: str) -> None:
    # Given an unpartitioned table clustered by (x, y) with clustered writes
    table = catalog.create_table("t", SCHEMA, cluster_by=["x", "y"], properties={"write.distribution": "clustered"})
    df, truth = spread_rows(spark)
    # When rows in 8 tasks are written
    table.write(df)
    # Then each file (one task's rows) holds its rows in curve order over (x, y), not as they came
    assert rows_of(table) == sorted(truth)
    for file in table.files():
        with table.store.open_input(f"{table.root}/{file.path}") as source:
            data = pq.read_table(source, columns=["x", "y"])
        assert data.num_rows > 1
        assert data.to_pylist() == sort_by_curve(data, ["x", "y"]).to_pylist(), file.path


def test_sql_inserts_follow_the_table_property(spark: SparkSession, lake: ss.Catalog) -> None:
    spark.sql("CREATE TABLE lake.k (day INT, id BIGINT) USING sleeper PARTITIONED BY (day) "
              "TBLPROPERTIES ('write.distribution' = 'partition')")
    spark.sql(f"INSERT INTO lake.k SELECT /*+ REPARTITION({TASKS}) */ CAST(id % {DAYS} AS INT), id FROM range({ROWS})")
    table = lake.table("k")
    assert set(files_per_day(table).values()) == {1}
    assert spark.sql("SELECT count(*), count(DISTINCT id) FROM lake.k").first() == (ROWS, ROWS)


def test_a_distribution_it_does_not_know_is_refused_and_nothing_changes(catalog: ss.Catalog) -> None:
    table = catalog.create_table("t", SCHEMA, partition_by=["day"])
    version = table.head.catch_up().version
    with pytest.raises(ss.ConfigError, match=r"write\.distribution is one of none, partition, clustered"):
        table.set_properties({"write.distribution": "hash"})
    with pytest.raises(ss.ConfigError, match=r"write\.distribution"):
        catalog.create_table("u", SCHEMA, properties={"write.distribution": "range"})
    assert table.head.catch_up().version == version and "u" not in catalog.tables()
