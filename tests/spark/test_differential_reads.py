"""Every read path returns exactly the rows a filter selects from the raw rows.

Random tables (see :mod:`tests.fixtures.random_tables`) are written in three chunks, by Spark's
own Parquet writer (the helper's native write, with tiny row groups and pages), by the Python
data source (``format("sleeper")`` in a session switched off the jar) and by the pyarrow writer
(``t.write`` with Arrow data), into one table. Random filters then go through every read path:

- the helper read on Spark's Parquet reader (the jar's file index, then parquet-mr's row-group
  and page filters), on the Python data source, and as a Connect session without the jar reads
  (Spark's ``parquet`` source over the version's folders, see
  :mod:`sleeper_spark.spark.connect.parquet_scan`), ``spark.read.format("sleeper")`` on Spark's reader,
  and the SQL catalog's table (Spark's file source scan over the same index, and Spark's V2
  Parquet scan over it, as a session without the extension reads); each against
  Spark's own answer over the raw rows (an in-memory DataFrame: no file, no statistic, no pruning);
- ``t.scan(filter=...)`` against pyarrow's answer over the raw rows;
- ``t.delete_where`` followed by a scan, and by the no-jar read (the rewritten files stay on disk
  beside their replacements), against the raw rows less pyarrow's matches;
- then the table clustered by two random columns and compacted into small files (rows in Hilbert
  order), and a few more filters through every path against the rows that remain.

``verify(deep=True)`` must find every file's statistics true to its rows.

The suite runs one table, 7 filters and 2 after clustering (four tables, 14 and 6 filters each with
``SLEEPER_LONG_RUN=1``); ``SLEEPER_DIFFERENTIAL_TABLES=N`` runs N (and ``SLEEPER_DIFFERENTIAL_SEED=S``
starts at seed S). A failure names the seed, the path and the filter: the same seed replays it
exactly.
"""

from __future__ import annotations

import datetime as dt
import os
import random
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

import sleeper_spark as ss
from sleeper_spark.spark.common.jvm import NATIVE_CONF, catalog_conf
from sleeper_spark.spark.connect.connect_read import READ_CONF, read_parquet
from tests.fixtures.random_tables import Filter, RandomTable, random_filter, random_table
from tests.reliability.budget import LONG_RUN

pytestmark = pytest.mark.spark

FILE_SOURCE_SCAN_CONF = "spark.sleeper_spark.catalog.fileSourceScan"  # CatalogReadRule.CONF in the jar

# Each table costs about a minute on 2 cores: one by default, four in a long run (SLEEPER_LONG_RUN=1).
TABLES = int(os.environ.get("SLEEPER_DIFFERENTIAL_TABLES", "4" if LONG_RUN else "1"))
FIRST_SEED = int(os.environ.get("SLEEPER_DIFFERENTIAL_SEED", "1"))
ROWS = 900
FILTERS_PER_TABLE = 14 if LONG_RUN else 7
CLUSTERED_FILTERS = 6 if LONG_RUN else 2
# parquet-mr's writer: row groups of a few dozen rows, pages of a few, checked every 5 rows.
TINY_PARQUET = {"parquet.block.size": "2048", "parquet.page.size": "256", "parquet.page.row.count.limit": "16",
                "parquet.block.size.row.check.min": "5", "parquet.block.size.row.check.max": "5",
                "parquet.page.size.row.check.min": "4", "parquet.page.size.row.check.max": "4"}


@contextmanager
def session_settings(spark: SparkSession, settings: dict[str, str]) -> Iterator[None]:
    """Session settings (they reach parquet-mr through the Hadoop conf) for the ``with`` block."""
    for key, value in settings.items():
        spark.conf.set(key, value)
    try:
        yield
    finally:
        for key in settings:
            spark.conf.unset(key)


def write_three_ways(spark: SparkSession, catalog: ss.Catalog, name: str, table: RandomTable) -> ss.Table:
    third = table.rows.num_rows // 3
    by_spark = spark.createDataFrame(table.chunk(0, third)).coalesce(1)
    with session_settings(spark, TINY_PARQUET):
        catalog.write(by_spark, name, partition_by=list(table.partition_by))
    by_source = spark.createDataFrame(table.chunk(third, 2 * third)).coalesce(1)
    # The Python data source's writer: with the jar, format("sleeper") would take Spark's own writer
    with session_settings(spark, {NATIVE_CONF: "false"}):
        (by_source.write.format("sleeper").options(**catalog.options()).option("row_group_rows", "23")
         .mode("append").save(name))
    handle = catalog.table(name)
    handle.write(table.chunk(2 * third, table.rows.num_rows))
    return handle


