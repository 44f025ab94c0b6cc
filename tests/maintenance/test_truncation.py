"""Log truncation: old transactions go, a fresh open still works, time travel says why not."""

from __future__ import annotations

from datetime import timedelta

import pyarrow as pa
import pytest

import sleeper_spark as ss
from sleeper_spark.commit import utc_now
from sleeper_spark.maintenance import truncate_log
from tests.maintenance.tables import SCHEMA, disk_path, rows

# Truncation never cuts transactions younger than ten minutes; these tests look from later on.
LATER = utc_now() + timedelta(hours=1)


def appended(catalog: ss.Catalog, appends: int, snapshot_after: tuple[int, ...] = ()) -> ss.Table:
    """A table with ``appends`` appends (versions 2, 3, ...) and state snapshots at the given versions."""
    table = catalog.create_table("events", SCHEMA)
    for seq in range(appends):
        version = table.write(rows(seq, 1, "d1")).version
        if version in snapshot_after:
            table.create_state_snapshot()
    return table


def test_truncation_then_a_fresh_open_works_and_time_travel_past_the_cut_fails(local_catalog: ss.Catalog) -> None:
    # Given versions 2..13 with a state snapshot at 11
    table = appended(local_catalog, 12, snapshot_after=(11,))
    # When the log is truncated with no time-travel window and no margin
    report = truncate_log(table, now=LATER, keep_versions_after=timedelta(0), safety_margin=0)
    # Then transactions 1..11 are gone
    assert (report.up_to, report.transactions_deleted, report.first_transaction) == (11, 11, 12)
    assert table.head.transaction_log.first_number() == 12
    # And a fresh catalog opens the table from the state snapshot and the tail
    fresh = ss.Catalog.local(local_catalog.config.warehouse).table("events")
    assert fresh.scan().num_rows == 12 and [s.version for s in fresh.history()][-1] == 13
    assert fresh.scan(version=11).num_rows == 10 and fresh.scan(version=12).num_rows == 11
    # And time travel to a truncated version says why it cannot
    with pytest.raises(ss.SnapshotNotFoundError, match="truncated"):
        fresh.scan(version=5)
    # And the table takes writes and vacuum as before
    assert fresh.write(rows(100, 1, "d1")).version == 14
    assert ss.Catalog.local(local_catalog.config.warehouse).table("events").scan().num_rows == 13
    assert fresh.vacuum(older_than=timedelta(0)).deleted == ()
    assert fresh.verify().ok


def test_the_time_travel_window_keeps_every_transaction_inside_it(local_catalog: ss.Catalog) -> None:
    table = appended(local_catalog, 6, snapshot_after=(4,))
    report = truncate_log(table)  # 24 hours: every version is younger
    assert report.up_to is None and report.transactions_deleted == 0
    assert table.head.transaction_log.first_number() == 1


def test_the_safety_margin_and_a_version_floor_limit_the_cut(local_catalog: ss.Catalog) -> None:
    # Given state snapshots at 5 and 9, and version 10 current
    table = appended(local_catalog, 9, snapshot_after=(5, 9))
    # When the cut must stay 3 transactions below the newest state snapshot, Then it is at 5
    assert truncate_log(table, now=LATER, keep_versions_after=timedelta(0), safety_margin=3, dry_run=True).up_to == 5
    # When versions from 4 on must stay reachable, Then nothing can go
    assert truncate_log(table, now=LATER, keep_versions_after=4, safety_margin=0).up_to is None
    # When versions from 9 on must stay reachable, Then the cut is at 9
    report = truncate_log(table, now=LATER, keep_versions_after=9, safety_margin=0)
    assert report.up_to == 9 and report.first_transaction == 10


def test_a_dry_run_or_a_table_without_state_snapshots_deletes_nothing(local_catalog: ss.Catalog) -> None:
    table = appended(local_catalog, 4)
    assert truncate_log(table, now=LATER, keep_versions_after=timedelta(0), safety_margin=0).up_to is None
    table.create_state_snapshot()
    table.write(rows(9, 1, "d1"))
    report = truncate_log(table, now=LATER, keep_versions_after=timedelta(0), safety_margin=0, dry_run=True)
    assert report.dry_run and report.up_to == 5 and report.transactions_deleted == 5
    assert table.head.transaction_log.first_number() == 1


def test_the_spilled_bodies_of_truncated_transactions_go_with_them(local_catalog: ss.Catalog) -> None:
    # Given a transaction whose body spilled, covered by a later state snapshot
    table = local_catalog.create_table("wide", SCHEMA, partition_by=["day"])
    days = [f"day-{i:04d}" for i in range(800)]
    table.write(pa.table({"day": days, "n": list(range(800)), "label": days}, schema=SCHEMA))
    assert len(list(disk_path(table, "_log/bodies").iterdir())) == 1
    table.create_state_snapshot()
    table.write(rows(1000, 1, "day-0000"))
    # When the log is truncated past it
    report = truncate_log(table, now=LATER, keep_versions_after=timedelta(0), safety_margin=0)
    # Then its body is gone too, and the table still opens
    assert report.bodies_deleted == 1 and list(disk_path(table, "_log/bodies").iterdir()) == []
    assert ss.Catalog.local(local_catalog.config.warehouse).table("wide").scan().num_rows == 801


def test_truncation_refuses_bad_limits(local_catalog: ss.Catalog) -> None:
    table = appended(local_catalog, 1)
    with pytest.raises(ss.ConfigError, match="safety_margin"):
        truncate_log(table, safety_margin=-1)
    with pytest.raises(ss.ConfigError, match="keep_versions_after"):
        truncate_log(table, now=LATER, keep_versions_after=0)


def test_young_transactions_are_never_cut_whatever_the_window(local_catalog: ss.Catalog) -> None:
    table = appended(local_catalog, 12, snapshot_after=(11,))
    assert truncate_log(table, keep_versions_after=timedelta(0), safety_margin=0).up_to is None
    assert table.head.transaction_log.first_number() == 1


def test_a_writer_idle_past_a_truncation_reloads_instead_of_reusing_a_number(local_catalog: ss.Catalog) -> None:
    # Given a writer that holds the table open at version 2 (and rechecks the pointer when idle)
    warehouse = local_catalog.config.warehouse
    table = appended(local_catalog, 1)
    idle = ss.Catalog.local(warehouse, recheck_after_s=0).table("events")
    assert idle.state().version == 2
    # When others commit, snapshot the state and truncate the log past it
    for seq in range(12):
        table.write(rows(100 + seq, 1, "d1"))
    table.create_state_snapshot()
    table.write(rows(200, 1, "d1"))
    assert truncate_log(table, now=LATER, keep_versions_after=timedelta(0), safety_margin=0).up_to == 14
    # Then the idle writer's next write lands after the head, visible to a fresh reader
    snapshot = idle.write(rows(300, 1, "d1"))
    assert snapshot.version == 16
    fresh = ss.Catalog.local(warehouse).table("events")
    assert fresh.latest() == snapshot and fresh.scan().num_rows == 15
