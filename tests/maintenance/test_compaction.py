"""Compaction on the local catalog: what it picks, what it commits, and how it fails."""

from __future__ import annotations

import pyarrow.compute as pc
import pytest

import sleeper_spark as ss
from sleeper_spark import maintenance
from tests.maintenance.tables import data_files_on_disk, disk_path, row_set, table_of_appends


def test_compaction_rewrites_the_small_files_of_each_partition_into_one(local_catalog: ss.Catalog) -> None:
    # Given 20 one-row appends over two partitions: 20 small files
    table = table_of_appends(local_catalog, 20)
    before = row_set(table)
    # When it is compacted with the default target
    snapshot = table.compact(None)
    # Then one "compact" snapshot replaced the 20 files by one per partition, with the same rows
    assert snapshot is not None and snapshot.operation == "compact"
    assert (snapshot.files_removed, snapshot.files_added) == (20, 2)
    assert snapshot.rows_removed == snapshot.rows_added == 20
    assert sorted(str(f.partition["day"]) for f in table.files()) == ["d1", "d2"]
    assert row_set(table) == before
    assert table.verify().ok
    # And the versions before it still read the old files
    assert len(table.files(version=snapshot.version - 1)) == 20


def test_compaction_packs_groups_up_to_the_target_and_leaves_single_leftovers(local_catalog: ss.Catalog) -> None:
    # Given 10 small files in one partition, and a target that fits three and a half of them
    table = table_of_appends(local_catalog, 10, days=("d1",))
    target = int(max(f.size_bytes for f in table.files()) * 3.5)
    # When it is compacted
    snapshot = table.compact(None, target_file_bytes=target)
    # Then groups of 3, 3, 3 were rewritten and the single leftover file was not touched
    assert snapshot is not None and (snapshot.files_removed, snapshot.files_added) == (9, 3)
    assert len(table.files()) == 4 and table.scan().num_rows == 10


def test_nothing_to_compact_returns_none_and_commits_nothing(local_catalog: ss.Catalog) -> None:
    # Given files that are all at least half the target size
    table = table_of_appends(local_catalog, 6)
    target = min(f.size_bytes for f in table.files()) * 2
    version = table.latest().version
    # When it is compacted, Then there is nothing to do
    assert table.compact(None, target_file_bytes=target) is None
    assert table.latest().version == version


def test_where_limits_compaction_to_the_files_it_may_match(local_catalog: ss.Catalog) -> None:
    # Given small files in two partitions
    table = table_of_appends(local_catalog, 12)
    # When only day d2 is compacted
    snapshot = table.compact(None, where=pc.field("day") == "d2")
    # Then d1 keeps its six files and d2 has one
    assert snapshot is not None and snapshot.files_removed == 6
    by_day = sorted(str(f.partition["day"]) for f in table.files())
    assert by_day == ["d1"] * 6 + ["d2"]
    assert table.scan().num_rows == 12


def test_two_compactions_of_the_same_files_one_wins_the_other_conflicts_and_cleans_up(
    local_catalog: ss.Catalog,
) -> None:
    # Given two compactions planned and written on the same state
    table = table_of_appends(local_catalog, 8)
    rival = ss.Catalog.local(local_catalog.config.warehouse).table("events")
    before = row_set(table)
    originals = data_files_on_disk(table)
    plan = maintenance.plan_compaction(table)
    written = maintenance.rewrite_plan(table, plan)
    assert {f.path for f in written} <= data_files_on_disk(table)
    # When the rival compacts and commits first
    winner = rival.compact(None)
    assert winner is not None
    # Then the other commit fails with a conflict, and its files are gone
    with pytest.raises(ss.CommitConflictError, match="compact"):
        maintenance.commit_compaction(table, plan, written)
    assert data_files_on_disk(table) == originals | {f.path for f in rival.files()}
    assert table.latest().version == winner.version
    assert row_set(table) == before and table.verify().ok


def test_a_rewrite_that_fails_deletes_what_it_wrote_and_commits_nothing(local_catalog: ss.Catalog) -> None:
    # Given small files in two partitions, one of which has lost a file
    table = table_of_appends(local_catalog, 8)
    lost = next(f for f in table.files() if f.partition["day"] == "d2")
    disk_path(table, lost.path).unlink()
    on_disk = data_files_on_disk(table)
    version = table.latest().version
    # When it is compacted
    with pytest.raises(ss.StorageError, match="missing"):
        table.compact(None)
    # Then nothing was committed and no new file stayed behind (d1's group had finished)
    assert table.latest().version == version
    assert data_files_on_disk(table) == on_disk


def test_compaction_refuses_bad_arguments_before_any_work(local_catalog: ss.Catalog) -> None:
    table = table_of_appends(local_catalog, 2)
    with pytest.raises(ss.ConfigError, match="target_file_bytes"):
        table.compact(None, target_file_bytes=0)
    with pytest.raises(ss.ConfigError, match="Expression"):
        table.compact(None, where="day = 'd1'")
    with pytest.raises(ss.ConfigError, match="executor"):
        maintenance.compact(table, None, executor="cluster")


def test_progress_is_reported_per_group(local_catalog: ss.Catalog) -> None:
    table = table_of_appends(local_catalog, 6)
    calls: list[tuple[str, int, int]] = []
    maintenance.compact(table, progress=lambda phase, done, total: calls.append((phase, done, total)))
    assert calls[0] == ("rewriting", 0, 2) and calls[-1] == ("rewriting", 2, 2)
