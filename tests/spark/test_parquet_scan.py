"""Helper reads without the jar (a Spark Connect server that takes no jars) point Spark's own
``parquet`` source at the folders of a version and keep exactly its files. Run here on the local
classic session, which has the same ``spark.read``: every way of naming the files is checked
against the rows the version holds, with removed files still on disk beside live ones."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from pyspark.sql import SparkSession

import sleeper_spark as ss
from sleeper_spark.spark.common.jvm import NATIVE_CONF
from sleeper_spark.spark.connect.connect_read import READ_CONF, read_parquet, server_location
from sleeper_spark.spark.connect.parquet_scan import PARQUET_FILTERS_OFF, ParquetScan, parquet_scan, reader_options

AWKWARD = ["a/b", "x=y", "100%", "%2F", "..", "ünïcödé ✓", "", None, "with space", "__HIVE_DEFAULT_PARTITION__",
           "v" * 300, "plain"]
SPARK_NAME = "part-{:05d}-6f1c2a9e-0d4b-4c1e-9a57-3b2f8e1d7c64.c000.snappy.parquet"


@pytest.fixture
def parquet_reads(spark: SparkSession) -> Iterator[None]:
    """Helper reads take the no-jar path on this session."""
    spark.conf.set(READ_CONF, "parquet")
    try:
        yield
    finally:
        spark.conf.unset(READ_CONF)


def _scan_of(table: ss.Table, spark: SparkSession) -> ParquetScan:
    state = table.state()
    files = table.files_table()
    root = server_location(spark, table.location, None)
    assert root is not None
    return parquet_scan(root, files["path"].to_pylist(),
                        {c: files[f"partition.{c}"].to_pylist() for c in state.partition_by},
                        {c: state.schema.field(c).type.name for c in state.partition_by})


def _rows(frame: object) -> list[tuple[object, ...]]:
    return sorted((tuple(row) for row in frame.collect()), key=repr)  # type: ignore[attr-defined]


def _texts(frame: object) -> list[str]:
    """The rows as text, in which NaN equals NaN and -0.0 is not 0.0."""
    return sorted(repr(tuple(row)) for row in frame.collect())  # type: ignore[attr-defined]


def _plan(frame: object) -> str:
    return str(frame._jdf.queryExecution().executedPlan().toString())  # type: ignore[attr-defined]


def _truth(table: ss.Table) -> list[tuple[object, ...]]:
    data = table.scan()
    return sorted(zip(*data.to_pydict().values(), strict=True), key=repr)


# -- the choice, without Spark ---------------------------------------------------------------


def test_python_writer_folders_give_spark_the_partitions_and_names_keep_the_files() -> None:
    paths = [f"data/part={p}/{i:032x}.parquet" for i, p in enumerate("aabc")]
    scan = parquet_scan("file:/w/t", paths, {"part": list("aabc")}, {"part": "string"})
    assert scan.roots == ["file:/w/t/data/part=a", "file:/w/t/data/part=b", "file:/w/t/data/part=c"]
    assert scan.options["basePath"] == "file:/w/t/data"
    assert scan.options["pathGlobFilter"] == "{" + ",".join(sorted(p.rsplit("/", 1)[1] for p in paths)) + "}"
    assert scan.partitions_from_folders and scan.file_paths is None


def test_a_removed_twin_of_a_spark_written_file_makes_the_scan_keep_files_by_path() -> None:
    # Spark's writer gave one task's files the same name in both folders; one of them was removed
    grid = [f"data/spark-w1/__sleeper_partition={h}/{SPARK_NAME.format(0)}" for h in ("h1", "h2")]
    whole = parquet_scan("file:///w/t", grid, {"part": ["1", "2"]}, {"part": "string"})
    one_left = parquet_scan("file:///w/t", [*grid[:1], grid[1].replace("part-00000", "part-00001")],
                            {"part": ["1", "2"]}, {"part": "string"})
    assert "pathGlobFilter" in whole.options and whole.file_paths is None
    assert "pathGlobFilter" not in one_left.options
    # file:///w is file:/w in Spark's own spelling of paths
    assert one_left.file_paths == ["file:/w/t/" + grid[0], "file:/w/t/" + grid[1].replace("part-00000", "part-00001")]
    assert one_left.options == {"recursiveFileLookup": "true"}


def test_folders_inside_listed_folders_are_not_listed_twice() -> None:
    paths = [f"data/{1:032x}.parquet", f"data/spark-w1/{SPARK_NAME.format(0)}"]
    scan = parquet_scan("s3a://bucket/t", paths, {}, {})
    assert scan.roots == ["s3a://bucket/t/data"]
    assert scan.options["recursiveFileLookup"] == "true"


@pytest.mark.parametrize("value", ["", "ünï", "v" * 300])
def test_folder_names_spark_would_read_back_otherwise_give_no_partitions(value: str) -> None:
    from sleeper_spark.datafiles.paths import partition_dir

    path = f"{partition_dir({'part': value}, ('part',))}/{1:032x}.parquet"
    scan = parquet_scan("file:/w/t", [path], {"part": [value]}, {"part": "string"})
    assert not scan.partitions_from_folders and "basePath" not in scan.options


def test_paths_outside_the_data_folder_or_unusual_characters_are_handed_over_one_by_one() -> None:
    assert parquet_scan("file:/w/t", ["imported/x.parquet"], {}, {}).roots == ["file:/w/t/imported/x.parquet"]
    odd = parquet_scan("file:/w/a b/t", ["data/other-name.parquet"], {}, {})
    assert odd.roots == ["file:/w/a b/t/data/other-name.parquet"] and odd.file_paths is None


# -- against the truth, on Spark ---------------------------------------------------------------


@pytest.mark.spark
def test_awkward_python_written_partitions_with_removed_files_on_disk_read_exactly_the_version(
        spark: SparkSession, catalog: ss.Catalog, parquet_reads: None) -> None:
    rows = pa.table({"key": pa.array(AWKWARD * 3, pa.string()), "n": pa.array(range(len(AWKWARD) * 3), pa.int64())})
    table = catalog.create_table("t", rows.schema, partition_by=["key"])
    table.write(rows.slice(0, len(AWKWARD)))
    table.write(rows.slice(len(AWKWARD)))
    table.delete_where(spark, pc.field("n") == 1)  # the file holding n=1 is rewritten; the old one stays on disk

    back = read_parquet(table, spark, None)

    assert back is not None and _rows(back) == _truth(table)
    assert not _scan_of(table, spark).partitions_from_folders  # "", non-ASCII and hashed values
    for value in ("a/b", "100%", None, "ünïcödé ✓"):
        matching = back.where("key IS NULL" if value is None else f"key = '{value}'")
        assert sorted(r.n for r in matching.collect()) == sorted(
            n for n, v in zip(range(len(AWKWARD) * 3), AWKWARD * 3, strict=True) if v == value and n != 1)


@pytest.mark.spark
def test_typed_partitions_spark_reads_from_the_folders_prune_and_keep_the_table_s_column_order(
        spark: SparkSession, catalog: ss.Catalog, parquet_reads: None) -> None:
    n = pa.array(range(40), pa.int64())
    rows = pa.table({"n": n, "day": pa.array([dt.date(2024, 1, 1 + i % 3) for i in range(40)]),
                     "flag": pa.array([i % 2 == 0 for i in range(40)]), "k": pa.array([i % 4 - 1 for i in range(40)],
                                                                                       pa.int32())})
    table = catalog.create_table("typed", rows.schema, partition_by=["day", "flag", "k"])
    table.write(rows.slice(0, 20))
    table.write(rows.slice(20), mode="overwrite")
    table.write(rows.slice(0, 10))

    back = read_parquet(table, spark, None)

    assert back is not None and back.columns == ["n", "day", "flag", "k"]
    assert _rows(back) == _truth(table)
    assert _scan_of(table, spark).partitions_from_folders
    picked = back.where("day = DATE'2024-01-02' AND flag AND k = -1")
    assert sorted(r.n for r in picked.collect()) == sorted(
        i for i in [*range(20, 40), *range(10)] if i % 3 == 1 and i % 2 == 0 and i % 4 == 0)
    assert "PartitionFilters: [isnotnull(day" in picked._jdf.queryExecution().executedPlan().toString()


@pytest.mark.spark
def test_spark_written_files_whose_twins_were_removed_read_exactly_the_version(
        spark: SparkSession, catalog: ss.Catalog, parquet_reads: None) -> None:
    spark.conf.unset(NATIVE_CONF)
    # Two tasks, each with rows of every partition: both names in every folder
    source = spark.range(60).repartition(2).selectExpr("id", "cast(id % 3 AS STRING) AS part")
    catalog.write(source, "by_spark", partition_by=["part"])
    catalog.write(spark.range(60, 70).selectExpr("id", "'x' AS part"), "by_spark")
    table = catalog.table("by_spark")
    assert all(f.path.startswith("data/spark-") for f in table.files())
    twins_before = _scan_of(table, spark)
    # One of part=1's two files goes; its twins in 0 and 2 stay, and it stays on disk beside part=1's other file
    table.delete_where(spark, "part = '1' AND id = 4")

    back = read_parquet(table, spark, None)

    assert "pathGlobFilter" in twins_before.options
    assert _scan_of(table, spark).file_paths is not None
    assert len({f.path.rsplit("/", 1)[1] for f in table.files() if "part-" in f.path}) >= 2
    assert back is not None and _rows(back) == _truth(table)
    assert sorted(r.id for r in back.where("part = '1'").collect()) == [i for i in range(60) if i % 3 == 1 and i != 4]


@pytest.mark.spark
def test_an_unpartitioned_table_of_both_writers_reads_each_file_once(
        spark: SparkSession, catalog: ss.Catalog, parquet_reads: None) -> None:
    spark.conf.unset(NATIVE_CONF)
    catalog.write(spark.range(10).selectExpr("id"), "flat")
    table = catalog.table("flat")
    table.write(pa.table({"id": pa.array(range(10, 15), pa.int64())}))
    table.write(pa.table({"id": pa.array(range(15, 17), pa.int64())}), mode="overwrite")
    table.write(pa.table({"id": pa.array(range(17, 20), pa.int64())}))

    back = read_parquet(table, spark, None)

    assert back is not None and sorted(r.id for r in back.collect()) == [15, 16, 17, 18, 19]


@pytest.mark.spark
def test_nan_rows_and_dates_before_1900_are_not_lost_to_parquet_mr_s_filters(
        spark: SparkSession, catalog: ss.Catalog, parquet_reads: None) -> None:
    # Given files whose footers leave NaN out of the bounds, and one holding only dates and times in
    # the calendars' gap (which parquet-mr's filters see moved past its bounds)
    gap = dt.datetime(1582, 10, 10, 12, tzinfo=dt.timezone.utc)
    later = dt.datetime(2000, 1, 1, tzinfo=dt.timezone.utc)
    rows = pa.table({"id": pa.array(range(4), pa.int64()), "g": pa.array([1.0, float("nan"), 2.0, 3.0], pa.float32()),
                     "d": pa.array([gap.date(), gap.date(), later.date(), later.date()]),
                     "ts": pa.array([gap, gap, later, later], pa.timestamp("us", "UTC"))})
    table = catalog.create_table("gap", rows.schema)
    table.write(rows.slice(0, 2))
    table.write(rows.slice(2))

    back = read_parquet(table, spark, None)

    # Then filters that parquet-mr would answer from those footers find every row (NaN is above
    # every number in Spark)
    assert back is not None
    assert sorted(r.id for r in back.where("g > 5").collect()) == [1]
    assert sorted(r.id for r in back.where("g > 1.5").collect()) == [1, 2, 3]
    assert sorted(r.id for r in back.where("d = DATE'1582-10-10'").collect()) == [0, 1]
    assert sorted(r.id for r in back.where("ts IN (TIMESTAMP'1582-10-10 12:00:00')").collect()) == [0, 1]


def test_parquet_mr_s_filters_go_off_for_floats_dates_and_times_however_deeply_nested() -> None:
    from sleeper_spark.models import TableSchema

    def options(arrow_type: pa.DataType, guarded: tuple[str, ...] = ()) -> dict[str, str]:
        return reader_options(TableSchema.from_arrow(pa.schema([("id", pa.int64()), ("x", arrow_type)])), guarded)

    assert options(pa.string()) == {}
    assert options(pa.struct([("a", pa.int32())])) == {}
    for unsafe in (pa.float32(), pa.date32(), pa.timestamp("us", "UTC"), pa.list_(pa.struct([("f", pa.float64())])),
                   pa.map_(pa.string(), pa.timestamp("us"))):
        assert options(unsafe) == PARQUET_FILTERS_OFF, unsafe
        assert options(unsafe, ("x",)) == {}, unsafe  # a column no filter of which reaches parquet-mr


@pytest.mark.spark
def test_float_and_date_tables_keep_row_group_filters_on_other_columns_and_lose_no_rows(
        spark: SparkSession, catalog: ss.Catalog, parquet_reads: None) -> None:
    import random

    # Given files whose footers leave NaN out of the bounds, with -0.0 and 0.0 and nulls, and
    # dates in the calendars' gap, which parquet-mr's filters see moved
    pick = random.Random(46)
    specials = [float("nan"), -0.0, 0.0, None, float("inf"), float("-inf")]
    days = [dt.date(1582, 10, 10), dt.date(1582, 10, 16), dt.date(1899, 12, 31), dt.date(2024, 1, 1), None]
    rows = [(i, pick.choice(specials) if pick.random() < 0.4 else round(pick.uniform(-5, 5), 1), pick.choice(days))
            for i in range(400)]
    table = catalog.create_table("floats", pa.schema([("id", pa.int64()), ("x", pa.float64()), ("d", pa.date32())]))
    for start in range(0, 400, 50):  # one file, and so one row group, per 50 ids
        chunk = rows[start:start + 50]
        table.write(pa.table({"id": [r[0] for r in chunk], "x": pa.array([r[1] for r in chunk], pa.float64()),
                              "d": pa.array([r[2] for r in chunk], pa.date32())}))
    truth = spark.createDataFrame(rows, "id long, x double, d date")

    back = read_parquet(table, spark, None)

    # Then filters on the float and date columns find what Spark finds over the same rows in memory
    assert back is not None and back.columns == ["id", "x", "d"]
    for condition in ("x > 1", "x >= 4.9", "x = 0.0", "x = -0.0", "x < -4", "x IS NULL", "isnan(x)",
                      "x = double('NaN')", "x > double('inf')", "x IN (0.0, 1.5)", "NOT x < 2", "x <=> 0.0",
                      "d = DATE'1582-10-10'", "d < DATE'1582-10-15'", "d > DATE'1899-12-30'", "d IS NULL"):
        assert _texts(back.where(condition)) == _texts(truth.where(condition)), condition
    # And a filter on the integer column reaches parquet-mr, which skips the other files' row groups
    ids = back.where("id BETWEEN 60 AND 70")
    assert _texts(ids) == _texts(truth.where("id BETWEEN 60 AND 70"))
    plan = _plan(ids)
    assert "PushedFilters: [IsNotNull(id), GreaterThanOrEqual(id,60)" in plan
    assert "parquet.filter" not in str(back._jdf.queryExecution().optimizedPlan().toString())  # type: ignore[attr-defined]
    for column in ("x", "d"):
        pushed = _plan(back.where(f"{column} IS NOT NULL AND {column} > {'1' if column == 'x' else 'current_date()'}"))
        assert f"({column}" not in pushed.split("PushedFilters: [", 1)[1].split("]", 1)[0].replace(
            f"IsNotNull({column})", ""), column