def sql_table(spark: SparkSession, catalog: ss.Catalog, name: str) -> Any:
    """The table through the SQL catalog ``difflake``, (re)configured for ``catalog``."""
    conf = catalog_conf("difflake", catalog)
    if any(spark.conf.get(key, None) != value for key, value in conf.items()):
        for key, value in conf.items():
            spark.conf.set(key, value)
        spark._jsparkSession.sessionState().catalogManager().reset()  # forget the last test's instance
    return spark.table(f"difflake.{name}")


def spark_ids(df: Any) -> list[int]:
    return sorted(row[0] for row in df.select("id").collect())


def arrow_ids(rows: pa.Table) -> list[int]:
    return sorted(rows.column("id").to_pylist())


def check_spark_paths(spark: SparkSession, catalog: ss.Catalog, name: str, truth: Any, where: Filter,
                      seed: int) -> None:
    expected = spark_ids(truth.where(where.spark()))
    for path in ("native", "python", "no jar", "format", "sql", "sql v2"):
        settings = {NATIVE_CONF: "false" if path == "python" else "true"}
        if path == "sql v2":  # the catalog's tables on Spark's V2 Parquet scan, as without the extension
            settings[FILE_SOURCE_SCAN_CONF] = "false"
        with session_settings(spark, settings):
            if path == "no jar":
                loaded = no_jar_read(spark, catalog.table(name))
            elif path == "format":
                loaded = spark.read.format("sleeper").options(**catalog.options()).load(name)
            elif path.startswith("sql"):
                loaded = sql_table(spark, catalog, name)
            else:
                loaded = catalog.read(spark, name)
            got = spark_ids(loaded.where(where.spark()))
        assert got == expected, (f"seed {seed}, {path} read, filter {where}: {len(got)} rows, expected "
                                 f"{len(expected)}; missing {sorted(set(expected) - set(got))[:10]}, "
                                 f"extra {sorted(set(got) - set(expected))[:10]}")


def no_jar_read(spark: SparkSession, table: ss.Table) -> Any:
    """The helper read a Spark Connect session whose server has no jar takes."""
    with session_settings(spark, {READ_CONF: "parquet"}):
        return read_parquet(table, spark, None)


def test_every_read_path_returns_the_rows_the_filter_selects(spark: SparkSession, catalog: ss.Catalog) -> None:
    for seed in range(FIRST_SEED, FIRST_SEED + TABLES):
        # Given a random table written by all three writers
        rng = random.Random(seed)
        table = random_table(rng, ROWS)
        name = f"diff{seed}"
        handle = write_three_ways(spark, catalog, name, table)
        # Not cached: the in-memory cache skips batches by min/max that leave NaN out, so a cached
        # DataFrame itself misses NaN rows for "f > x" (seen with Spark 4.3).
        truth = spark.createDataFrame(table.rows)
        assert handle.verify(deep=True).ok, f"seed {seed}: {handle.verify(deep=True).problems}"

        for _ in range(FILTERS_PER_TABLE):
            # When a random filter is applied on each read path
            where = random_filter(rng, table)

            # Then each returns exactly the rows its engine selects from the raw rows
            check_spark_paths(spark, catalog, name, truth, where, seed)
            scanned = arrow_ids(handle.scan(filter=where.arrow()))
            assert scanned == arrow_ids(table.rows.filter(where.arrow())), f"seed {seed}, scan, filter {where}"

        # And a delete by a random filter removes exactly the rows it matches
        remaining = table.rows
        for _ in range(2):
            where = random_filter(rng, table)
            handle.delete_where(spark, where.arrow())
            matched = set(arrow_ids(remaining.filter(where.arrow())))
            remaining = remaining.filter(pa.array([i not in matched for i in remaining.column("id").to_pylist()]))
            assert arrow_ids(handle.scan()) == arrow_ids(remaining), f"seed {seed}, delete_where {where}"
            assert spark_ids(no_jar_read(spark, handle)) == arrow_ids(remaining), f"seed {seed}, no-jar read"

        # And once clustered by two random columns and compacted into small files, every path still
        # reads exactly what the filter selects from the rows that remain
        columns = clusterable_columns(handle)
        handle.set_clustering(rng.sample(columns, min(2, len(columns))))
        assert handle.compact(spark, target_file_bytes=4096) is not None, f"seed {seed}: nothing clustered"
        assert handle.verify(deep=True).ok, f"seed {seed}: {handle.verify(deep=True).problems}"
        truth = spark.createDataFrame(remaining)
        for _ in range(CLUSTERED_FILTERS):
            where = random_filter(rng, table)
            check_spark_paths(spark, catalog, name, truth, where, seed)
            scanned = arrow_ids(handle.scan(filter=where.arrow()))
            assert scanned == arrow_ids(remaining.filter(where.arrow())), f"seed {seed}, clustered scan, {where}"


