"""A table's changes through Spark's own API (``spark.read.changes``, ``CHANGES FROM``), checked
against the rows the table holds at each version."""

from __future__ import annotations

from collections import Counter
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from pyspark.sql import SparkSession

import sleeper_spark as ss
from sleeper_spark.spark.changes import DRIVER_BYTES_CONF
from tests.spark.conftest import io_path, lake

pytestmark = pytest.mark.spark

__all__ = ["io_path", "lake"]


def changed(rows: list[Any]) -> Counter[tuple[Any, ...]]:
    return Counter((r["_commit_version"], r["_change_type"], r["id"], r["v"]) for r in rows)


def scanned(table: ss.Table, version: int) -> Counter[tuple[Any, ...]]:
    data = table.scan(version).to_pydict()
    return Counter(zip(data["id"], data["v"], strict=True))


@pytest.fixture
def orders(spark: SparkSession, lake: ss.Catalog) -> ss.Table:
    """A partitioned table with versions 2..6: two appends, an UPDATE, a DELETE and a MERGE."""
    spark.sql("CREATE TABLE lake.db.orders (id BIGINT, v STRING, day STRING) USING sleeper PARTITIONED BY (day)")
    spark.sql("INSERT INTO lake.db.orders VALUES (1, 'a', 'd1'), (2, 'b', 'd1'), (3, 'c', 'd2'), (3, 'c', 'd2')")
    spark.sql("INSERT INTO lake.db.orders VALUES (4, 'd', 'd2'), (5, NULL, 'd1')")
    spark.sql("UPDATE lake.db.orders SET v = 'B' WHERE id = 2")
    spark.sql("DELETE FROM lake.db.orders WHERE id = 3")
    spark.sql("MERGE INTO lake.db.orders t USING (SELECT 4 AS id, 'D' AS v, 'd2' AS day UNION ALL "
              "SELECT 6, 'f', 'd1') s ON t.id = s.id WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *")
    return lake.table("db.orders")


def test_each_version_s_changes_are_what_it_did_to_the_rows(spark: SparkSession, orders: ss.Table,
                                                             io_path: str) -> None:
    # When each version's changes are read through SQL
    for version in range(2, 7):
        rows = spark.sql(f"SELECT * FROM lake.db.orders CHANGES FROM VERSION {version} TO VERSION {version}").collect()
        # Then its deletes are the rows it took away and its inserts the rows it added, copies excluded
        before, after = scanned(orders, version - 1), scanned(orders, version)
        expected = Counter({(version, "delete", *row): n for row, n in (before - after).items()})
        expected.update({(version, "insert", *row): n for row, n in (after - before).items()})
        assert changed(rows) == expected, version
    # And the UPDATE of one row of a rewritten file is one delete and one insert
    update = spark.sql("SELECT * FROM lake.db.orders CHANGES FROM VERSION 4 TO VERSION 4").collect()
    assert sorted((r["_change_type"], r["id"], r["v"]) for r in update) == [("delete", 2, "b"), ("insert", 2, "B")]


def test_spark_read_changes_takes_spark_s_range_options(spark: SparkSession, orders: ss.Table, io_path: str) -> None:
    # When the range is given as options, with the end left out, and with bounds excluded
    from_three = spark.read.option("startingVersion", "3").changes("lake.db.orders").collect()
    exclusive = (spark.read.option("startingVersion", "3").option("endingVersion", "5")
                 .option("startingBoundInclusive", "false").option("endingBoundInclusive", "false")
                 .changes("lake.db.orders").collect())
    # Then they are the Python reader's rows of the same range
    assert changed(from_three) == arrow_changes(orders, 3, 6)
    assert changed(exclusive) == arrow_changes(orders, 4, 4)
    # And the commit timestamp is the version's
    assert {r["_commit_version"]: r["_commit_timestamp"].replace(tzinfo=None) for r in exclusive} == {
        4: orders.snapshot(4).committed_at.astimezone(timezone.utc).replace(tzinfo=None)}


def arrow_changes(table: ss.Table, first: int, last: int) -> Counter[tuple[Any, ...]]:
    data = table.changes(first, last).to_pydict()
    return Counter(zip(data["_commit_version"], data["_change_type"], data["id"], data["v"], strict=True))


