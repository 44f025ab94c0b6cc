"""Schema evolution through Spark: every Spark read path reads old files under the new schema, and
Spark writes merge their schema; each run on Spark's own reader and writer and on the Python source."""

from __future__ import annotations

import decimal

import pyarrow as pa
import pytest
from pyspark.sql import SparkSession

import sleeper_spark as ss

pytestmark = [pytest.mark.spark, pytest.mark.usefixtures("io_path")]

SCHEMA = pa.schema([("day", pa.string()), ("id", pa.int32()), ("small", pa.int8()), ("name", pa.string()),
                    ("score", pa.float32()), ("price", pa.decimal128(5, 2))])

EXPECTED = [
    (1, 1, 0.5, decimal.Decimal("1.25"), "d1", None),
    (2, -2, -1.5, None, "d1", None),
    (3, 7, 2.0, decimal.Decimal("-999.99"), "d2", None),
    (2**40, 1000, 1e300, decimal.Decimal("1234567890.12"), "d3", "new"),
]


def evolved_table(spark: SparkSession, catalog: ss.Catalog) -> ss.Table:
    """Rows under the first schema, then a column added, three widened and one dropped, then Spark
    writes a row under the new schema."""
    table = catalog.create_table("t", SCHEMA, partition_by=["day"])
    table.write(pa.table({"day": ["d1", "d1", "d2"], "id": pa.array([1, 2, 3], pa.int32()),
                          "small": pa.array([1, -2, 7], pa.int8()), "name": ["a", "b", "c"],
                          "score": pa.array([0.5, -1.5, 2.0], pa.float32()),
                          "price": pa.array([decimal.Decimal("1.25"), None, decimal.Decimal("-999.99")],
                                            pa.decimal128(5, 2))}, schema=SCHEMA))
    table.add_columns([pa.field("tag", pa.string())])
    table.widen_column("id", pa.int64())
    table.widen_column("small", pa.int32())
    table.widen_column("score", pa.float64())
    table.widen_column("price", pa.decimal128(12, 2))
    table.drop_column("name")
    spark_rows = spark.createDataFrame([("d3", 2**40, 1000, 1e300, decimal.Decimal("1234567890.12"), "new")],
                                       "day string, id long, small int, score double, price decimal(12,2), tag string")
    table.write(spark_rows)
    return table


def collected(df: object) -> list[tuple[object, ...]]:
    rows = df.select("id", "small", "score", "price", "day", "tag").collect()  # type: ignore[attr-defined]
    return sorted((tuple(r) for r in rows), key=lambda r: r[0])


def test_every_spark_read_path_reads_old_files_under_the_new_schema(spark: SparkSession, catalog: ss.Catalog) -> None:
    table = evolved_table(spark, catalog)

    helper = catalog.read(spark, "t")
    loaded = spark.read.format("sleeper").options(**catalog.options()).load("t")

    for df in (helper, loaded):
        assert df.schema.simpleString() == ("struct<day:string,id:bigint,small:int,score:double,"
                                            "price:decimal(12,2),tag:string>")
        assert collected(df) == EXPECTED
        assert collected(df.where("tag is null")) == EXPECTED[:3]
        assert collected(df.where("tag = 'new'")) == EXPECTED[3:]
        assert collected(df.where("id > 2147483647 or small < 0")) == [EXPECTED[1], EXPECTED[3]]
        assert collected(df.where("price > 1000")) == EXPECTED[3:]
    # Time travel reads a version under its own schema
    before = catalog.read(spark, "t", version=2)
    assert "name" in before.columns and "tag" not in before.columns and before.count() == 3
    assert table.verify().ok


def test_spark_writes_merge_their_schema(spark: SparkSession, catalog: ss.Catalog) -> None:
    catalog.write(spark.range(2), "t")
    wider = spark.createDataFrame([(2, "b", 0.5)], "id long, label string, weight double")

    with pytest.raises(ss.SchemaMismatchError, match="columns not in the table"):
        catalog.write(wider, "t")
    helper = catalog.write(wider, "t", merge_schema=True)
    (spark.createDataFrame([(3, "c", 7)], "id long, label string, extra int").write.format("sleeper")
     .options(**catalog.options()).option("mergeSchema", "true").mode("append").save("t"))

    table = catalog.table("t")
    assert helper.operation == "append" and table.state(helper.version).schema.names == ["id", "label", "weight"]
    assert table.schema.names == ["id", "label", "weight", "extra"]
    assert sorted(tuple(r) for r in catalog.read(spark, "t").collect()) == [
        (0, None, None, None), (1, None, None, None), (2, "b", 0.5, None), (3, "c", None, 7)]
    assert [s.operation for s in table.history()] == ["append", "append", "append"]
