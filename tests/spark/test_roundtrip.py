"""Writing and reading through Spark: the helper API and the ``sleeper`` format, one code path."""

from __future__ import annotations

import datetime as dt
import decimal
from pathlib import Path

import pytest
from chispa import assert_df_equality
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import types as T

import sleeper_spark as ss
from sleeper_spark.spark import SparkDataFrames
from tests.spark.conftest import CatalogFactory

pytestmark = [pytest.mark.spark, pytest.mark.usefixtures("io_path")]

UTC = dt.timezone.utc

ALL_TYPES = T.StructType([
    T.StructField("id", T.LongType(), False),
    T.StructField("small", T.IntegerType()),
    T.StructField("tiny", T.ByteType()),
    T.StructField("short", T.ShortType()),
    T.StructField("name", T.StringType()),
    T.StructField("score", T.DoubleType()),
    T.StructField("ratio", T.FloatType()),
    T.StructField("flag", T.BooleanType()),
    T.StructField("day", T.DateType()),
    T.StructField("at", T.TimestampType()),
    T.StructField("local_at", T.TimestampNTZType()),
    T.StructField("amount", T.DecimalType(12, 3)),
    T.StructField("blob", T.BinaryType()),
    T.StructField("tags", T.ArrayType(T.StringType())),
    T.StructField("point", T.StructType([T.StructField("x", T.IntegerType()), T.StructField("y", T.StringType())])),
    T.StructField("attrs", T.MapType(T.StringType(), T.LongType())),
])


def all_types_rows(start: int, count: int) -> list[tuple[object, ...]]:
    rows = []
    for i in range(start, start + count):
        rows.append((
            i, i * 7 if i % 5 else None, i % 100, i % 1000, f"name-{i}" if i % 4 else None, i / 3, float(i % 9) / 2,
            i % 2 == 0, dt.date(2024, 1, 1) + dt.timedelta(days=i % 40),
            dt.datetime(2024, 3, 1, 12, tzinfo=UTC) + dt.timedelta(seconds=i, microseconds=i),
            dt.datetime(2024, 3, 1, 12) + dt.timedelta(minutes=i), decimal.Decimal(i) / 1000 + 1,
            bytes([i % 256, 0, 255]), [f"t{i}", None, "x"] if i % 3 else None, (i, f"p{i}"),
            {"a": i, "b": None} if i % 2 else {},
        ))
    return rows


def without_maps(df: DataFrame) -> DataFrame:
    return df.drop("attrs")  # Spark cannot sort by a map column, which ignore_row_order needs


def maps_by_id(df: DataFrame) -> dict[int, dict[str, int | None]]:
    return {row["id"]: row["attrs"] for row in df.select("id", "attrs").collect()}


def test_the_helper_api_round_trips_every_type(spark: SparkSession, catalog: ss.Catalog) -> None:
    df = spark.createDataFrame(all_types_rows(0, 60), ALL_TYPES).repartition(3)

    snapshot = catalog.write(df, "typed", partition_by=["flag"])
    back = catalog.read(spark, "typed")

    assert back.schema == ALL_TYPES
    assert_df_equality(without_maps(back), without_maps(df), ignore_row_order=True)
    assert maps_by_id(back) == maps_by_id(df)
    table = catalog.table("typed")
    assert snapshot == table.latest()
    assert (snapshot.version, snapshot.parent_id, snapshot.operation) == (2, None, "append")
    assert snapshot.rows_added == 60 and snapshot.files_added == len(table.files()) >= 2
    assert {f.partition["flag"] for f in table.files()} == {"true", "false"}


def test_the_format_round_trips_and_creates_the_table(spark: SparkSession, catalog: ss.Catalog) -> None:
    df = spark.createDataFrame(all_types_rows(0, 40), ALL_TYPES)

    (df.write.format("sleeper").options(**catalog.options()).option("partition_by", "day")
     .option("event_time_column", "at").mode("append").save("events"))
    back = spark.read.format("sleeper").options(**catalog.options()).load("events")

    assert_df_equality(without_maps(back), without_maps(df), ignore_row_order=True)
    table = catalog.table("events")
    assert table.partition_by == ("day",)
    latest = table.latest()
    assert latest.min_event_time == dt.datetime(2024, 3, 1, 12, tzinfo=UTC)
    assert latest.max_event_time == dt.datetime(2024, 3, 1, 12, tzinfo=UTC) + dt.timedelta(seconds=39, microseconds=39)


