"""Filters Spark pushes down: same answers as Spark's own filtering, and fewer files read."""

from __future__ import annotations

import datetime as dt
import decimal
import math
from pathlib import Path

import pyarrow as pa
import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T
from pyspark.sql.datasource import EqualTo, Filter, GreaterThan, In, IsNull, LessThan, Not, StringStartsWith

import sleeper_spark as ss
from sleeper_spark.models import FileRef
from sleeper_spark.spark.bridge.datasource import SleeperDataSource
from sleeper_spark.spark.common.jvm import NATIVE_CONF
from sleeper_spark.spark.common.options import GUARD_COLUMN
from sleeper_spark.spark.conditions.filters import prune_expression
from sleeper_spark.spark.source.reader import SleeperReader, bin_pack
from tests.spark.conftest import CATALOG_BACKENDS, make_catalog

pytestmark = pytest.mark.spark

UTC = dt.timezone.utc
SCHEMA = T.StructType([
    T.StructField("id", T.LongType()),
    T.StructField("part", T.StringType()),
    T.StructField("name", T.StringType()),
    T.StructField("score", T.DoubleType()),
    T.StructField("day", T.DateType()),
    T.StructField("at", T.TimestampType()),
    T.StructField("local_at", T.TimestampNTZType()),
    T.StructField("amount", T.DecimalType(10, 2)),
    T.StructField("flag", T.BooleanType()),
])


def rows() -> list[tuple[object, ...]]:
    out = []
    for i in range(40):
        out.append((
            i if i % 13 else None, ["a", "b", "c", None][i % 4], [f"n{i}", f"m{i}", None, "nice"][i % 4],
            [float(i), math.nan, None, -0.0][i % 4] if i % 5 else float("inf"),
            dt.date(2024, 1, 1) + dt.timedelta(days=i), dt.datetime(2024, 1, 1, tzinfo=UTC) + dt.timedelta(hours=i),
            dt.datetime(2024, 1, 1) + dt.timedelta(hours=i), decimal.Decimal(i) / 4, [True, False, None][i % 3],
        ))
    return out


@pytest.fixture(scope="module", params=CATALOG_BACKENDS)
def tables(spark: SparkSession, request: pytest.FixtureRequest,
           tmp_path_factory: pytest.TempPathFactory) -> tuple[DataFrame, DataFrame]:
    """The same rows as a sleeper table (four appends, so several files) and as a plain DataFrame."""
    catalog = make_catalog(str(request.param), tmp_path_factory.mktemp("filters") / "warehouse")
    plain = spark.createDataFrame(rows(), SCHEMA)
    data = rows()
    for start in range(0, 40, 10):
        catalog.write(spark.createDataFrame(data[start:start + 10], SCHEMA), "t", partition_by=["part"])
    return catalog.read(spark, "t"), plain


PREDICATES = [
    "id = 7", "id <=> 7", "id <=> null", "id > 30", "id >= 30", "id < 3", "id <= 3", "id in (1, 2, 39)",
    "id is null", "id is not null", "not (id = 7)", "not (id <=> 7)", "not (id in (1, 2))", "not (id > 30)",
    "part = 'a'", "part is null", "part <> 'b'", "part in ('a', 'c')", "not (part in ('a'))",
    "name like 'n1%'", "name like '%ce'", "name like '%1%'", "not (name like 'n%')",
    "score = 4.0", "score > 10", "score < 10", "score = double('NaN')", "score > double('inf')", "score is null",
    "not (score < 10)", "score = 0.0",
    "day = date'2024-01-05'", "day between date'2024-01-10' and date'2024-01-20'",
    "at > timestamp'2024-01-02 03:00:00'", "at = timestamp'2024-01-01 05:00:00'",
    "local_at <= timestamp_ntz'2024-01-01 04:00:00'", "amount >= 5.25", "amount = 2.5",
    "flag", "not flag", "flag is null", "id > 5 and part = 'c' and name like 'n%'",
    "id = 1 or part = 'b'",
]


def rows_of(df: DataFrame) -> list[str]:
    return sorted(repr(tuple(row)) for row in df.collect())  # repr: NaN equals NaN


@pytest.mark.parametrize("predicate", PREDICATES)
def test_filters_agree_with_spark(tables: tuple[DataFrame, DataFrame], predicate: str) -> None:
    sleeper, plain = tables
    assert rows_of(sleeper.filter(predicate)) == rows_of(plain.filter(predicate))


GUARD = EqualTo((GUARD_COLUMN,), True)


def source_reader(catalog: ss.Catalog, table: str, guarded: bool = True) -> SleeperReader:
    """The reader Spark would plan with (for a new DataFrame), built directly to see its files."""
    source = SleeperDataSource({**catalog.options(), "path": table, "scan_guard": str(guarded)})
    reader = source.reader(source.schema())
    assert isinstance(reader, SleeperReader)
    return reader


def planned(reader: SleeperReader, *filters: Filter) -> tuple[list[FileRef], list[Filter]]:
    pushed = [GUARD, *filters]
    left = reader.pushFilters(pushed)
    assert all(any(f is p for p in pushed) for f in left)
    return reader.planned_files(), left


