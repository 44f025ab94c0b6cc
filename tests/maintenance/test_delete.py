"""delete_where: whole files where statistics prove it, rewrites elsewhere, one snapshot."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import sleeper_spark as ss
from sleeper_spark import maintenance
from tests.maintenance.tables import SCHEMA, data_files_on_disk, row_set, rows, table_of_appends


def test_a_predicate_on_the_partition_drops_whole_files_without_rewriting(local_catalog: ss.Catalog) -> None:
    # Given files in partitions d1 and d2
    table = table_of_appends(local_catalog, 6)
    d1_files = {f.path for f in table.files() if f.partition["day"] == "d1"}
    # When the d2 rows are deleted
    snapshot = table.delete_where(None, pc.field("day") == "d2")
    # Then the d2 files were removed whole and nothing was written
    assert snapshot.operation == "delete"
    assert (snapshot.files_removed, snapshot.files_added, snapshot.rows_removed) == (3, 0, 3)
    assert {f.path for f in table.files()} == d1_files


def test_min_max_statistics_that_prove_a_full_match_drop_the_file(local_catalog: ss.Catalog) -> None:
    # Given one file with n in 0..9 and one with n in 10..19
    table = local_catalog.create_table("events", SCHEMA)
    table.write(rows(0, 10, "d1"))
    table.write(rows(10, 10, "d1"))
    # When every row with n < 10 is deleted
    snapshot = table.delete_where(None, pc.field("n") < 10)
    # Then the first file went whole, the second was untouched
    assert (snapshot.files_removed, snapshot.files_added) == (1, 0)
    assert sorted(table.scan().column("n").to_pylist()) == list(range(10, 20))


def test_partly_matching_files_are_rewritten_and_the_rest_left_alone(local_catalog: ss.Catalog) -> None:
    # Given two files whose ranges both overlap the predicate, one of which holds no matching row
    table = local_catalog.create_table("events", SCHEMA)
    table.write(rows(0, 10, "d1"))
    table.write(pa.table({"day": ["d1", "d1"], "n": [1, 21], "label": ["x", "y"]}, schema=SCHEMA))
    untouched = table.files()[1].path
    # When the even rows are deleted
    snapshot = table.delete_where(None, pc.field("n").isin([0, 2, 4, 6, 8, 20]))
    # Then the first file was rewritten with the odd rows, and the other one kept as it was
    assert (snapshot.files_removed, snapshot.files_added) == (1, 1)
    assert (snapshot.rows_removed, snapshot.rows_added) == (10, 5)
    assert untouched in {f.path for f in table.files()}
    assert sorted(table.scan().column("n").to_pylist()) == [1, 1, 3, 5, 7, 9, 21]
    assert table.verify().ok


def test_rows_where_the_predicate_is_null_are_kept(local_catalog: ss.Catalog) -> None:
    # Given rows with and without a label
    table = local_catalog.create_table("events", SCHEMA)
    table.write(pa.table({"day": ["d1"] * 3, "n": [1, 2, 3], "label": ["a", None, "b"]}, schema=SCHEMA))
    # When rows labelled "a" are deleted
    table.delete_where(None, pc.field("label") == "a")
    # Then the unlabelled row stays, as SQL's DELETE would keep it
    assert sorted(table.scan().column("n").to_pylist()) == [2, 3]


def test_a_delete_that_matches_nothing_commits_an_empty_snapshot(local_catalog: ss.Catalog) -> None:
    table = table_of_appends(local_catalog, 4)
    files = {f.path for f in table.files()}
    snapshot = table.delete_where(None, pc.field("n") > 1000)
    assert (snapshot.operation, snapshot.files_removed, snapshot.files_added) == ("delete", 0, 0)
    assert {f.path for f in table.files()} == files


def test_bad_predicates_are_refused_before_anything_is_committed(local_catalog: ss.Catalog) -> None:
    table = table_of_appends(local_catalog, 2)
    version = table.latest().version
    with pytest.raises(ss.ConfigError, match="a Spark SQL condition needs a SparkSession"):
        table.delete_where(None, "day = 'd1'")
    with pytest.raises(ss.ConfigError, match=r"for a Spark SQL condition call table\.delete_where"):
        maintenance.delete_where(table, None, "day = 'd1'")
    with pytest.raises(ss.ConfigError, match="does not fit"):
        table.delete_where(None, pc.field("nope") == 1)
    with pytest.raises(ss.ConfigError, match="Expression"):
        table.delete_where(None, 42)
    assert table.latest().version == version


def test_a_delete_racing_a_compaction_of_its_files_conflicts_and_cleans_up(local_catalog: ss.Catalog) -> None:
    # Given a compaction planned and written, and then a delete that rewrites the same files
    table = table_of_appends(local_catalog, 6)
    plan = maintenance.plan_compaction(table)
    written = maintenance.rewrite_plan(table, plan)
    table.delete_where(None, pc.field("n") == 3)
    on_disk = data_files_on_disk(table)
    # When the compaction commits, Then it conflicts and removes its own files only
    with pytest.raises(ss.CommitConflictError):
        maintenance.commit_compaction(table, plan, written)
    assert data_files_on_disk(table) == on_disk - {f.path for f in written}
    assert sorted(n for _, n, _ in row_set(table)) == [0, 1, 2, 4, 5]
