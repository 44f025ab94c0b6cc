"""DELETE by a Spark SQL condition (``t.delete_where(spark, "<condition>")``) against the truth: the
rows left are those the condition is not TRUE for, worked out in Python over the raw rows."""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyspark.errors import AnalysisException
from pyspark.sql import SparkSession

import sleeper_spark as ss
from sleeper_spark.log import InMemoryLogBackend
from sleeper_spark.spark.conditions.partition_conditions import files_where
from sleeper_spark.storage import LocalObjectStore, NativeConditionalWrites
from tests.fixtures.catalogs import memory_catalog

pytestmark = pytest.mark.spark

SCHEMA = pa.schema([("id", pa.int64()), ("tag", pa.string()), ("day", pa.date32()), ("n", pa.int32()),
                    ("note", pa.string())])
TAGS = ["a", "it's", "back\\slash", None]  # partition values SQL literals must escape, and NULL
DAYS = [dt.date(2024, 1, 1), dt.date(2024, 1, 2)]
Row = dict[str, Any]


def raw_rows(ids: range) -> list[Row]:
    """Four rows per (tag, day) in each 32 ids; ``n`` is NULL where id is a multiple of 5."""
    return [{"id": i, "tag": TAGS[i % 4], "day": DAYS[(i // 4) % 2], "n": None if i % 5 == 0 else i,
             "note": f"r{i}"} for i in ids]


def write_table(catalog: ss.Catalog) -> tuple[ss.Table, list[Row]]:
    """Two writes of 32 rows, each a file per (tag, day): 16 files of 4 rows."""
    table = catalog.create_table("t", SCHEMA, partition_by=["tag", "day"])
    raw = []
    for ids in (range(0, 32), range(32, 64)):
        rows = raw_rows(ids)
        table.write(pa.Table.from_pylist(rows, schema=SCHEMA))
        raw += rows
    return table, raw


def ids_of(table: ss.Table) -> list[int]:
    return sorted(row["id"] for row in table.scan().to_pylist())


def spark_jobs(spark: SparkSession) -> int:
    """The id the next Spark job gets: the difference over a call is how many jobs it started."""
    return int(spark._jsparkSession.sparkContext().dagScheduler().nextJobId())


def is_true(value: bool | None) -> bool:
    return value is True


def sql_not(value: bool | None) -> bool | None:
    return None if value is None else not value


def sql_cmp(left: Any, test: Callable[[Any], bool]) -> bool | None:
    return None if left is None else test(left)


# (condition over partition columns, its SQL value for a raw row: True / False / None)
PARTITION_CONDITIONS: list[tuple[str, Callable[[Row], bool | None]]] = [
    ("tag = \"it's\"", lambda r: sql_cmp(r["tag"], lambda t: t == "it's")),
    ("tag = 'back\\\\slash'", lambda r: sql_cmp(r["tag"], lambda t: t == "back\\slash")),
    ("tag IS NULL", lambda r: r["tag"] is None),
    ("NOT (tag = 'a')", lambda r: sql_not(sql_cmp(r["tag"], lambda t: t == "a"))),
    ("day >= '2024-01-02'", lambda r: r["day"] >= DAYS[1]),  # Spark casts the string to a date
    ("day = DATE '2024-01-01' AND tag LIKE '%\\'%'", lambda r: r["day"] == DAYS[0] and sql_cmp(
        r["tag"], lambda t: "'" in t)),
    ("tag IN ('a', NULL) OR day < '2024-01-02'", lambda r: True if r["day"] < DAYS[1] else (
        True if r["tag"] == "a" else None)),
    ("length(tag) > 3", lambda r: sql_cmp(r["tag"], lambda t: len(t) > 3)),
    ("true", lambda r: True),
    ("NULL", lambda r: None),
]


def test_files_where_selects_the_files_whose_partition_values_make_the_condition_true(
        spark: SparkSession, tmp_path: Path) -> None:
    # Given files in partitions of strings with quotes and backslashes, dates and NULL
    table, raw = write_table(ss.Catalog.local(str(tmp_path)))
    state = table.state()
    by_partition: dict[tuple[str | None, str | None], set[str]] = {}
    for file in table.files():
        by_partition.setdefault((file.partition["tag"], file.partition["day"]), set()).add(file.path)
    before = spark_jobs(spark)

    for condition, truth in PARTITION_CONDITIONS:
        # When Spark evaluates the condition over the partition values
        chosen = files_where(spark, state, condition)

        # Then exactly the files of the partitions it is TRUE for (NULL does not select)
        expected = {path for r in raw if is_true(truth(r)) for path in by_partition[(r["tag"], r["day"].isoformat())]}
        assert chosen is not None and {f.path for f in chosen} == expected, condition

    # and no condition started a Spark job
    assert spark_jobs(spark) == before
    # A condition naming a data column, an unknown one, or drawn per row is not over partitions alone
    for condition in ("n > 3", "tag = 'a' AND n > 3", "nosuch = 1", "rand() < 0.5", "tag ="):
        assert files_where(spark, state, condition) is None, condition


def test_files_where_writes_integer_boolean_and_null_partition_values_exactly(spark: SparkSession,
                                                                               tmp_path: Path) -> None:
    schema = pa.schema([("k", pa.int8()), ("big", pa.int64()), ("flag", pa.bool_()), ("x", pa.int32())])
    table = ss.Catalog.local(str(tmp_path)).create_table("t", schema, partition_by=["k", "big", "flag"])
    raw = [{"k": -3, "big": -2**63, "flag": True, "x": 1}, {"k": 7, "big": 2**63 - 1, "flag": False, "x": 2},
           {"k": None, "big": 0, "flag": None, "x": 3}]
    table.write(pa.Table.from_pylist(raw, schema=schema))
    state = table.state()
    path_of = {f.partition["k"]: f.path for f in table.files()}
    cases: list[tuple[str, set[str | None]]] = [
        ("k = -3", {"-3"}), ("big = -9223372036854775808", {"-3"}), ("big = 9223372036854775807", {"7"}),
        ("flag", {"-3"}), ("NOT flag", {"7"}), ("flag IS NULL AND k IS NULL", {None}), ("k + 1 > 0", {"7"}),
        ("coalesce(k, 0) = 0", {None}), ("k <=> NULL", {None}),
    ]
    for condition, partitions in cases:
        chosen = files_where(spark, state, condition)
        assert chosen is not None and {f.path for f in chosen} == {path_of[k] for k in partitions}, condition


def test_a_partition_condition_drops_whole_files_and_starts_no_spark_job(spark: SparkSession,
                                                                          tmp_path: Path) -> None:
    # Given 16 files over (tag, day) partitions
    table, raw = write_table(ss.Catalog.local(str(tmp_path)))
    kept_files = {f.path for f in table.files() if f.partition["tag"] != "it's"}
    before = spark_jobs(spark)

    # When the rows of one tag are deleted by a condition on partition columns
    snapshot = table.delete_where(spark, "tag = \"it's\" OR tag = 'zz'")

    # Then its files went whole, no Spark job ran and no data file was read
    assert spark_jobs(spark) == before
    assert snapshot.operation == "delete" and snapshot.files_added == 0
    assert snapshot.operation_metrics == {"rows_deleted": 16, "files_removed": 4, "files_rewritten": 0,
                                          "files_read": 0, "rows_copied": 0}
    assert {f.path for f in table.files()} == kept_files
    assert ids_of(table) == sorted(r["id"] for r in raw if r["tag"] != "it's")


@pytest.mark.usefixtures("io_path")
def test_a_data_condition_rewrites_only_files_with_matches_and_drops_those_it_empties(
        spark: SparkSession, catalog: ss.Catalog) -> None:
    # Given 16 files, n NULL in some rows
    table, raw = write_table(catalog)
    files_before = {(f.partition["tag"], f.partition["day"], f.path) for f in table.files()}

    # When the rows with n >= 30 are deleted
    snapshot = table.delete_where(spark, "n >= 30")

    # Then the rows left are those for which the condition is FALSE or NULL
    hit = {r["id"] for r in raw if r["n"] is not None and r["n"] >= 30}
    assert ids_of(table) == sorted(r["id"] for r in raw if r["id"] not in hit)
    # and of the files holding such rows, those emptied went whole and the rest were rewritten
    per_file: dict[tuple[Any, ...], list[bool]] = {}
    for r in raw:
        per_file.setdefault((r["id"] // 32, r["tag"], r["day"]), []).append(r["id"] in hit)
    emptied = sum(all(hits) for hits in per_file.values())
    partial = sum(any(hits) and not all(hits) for hits in per_file.values())
    assert emptied >= 1 and partial >= 1 and emptied + partial < len(per_file)
    assert snapshot.operation_metrics == {"rows_deleted": len(hit), "files_removed": emptied,
                                          "files_rewritten": partial, "files_read": emptied + partial,
                                          "rows_copied": 4 * partial - (len(hit) - 4 * emptied)}
    assert snapshot.files_removed == emptied + partial
    untouched = {path for _, _, path in files_before} - set(snapshot_removed(table, snapshot))
    assert len(untouched) == len(per_file) - emptied - partial


def snapshot_removed(table: ss.Table, snapshot: Any) -> list[str]:
    """The paths of the files live before ``snapshot`` and gone after it."""
    before = {f.path for f in table.files(version=snapshot.version - 1)}
    return sorted(before - {f.path for f in table.files(version=snapshot.version)})


def test_a_condition_mixing_partition_and_data_columns_keeps_null_rows(spark: SparkSession,
                                                                        tmp_path: Path) -> None:
    table, raw = write_table(ss.Catalog.local(str(tmp_path)))

    snapshot = table.delete_where(spark, "tag = \"it's\" AND NOT (n < 40)")

    # NOT (NULL < 40) is NULL: those rows stay, as do the other tags' rows
    hit = {r["id"] for r in raw if r["tag"] == "it's" and r["n"] is not None and not r["n"] < 40}
    assert hit and ids_of(table) == sorted(r["id"] for r in raw if r["id"] not in hit)
    assert snapshot.operation_metrics["rows_deleted"] == len(hit)
    # only the files of that tag may hold such rows, and only the second write's do
    assert snapshot.operation_metrics["files_read"] == 2


def test_an_empty_match_commits_an_empty_delete(spark: SparkSession, tmp_path: Path) -> None:
    table, raw = write_table(ss.Catalog.local(str(tmp_path)))
    files = {f.path for f in table.files()}

    by_data = table.delete_where(spark, "n > 1000")
    by_partition = table.delete_where(spark, "tag = 'zz'")

    for snapshot in (by_data, by_partition):
        assert (snapshot.operation, snapshot.files_removed, snapshot.files_added) == ("delete", 0, 0)
        assert snapshot.operation_metrics["rows_deleted"] == 0
    assert [s.operation for s in table.history()][-2:] == ["delete", "delete"]
    assert {f.path for f in table.files()} == files and len(ids_of(table)) == len(raw)


def test_a_bad_condition_raises_sparks_error_and_changes_nothing(spark: SparkSession, tmp_path: Path) -> None:
    table, _ = write_table(ss.Catalog.local(str(tmp_path)))
    version = table.latest().version

    with pytest.raises(AnalysisException, match="nosuch"):
        table.delete_where(spark, "nosuch = 1")
    with pytest.raises(AnalysisException):
        table.delete_where(spark, "tag = 'a' AND n >")
    with pytest.raises(ss.ConfigError, match="Spark SQL condition"):
        table.delete_where(spark, "  ")

    assert table.latest().version == version


def test_an_append_into_an_untouched_partition_does_not_fail_the_delete(
        spark: SparkSession, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    # Given a table on an in-memory log, and a rival writer on the same log
    store = LocalObjectStore(tmp_path / "warehouse")
    backend = InMemoryLogBackend(store, NativeConditionalWrites(store))
    table, raw = write_table(memory_catalog(backend))
    rival = memory_catalog(backend).table("t")
    log = backend.logs[table.table_id]
    elsewhere = [{**row, "tag": "new"} for row in raw_rows(range(100, 104))]

    def append(rows: list[Row]) -> None:
        log.at_start_of_next_append(lambda: rival.write(pa.Table.from_pylist(rows, schema=SCHEMA)))

    # When the rival appends into another partition while each kind of delete commits
    caplog.set_level(logging.WARNING, logger="sleeper_spark.spark.rows.row_changes")
    append(elsewhere[:2])
    table.delete_where(spark, "tag = 'a' AND n >= 30")
    append(elsewhere[2:])
    table.delete_where(spark, "tag IS NULL")

    # Then each landed on its first attempt, and every row is as both changes leave it
    assert not [r for r in caplog.records if "again" in r.getMessage()]
    gone = {r["id"] for r in raw if r["tag"] is None or (r["tag"] == "a" and r["n"] is not None and r["n"] >= 30)}
    assert ids_of(table) == sorted([*(r["id"] for r in raw if r["id"] not in gone), 100, 101, 102, 103])
    assert [s.operation for s in table.history()][-4:] == ["append", "delete", "append", "delete"]

    # When the rival appends a row the delete would have deleted, it runs again and deletes it too
    append([{**raw_rows(range(201, 202))[0], "tag": "a"}])
    table.delete_where(spark, "tag = 'a' AND n >= 30")
    assert [r for r in caplog.records if "running the delete again" in r.getMessage()]
    assert 201 not in ids_of(table)