def test_pushed_filters_skip_files(spark: SparkSession, catalog: ss.Catalog) -> None:
    for start in range(0, 400, 100):  # four appends: ids 0-99, 100-199, ... in separate files
        batch = (spark.range(start, start + 100, numPartitions=1)
                 .selectExpr("id", "cast(id % 4 as string) as part", "'x' || lpad(id, 3, '0') as s"))
        catalog.write(batch, "t", partition_by=["part"])
    assert len(catalog.table("t").files()) == 16

    files, left = planned(source_reader(catalog, "t"), EqualTo(("part",), "1"))
    assert len(files) == 4 and left == [EqualTo(("part",), "1")]  # pruned by, but still Spark's to apply
    files, _ = planned(source_reader(catalog, "t"), GreaterThan(("id",), 250))
    assert len(files) == 8  # ids 200-399: min/max rule the first two appends out
    files, _ = planned(source_reader(catalog, "t"), EqualTo(("part",), "1"), LessThan(("id",), 100))
    assert len(files) == 1
    files, _ = planned(source_reader(catalog, "t"), In(("part",), ["0", "3"]), Not(EqualTo(("part",), "3")))
    assert len(files) == 4
    files, _ = planned(source_reader(catalog, "t"), StringStartsWith(("s",), "x3"))
    assert len(files) == 4  # x300 .. x399 only: every other file's min/max lies outside ["x3", "x4")
    files, _ = planned(source_reader(catalog, "t"), IsNull(("part",)))
    assert files == []
    reader = source_reader(catalog, "t")  # scans of one DataFrame share Spark's plan: it covers them all
    assert len(planned(reader, EqualTo(("part",), "1"))[0]) == 4
    assert len(planned(reader, EqualTo(("part",), "2"))[0]) == 8
    assert len(planned(reader)[0]) == 16
    unguarded = source_reader(catalog, "t", guarded=False)  # spark.read.format("sleeper"): no pruning
    assert len(planned(unguarded, EqualTo(("part",), "1"))[0]) == 16


@pytest.mark.usefixtures("io_path")
def test_spark_reads_only_the_files_that_can_match(spark: SparkSession, catalog: ss.Catalog) -> None:
    for start in range(0, 400, 100):
        batch = spark.range(start, start + 100, numPartitions=1).selectExpr("id", "cast(id % 4 as string) as part")
        catalog.write(batch, "t", partition_by=["part"])
    table = catalog.table("t")
    keep = {f.path for f in table.files() if f.partition["part"] == "2" and f.column_stats["id"].max >= 300}
    assert len(keep) == 1
    root = Path(catalog.config.warehouse) / table.root
    for file in table.files():
        if file.path not in keep:
            (root / file.path).unlink()  # any read of these would fail

    df = catalog.read(spark, "t")
    found = df.filter("part = '2' and id >= 300").collect()

    assert sorted(row.id for row in found) == list(range(302, 400, 4))
    with pytest.raises(Exception, match=r"is missing|does not exist"):  # the Python source's words, or Spark's
        df.count()


def test_only_filters_that_cannot_drop_a_matching_row_prune() -> None:
    schema = pa.schema([("i", pa.int64()), ("f", pa.float64()), ("s", pa.string()), ("b", pa.binary())])
    usable = [EqualTo(("i",), 1), Not(In(("i",), [1, 2])), StringStartsWith(("s",), "ab"), IsNull(("f",)),
              EqualTo(("f",), 1.5), LessThan(("f",), 2.0)]
    unusable = [GreaterThan(("f",), 2.0), EqualTo(("f",), math.nan), In(("i",), [1, None]),
                EqualTo(("b",), b"x"), EqualTo(("nested", "x"), 1), EqualTo(("missing",), 1), EqualTo(("i",), "one"),
                Not(EqualTo(("f",), 1.5))]
    assert all(prune_expression(f, schema) is not None for f in usable)
    assert all(prune_expression(f, schema) is None for f in unusable)


def test_queries_that_share_a_dataframe_see_all_its_rows(spark: SparkSession, catalog: ss.Catalog) -> None:
    # PySpark 4.3 keeps one read plan per loaded DataFrame (sleeper_spark.spark.source.scans): later
    # and sibling scans of the same DataFrame must not inherit an earlier scan's pruning.
    catalog.write(spark.range(0, 40).selectExpr("id", "cast(id % 4 as string) as part"), "t", partition_by=["part"])
    for df in (catalog.read(spark, "t"), spark.read.format("sleeper").options(**catalog.options()).load("t")):
        assert df.filter("part = '1'").count() == 10
        assert df.count() == 40
        assert df.filter("id < 3 or part = '2'").count() == 12
        both = df.filter("part = '1'").union(df.filter("part = '2'"))
        assert sorted(r.part for r in both.collect()) == ["1"] * 10 + ["2"] * 10
        left, right = df.filter("part = '0'").alias("l"), df.filter("part = '3'").alias("r")
        assert left.join(right, F.expr("l.id + 3 = r.id")).count() == 10


def test_bin_packing_balances_sizes_and_keeps_commit_order() -> None:
    files = [FileRef(path=f"f{i}", partition={}, size_bytes=size, row_count=1, checksum="sha256:0", column_stats={})
             for i, size in enumerate([100, 10, 10, 10, 10, 10, 10, 10, 10, 10, 10, 50, 50])]

    groups = bin_pack(files, 4)

    assert len(groups) == 4
    assert sorted(f.path for g in groups for f in g) == sorted(f.path for f in files)
    assert sorted(sum(f.size_bytes for f in g) for g in groups) == [60, 70, 70, 100]
    assert all([f.path for f in g] == sorted((f.path for f in g), key=lambda p: int(p[1:])) for g in groups)
    assert len(bin_pack(files[:2], 8)) == 2


def test_a_scan_uses_at_least_twice_the_parallelism(spark: SparkSession, catalog: ss.Catalog) -> None:
    for start in range(0, 60, 10):
        catalog.write(spark.range(start, start + 10), "t")

    spark.conf.set(NATIVE_CONF, "false")  # the Python source's task planning; Spark plans its own reads
    try:
        df = catalog.read(spark, "t")
    finally:
        spark.conf.unset(NATIVE_CONF)

    assert df.rdd.getNumPartitions() == min(6, 2 * spark.sparkContext.defaultParallelism)
    assert df.count() == 60
