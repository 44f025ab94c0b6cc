"""Partition values that are awkward in a path round-trip exactly through Spark."""

from __future__ import annotations

import datetime as dt

import pytest
from chispa import assert_df_equality
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

import sleeper_spark as ss

pytestmark = pytest.mark.spark

AWKWARD = ["a/b", "x=y", "100%", "%2F", "..", ".", "../../etc", "ünïcödé ✓", "日本", "", None, "with space",
           "line\nbreak", "__HIVE_DEFAULT_PARTITION__", "back\\slash", "v" * 300]


def test_awkward_partition_values_round_trip(spark: SparkSession, catalog: ss.Catalog, io_path: str) -> None:
    schema = T.StructType([T.StructField("key", T.StringType()), T.StructField("day", T.DateType()),
                           T.StructField("n", T.LongType())])
    rows = [(value, dt.date(2024, 1, 1 + i % 2), i) for i, value in enumerate(AWKWARD * 2)]
    df = spark.createDataFrame(rows, schema)

    catalog.write(df, "t", partition_by=["key", "day"])
    back = catalog.read(spark, "t")

    assert_df_equality(back, df, ignore_row_order=True)
    table = catalog.table("t")
    assert {f.partition["key"] for f in table.files()} == set(AWKWARD)
    # The Python writer names directories by value; Spark's writer by a hash of the values.
    layout = "data/key=" if io_path == "python" else "data/spark-"
    assert all(f.path.startswith(layout) and "/../" not in f.path for f in table.files())
    for value in ["a/b", "..", "", None, "ünïcödé ✓", "v" * 300]:
        matching = back.filter(F.col("key").isNull() if value is None else F.col("key") == value)
        assert sorted(r.n for r in matching.collect()) == [i for i, v in enumerate(AWKWARD * 2) if v == value]