def clusterable_columns(table: ss.Table) -> list[str]:
    """The columns a table can cluster by: not a partition column, and of a type with an order."""
    state = table.state()
    return [f.name for f in state.schema.fields
            if f.name not in state.partition_by and f.type.name not in ("list", "struct", "map")]


# -- cases the random search (or users) found once, kept for good ------------------------------


def test_a_null_heavy_row_group_of_a_spark_file_keeps_its_values(spark: SparkSession, catalog: ss.Catalog) -> None:
    # Given a file Spark wrote whose first row groups hold as many nulls as values, then large values
    rows = [(i, i if i % 4 == 0 else None) for i in range(400)] + [(i, 100000 + i) for i in range(400, 2000)]
    with session_settings(spark, {"parquet.block.size": "2048"}):
        catalog.write(spark.createDataFrame(rows, "id long, x long").coalesce(1), "t")
    table = catalog.table("t")

    # Then reads, scans and deletes find the small values
    assert catalog.read(spark, "t").where("x < 1000").count() == 100
    assert table.scan(filter=pa.compute.field("x") < 1000).num_rows == 100
    deleted = table.delete_where(spark, pa.compute.field("x") < 1000)
    assert deleted.rows_removed - deleted.rows_added == 100  # the file is rewritten without them
    assert table.scan().num_rows == 1900


def test_a_nan_in_a_later_row_group_of_a_spark_file_hides_no_value(spark: SparkSession, catalog: ss.Catalog) -> None:
    # Given a file Spark wrote in which one row group starts with NaN, followed by large values
    rows = [(i, float(i)) for i in range(600)] + [(600, float("nan"))] + [(601 + i, 5000.0 + i) for i in range(10)]
    with session_settings(spark, {"parquet.block.size": "1024"}):
        catalog.write(spark.createDataFrame(rows, "id long, x double").coalesce(1), "t")

    # Then the values after the NaN are found
    assert catalog.read(spark, "t").where("x = 5005.0").count() == 1
    assert sql_table(spark, catalog, "t").where("x = 5005.0").count() == 1
    assert catalog.table("t").scan(filter=pa.compute.field("x") > 1000).num_rows == 10
    assert catalog.table("t").verify(deep=True).ok


def test_a_row_group_of_negative_zeros_matches_zero(spark: SparkSession, catalog: ss.Catalog) -> None:
    # Given a file whose first row group holds -0.0 and no 0.0
    catalog.write(pa.table({"id": range(40), "d": [-0.0] * 20 + [1.0 + i for i in range(20)]}), "t")

    # Then both spellings of zero match its rows on Spark's reader (parquet-mr's dictionary filter told them apart)
    for loaded in (catalog.read(spark, "t"), sql_table(spark, catalog, "t")):
        assert loaded.where("d = -0.0").count() == 20
        assert loaded.where("d = 0.0").count() == 20


@pytest.mark.parametrize("column, sql_type, value", [
    ("ts", "timestamp", dt.datetime(1582, 10, 10, 12, tzinfo=dt.timezone.utc)),
    ("d", "date", dt.date(1582, 10, 10)),
])
def test_a_date_or_time_in_the_calendar_gap_is_found(spark: SparkSession, catalog: ss.Catalog, column: str,
                                                     sql_type: str, value: dt.date) -> None:
    # Given rows with a date or time that the hybrid Julian calendar lacks (Spark pushes filters down in it)
    arrow_type = pa.timestamp("us", tz="UTC") if sql_type == "timestamp" else pa.date32()
    catalog.write(pa.table({"id": range(30), column: pa.array([value] * 10 + [None] * 20, arrow_type)}), "t")

    # When Spark's reader filters on it (V1 for the helper, V2 for the SQL catalog)
    matches = F.col(column) == F.lit(value.isoformat()).cast(sql_type)
    found = [loaded.where(matches).count() for loaded in (catalog.read(spark, "t"), sql_table(spark, catalog, "t"))]

    # Then parquet-mr did not skip its row group for a literal moved to 1582-10-15
    assert found == [10, 10]