def test_appends_add_and_overwrite_replaces(spark: SparkSession, catalog: ss.Catalog) -> None:
    first = spark.range(0, 100).selectExpr("id", "cast(id % 4 as string) as part")
    second = spark.range(100, 150).selectExpr("id", "cast(id % 4 as string) as part")
    third = spark.range(1000, 1010).selectExpr("id", "cast(id % 4 as string) as part")

    catalog.write(first, "t", partition_by=["part"])
    catalog.write(second, "t")
    assert_df_equality(catalog.read(spark, "t"), first.union(second), ignore_row_order=True)

    replaced = catalog.write(third, "t", mode="overwrite")
    assert_df_equality(catalog.read(spark, "t"), third, ignore_row_order=True)
    assert replaced.operation == "overwrite" and replaced.version == 4
    assert replaced.rows_removed == 150 and replaced.rows_added == 10

    (first.write.format("sleeper").options(**catalog.options()).mode("overwrite").save("t"))
    assert_df_equality(catalog.read(spark, "t"), first, ignore_row_order=True)
    assert [s.operation for s in catalog.table("t").history()] == ["append", "append", "overwrite", "overwrite"]


def test_metadata_is_recorded(spark: SparkSession, catalog: ss.Catalog) -> None:
    df = spark.range(3)
    given = catalog.write(df, "t", metadata={"JobName": "Nightly Load", "run": "42"})
    assert given.metadata == {"JobName": "Nightly Load", "run": "42"}
    assert catalog.write(df, "t").metadata == {}

    # Spark lowercases option keys on the way to a Python data source; values keep their case.
    (df.write.format("sleeper").options(**catalog.options()).option("metadata.Owner", "Team A")
     .mode("append").save("t"))
    assert catalog.table("t").latest().metadata == {"owner": "Team A"}


def test_an_app_version_is_committed_once(spark: SparkSession, catalog: ss.Catalog) -> None:
    df = spark.range(5)
    first = catalog.write(df, "t", app_id="loader", app_version=1)
    again = catalog.write(df, "t", app_id="loader", app_version=1)
    assert again == first

    third = catalog.write(df, "t", app_id="loader", app_version=3)
    assert third.version == first.version + 1
    assert (third.app_id, third.app_version) == ("loader", 3)
    assert catalog.write(df, "t", app_id="loader", app_version=1) == first
    assert catalog.write(df, "t", app_id="loader", app_version=2) == third  # superseded: the app's newest

    # The format route reaches the same check inside commit(): nothing new is committed.
    (df.write.format("sleeper").options(**catalog.options()).option("app_id", "loader").option("app_version", "3")
     .mode("append").save("t"))
    table = catalog.table("t")
    assert [s.version for s in table.history()] == [first.version, third.version]
    assert table.scan().num_rows == 10


def test_time_travel_by_version_and_timestamp(spark: SparkSession, catalog: ss.Catalog) -> None:
    v2 = catalog.write(spark.range(0, 10), "t")
    v3 = catalog.write(spark.range(10, 30), "t")
    catalog.write(spark.range(0, 1), "t", mode="overwrite")
    options = catalog.options()

    assert catalog.read(spark, "t", version=2).count() == 10
    assert catalog.read(spark, "t", version=3).count() == 30
    assert catalog.read(spark, "t").count() == 1
    assert catalog.read(spark, "t", timestamp=v3.committed_at).count() == 30
    assert catalog.read(spark, "t", timestamp=v2.committed_at + (v3.committed_at - v2.committed_at) / 2).count() == 10
    assert spark.read.format("sleeper").options(**options).option("versionAsOf", 2).load("t").count() == 10
    at_v3 = spark.read.format("sleeper").options(**options).option("timestampAsOf", v3.committed_at.isoformat())
    assert at_v3.load("t").count() == 30
    with pytest.raises(ss.SnapshotNotFoundError):
        catalog.read(spark, "t", version=9)
    with pytest.raises(ss.SnapshotNotFoundError):
        catalog.read(spark, "t", timestamp=v2.committed_at - dt.timedelta(days=1))


def test_a_dataframe_keeps_the_version_it_was_created_at(spark: SparkSession, catalog: ss.Catalog) -> None:
    catalog.write(spark.range(0, 10), "t")
    df = catalog.read(spark, "t")
    catalog.write(spark.range(10, 20), "t")

    assert df.count() == 10  # pinned when the DataFrame was defined, like its schema
    assert catalog.read(spark, "t").count() == 20


