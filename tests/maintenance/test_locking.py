"""Vacuum and log truncation hold the table's maintenance lock while they delete."""

from __future__ import annotations

from datetime import timedelta

import pyarrow as pa
import pytest

import sleeper_spark as ss
from sleeper_spark.commit import utc_now
from sleeper_spark.maintenance import locking, truncate_log
from sleeper_spark.maintenance.locking import maintenance_lock_path
from sleeper_spark.storage.locks import Mutex, lock_status


def test_vacuum_waits_for_a_running_maintenance_job_then_names_it(local_catalog: ss.Catalog,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    # Given a table whose maintenance lock is held by another job
    monkeypatch.setattr(locking, "WAIT_S", 0.3)
    table = local_catalog.create_table("events", pa.schema([("x", pa.int64())]))
    for x in range(12):
        table.write(pa.table({"x": [x]}))
    table.create_state_snapshot()
    table.write(pa.table({"x": [99]}))
    held = Mutex(table.store, maintenance_lock_path(table), label="compaction elsewhere").acquire()
    # When vacuum and truncation run, Then they refuse with the holder's name
    with pytest.raises(ss.LockHeldError, match="compaction elsewhere"):
        table.vacuum(older_than=timedelta(0))
    with pytest.raises(ss.LockHeldError):
        truncate_log(table, keep_versions_after=timedelta(0), safety_margin=0, now=utc_now() + timedelta(hours=1))
    # And once the holder is done, vacuum runs and leaves no lock behind
    held.release()
    table.vacuum(older_than=timedelta(0))
    assert lock_status(table.store, maintenance_lock_path(table)) == []


def test_a_dry_run_takes_no_lock(local_catalog: ss.Catalog, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(locking, "WAIT_S", 0.3)
    table = local_catalog.create_table("events", pa.schema([("x", pa.int64())]))
    with Mutex(table.store, maintenance_lock_path(table), label="other"):
        assert table.vacuum(older_than=timedelta(0), dry_run=True).dry_run