def test_timestamp_ranges_select_the_versions_committed_in_them(spark: SparkSession, orders: ss.Table) -> None:
    # Given the commit times of versions 3 and 5
    third, fifth = orders.snapshot(3).committed_at, orders.snapshot(5).committed_at
    # When changes are read from the third's time to the fifth's
    rows = spark.sql(f"SELECT * FROM lake.db.orders CHANGES FROM TIMESTAMP '{utc_text(third)}' "
                     f"TO TIMESTAMP '{utc_text(fifth)}'").collect()
    # Then they are the changes of versions 3..5
    assert changed(rows) == arrow_changes(orders, 3, 5)
    # And a time after the last commit has no changes
    later = orders.latest().committed_at + timedelta(hours=1)
    assert spark.sql(f"SELECT * FROM lake.db.orders CHANGES FROM TIMESTAMP '{utc_text(later)}'").count() == 0


def utc_text(moment: datetime) -> str:
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f+00:00")


def test_compute_updates_pairs_the_images_by_the_declared_row_identity(spark: SparkSession, lake: ss.Catalog) -> None:
    # Given a table whose rows are identified by id (unique in every version), with an UPDATE, a
    # MERGE that updates one row and inserts another, and a DELETE
    spark.sql("CREATE TABLE lake.db.keyed (id BIGINT, v STRING) USING sleeper TBLPROPERTIES ('changes.row_id' = 'id')")
    spark.sql("INSERT INTO lake.db.keyed VALUES (1, 'a'), (2, 'b'), (3, 'c'), (4, 'd')")
    spark.sql("UPDATE lake.db.keyed SET v = 'B' WHERE id = 2")
    spark.sql("MERGE INTO lake.db.keyed t USING (SELECT 4 AS id, 'D' AS v UNION ALL SELECT 6, 'f') s ON t.id = s.id "
              "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *")
    spark.sql("DELETE FROM lake.db.keyed WHERE id = 3")
    # When the changes after the insert are read with computeUpdates
    rows = (spark.read.option("startingVersion", "3").option("computeUpdates", "true")
            .changes("lake.db.keyed").collect())
    # Then each updated row is a pre- and a post-image; the insert and the delete stay what they are
    assert sorted((r["_commit_version"], r["_change_type"], r["id"], r["v"]) for r in rows) == [
        (3, "update_postimage", 2, "B"), (3, "update_preimage", 2, "b"),
        (4, "insert", 6, "f"), (4, "update_postimage", 4, "D"), (4, "update_preimage", 4, "d"),
        (5, "delete", 3, "c")]
    # And net changes collapse the whole history to the rows the table holds now
    net = spark.read.option("startingVersion", "2").option("deduplicationMode", "netChanges") \
        .changes("lake.db.keyed").collect()
    assert sorted((r["_change_type"], r["id"], r["v"]) for r in net) == \
        sorted(("insert", i, v) for (i, v) in scanned(lake.table("db.keyed"), 5))


def test_what_cannot_be_read_is_a_sleeper_error_that_says_what_to_do(spark: SparkSession, orders: ss.Table) -> None:
    # A computeUpdates without a row identity names the property to set
    with pytest.raises(Exception) as no_identity:
        spark.read.option("startingVersion", "2").option("computeUpdates", "true").changes("lake.db.orders").collect()
    error = ss.sleeper_error(no_identity.value)
    assert isinstance(error, ss.ConfigError) and "changes.row_id" in str(error)
    # A version the table does not have yet
    with pytest.raises(Exception) as too_far:
        spark.sql("SELECT * FROM lake.db.orders CHANGES FROM VERSION 2 TO VERSION 60").collect()
    assert isinstance(ss.sleeper_error(too_far.value), ss.SnapshotNotFoundError)
    # A start after the latest version is an empty range, what an up-to-date consumer reads
    assert spark.sql("SELECT * FROM lake.db.orders CHANGES FROM VERSION 7").count() == 0


def test_versions_that_removed_files_are_compared_in_one_task_without_a_shuffle(
        spark: SparkSession, orders: ss.Table) -> None:
    # When the changes of the UPDATE, DELETE and MERGE are planned, by default and with the
    # driver comparing no bytes itself
    small = orders.read_changes(spark, 4, 6)
    spark.conf.set(DRIVER_BYTES_CONF, "0")
    try:
        large = orders.read_changes(spark, 4, 6)
        plan = large._jdf.queryExecution().executedPlan().toString()
    finally:
        spark.conf.unset(DRIVER_BYTES_CONF)
    # Then small files are compared on the driver (Spark gets rows, and reads no file), larger ones
    # by Spark's Parquet reader with no exchange; both give the pyarrow reader's rows
    assert "FileScan" not in small._jdf.queryExecution().executedPlan().toString()
    assert "FileScan parquet" in plan and "Exchange" not in plan
    assert changed(small.collect()) == changed(large.collect()) == arrow_changes(orders, 4, 6)