def test_reading_a_table_with_no_snapshot_gives_its_schema(spark: SparkSession, catalog: ss.Catalog) -> None:
    catalog.create_table("empty", T.StructType([T.StructField("a", T.LongType()), T.StructField("b", T.StringType())]))

    df = catalog.read(spark, "empty")

    assert df.count() == 0
    assert df.schema.simpleString() == "struct<a:bigint,b:string>"


def test_session_conf_supplies_options_and_explicit_options_win(spark: SparkSession, catalog_factory: CatalogFactory,
                                                                tmp_path: Path) -> None:
    catalog = catalog_factory()
    other = ss.Catalog.local(str(tmp_path / "other"))
    catalog.write(spark.range(3), "t")
    other.write(spark.range(7), "t")
    conf = {f"spark.sleeper.{key}": value for key, value in catalog.options().items()}
    try:
        for key, value in conf.items():
            spark.conf.set(key, value)
        ss.register(spark)  # the format route reads spark.sleeper.* when registering

        assert spark.read.format("sleeper").load("t").count() == 3
        assert spark.read.format("sleeper").option("Warehouse", other.config.warehouse).load("t").count() == 7
        spark.range(2).write.format("sleeper").mode("append").save("t")
        assert catalog.table("t").scan().num_rows == 5
    finally:
        for key in conf:
            spark.conf.unset(key)
        ss.register(spark)
    with pytest.raises(Exception, match="warehouse"):
        spark.read.format("sleeper").load("t").count()


def test_typed_errors_reach_the_caller(spark: SparkSession, catalog: ss.Catalog) -> None:
    with pytest.raises(ss.TableNotFoundError):
        catalog.read(spark, "missing")
    catalog.write(spark.range(3).selectExpr("id", "'a' as p"), "t", partition_by=["p"])
    with pytest.raises(ss.ConfigError, match="partitioned by"):
        catalog.write(spark.range(3).selectExpr("id", "'a' as p"), "t", partition_by=["id"])
    # Through the format, Spark's exception carries the error the source raised: ss.sleeper_error gives it back
    for option, value, error, message in [("colour", "red", ss.ConfigError, "unknown sleeper option 'colour'"),
                                          ("versionAsOf", 7, ss.SnapshotNotFoundError, "has no snapshot with version 7")]:
        with pytest.raises(Exception) as raised:
            spark.read.format("sleeper").options(**catalog.options()).option(option, value).load("t")
        typed = ss.sleeper_error(raised.value)
        assert isinstance(typed, error) and message in str(typed), typed


def test_timestamps_keep_their_instant_in_any_session_time_zone(spark: SparkSession, catalog: ss.Catalog) -> None:
    # Spark labels the Arrow batches it writes with the session time zone; reads must say UTC.
    instants = [dt.datetime(2024, 3, 31, 1, 30, tzinfo=UTC), dt.datetime(2024, 11, 3, 6, 15, 0, 123456, tzinfo=UTC)]
    schema = T.StructType([T.StructField("at", T.TimestampType()), T.StructField("local_at", T.TimestampNTZType())])
    before = spark.conf.get("spark.sql.session.timeZone")
    try:
        spark.conf.set("spark.sql.session.timeZone", "America/New_York")
        df = spark.createDataFrame([(at, at.replace(tzinfo=None)) for at in instants], schema)
        catalog.write(df, "t")
        assert_df_equality(catalog.read(spark, "t"), df, ignore_row_order=True)
    finally:
        spark.conf.set("spark.sql.session.timeZone", str(before))
    stored = catalog.table("t").scan()
    assert stored.schema.field("at").type.tz == "UTC"
    assert stored.column("at").to_pylist() == instants
    assert stored.column("local_at").to_pylist() == [at.replace(tzinfo=None) for at in instants]


def test_register_is_idempotent_and_enables_pushdown(spark: SparkSession) -> None:
    from pyspark.sql.readwriter import DataFrameReader, DataFrameWriter

    ss.register(spark)
    ss.register(spark)
    # pyspark's own classes are left as they are: every other format reads and writes untouched
    for cls, names in ((DataFrameReader, ("format", "load")), (DataFrameWriter, ("format", "save"))):
        for name in names:
            assert getattr(cls, name).__module__ == "pyspark.sql.readwriter", f"{cls.__name__}.{name} was patched"
    assert spark.conf.get("spark.sql.python.filterPushdown.enabled") == "true"
    assert SparkDataFrames().is_dataframe(spark.range(1)) and not SparkDataFrames().is_dataframe([1])
