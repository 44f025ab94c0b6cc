"""Vacuum: removes old unreferenced objects, never referenced or young ones."""

from __future__ import annotations

import shutil
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pyarrow as pa
import pytest

import sleeper_spark as ss
from sleeper_spark import maintenance
from tests.maintenance.tables import SCHEMA, age, data_files_on_disk, disk_path, row_set, table_of_appends

TWO_DAYS = timedelta(days=2)


def plant_orphan(table: ss.Table, name: str, older_by: timedelta | None) -> str:
    """A copy of a real data file that no transaction names (as a failed job leaves)."""
    relative = f"data/day=d1/{name}.parquet"
    shutil.copy(disk_path(table, table.files()[0].path), disk_path(table, relative))
    if older_by is not None:
        age(disk_path(table, relative), older_by)
    return relative


def test_vacuum_removes_old_orphans_and_nothing_referenced_or_young(local_catalog: ss.Catalog) -> None:
    # Given a table whose referenced files are all old, plus an old and a young orphan
    table = table_of_appends(local_catalog, 4)
    for file in table.files():
        age(disk_path(table, file.path), TWO_DAYS)
    old = plant_orphan(table, "old-orphan", TWO_DAYS)
    young = plant_orphan(table, "young-orphan", None)
    before = row_set(table)
    # When it is vacuumed with the default 24 hours
    report = table.vacuum()
    # Then only the old orphan is gone
    assert report.deleted == (old,) and report.data_files_deleted == 1 and not report.dry_run
    assert report.bytes_deleted == table.files()[0].size_bytes
    assert young in data_files_on_disk(table) and old not in data_files_on_disk(table)
    assert row_set(table) == before and table.verify().ok


def test_a_dry_run_reports_the_same_and_deletes_nothing(local_catalog: ss.Catalog) -> None:
    table = table_of_appends(local_catalog, 4)
    old = plant_orphan(table, "old-orphan", TWO_DAYS)
    on_disk = data_files_on_disk(table)
    report = table.vacuum(dry_run=True)
    assert report.dry_run and report.deleted == (old,) and report.data_files_deleted == 1
    assert data_files_on_disk(table) == on_disk


def test_files_replaced_before_the_window_go_and_versions_inside_it_keep_theirs(local_catalog: ss.Catalog) -> None:
    # Given 10 small files compacted into 2
    table = table_of_appends(local_catalog, 10)
    compacted = table.compact(None)
    assert compacted is not None
    # When vacuum runs now, with every version inside the 24-hour window
    assert maintenance.vacuum(table).deleted == ()
    # And again two days later, when only the compacted version is retained
    report = maintenance.vacuum(table, timedelta(hours=24), now=datetime.now(timezone.utc) + TWO_DAYS)
    # Then the ten replaced files are gone and the current ones stay
    assert report.data_files_deleted == 10
    assert data_files_on_disk(table) == {f.path for f in table.files()}
    assert table.verify().ok and table.scan().num_rows == 10


def test_a_version_current_at_the_cutoff_keeps_its_files(local_catalog: ss.Catalog) -> None:
    # Given files replaced by a compaction that committed after the cutoff
    table = table_of_appends(local_catalog, 6)
    compacted = table.compact(None)
    assert compacted is not None
    # When vacuum's one-hour window starts just before the compaction committed
    cutoff = compacted.committed_at - timedelta(microseconds=1)
    report = maintenance.vacuum(table, timedelta(hours=1), now=cutoff + timedelta(hours=1))
    # Then the version current at the cutoff (the one before the compaction) can still be read
    assert report.data_files_deleted == 0
    assert table.scan(version=compacted.version - 1).num_rows == 6


def test_unreferenced_spilled_bodies_go_and_referenced_ones_stay(local_catalog: ss.Catalog) -> None:
    # Given a transaction big enough to spill its body, and an old body no entry points to
    table = local_catalog.create_table("wide", SCHEMA, partition_by=["day"])
    days = [f"day-{i:04d}" for i in range(800)]
    table.write(pa.table({"day": days, "n": list(range(800)), "label": days}, schema=SCHEMA))
    bodies_dir = disk_path(table, "_log/bodies")
    (spilled,) = list(bodies_dir.iterdir())
    orphan = bodies_dir / ("0" * 64 + ".json")
    orphan.write_bytes(b"{}")
    for body in (spilled, orphan):
        age(body, TWO_DAYS)
    # When it is vacuumed
    report = table.vacuum()
    # Then only the orphan body is gone and the log still decodes
    assert report.bodies_deleted == 1 and report.deleted == ("_log/bodies/" + orphan.name,)
    assert spilled.exists() and not orphan.exists()
    assert ss.Catalog.local(local_catalog.config.warehouse).table("wide").scan().num_rows == 800


def test_state_snapshots_older_than_the_retained_versions_go_except_the_newest(local_catalog: ss.Catalog) -> None:
    # Given state snapshots at versions 3, 5 and 7
    table = local_catalog.create_table("events", SCHEMA)
    for seq in range(6):
        table.write(table_of_rows(seq))
        if seq % 2 == 1:
            table.create_state_snapshot()
    assert table.head.state_snapshots.numbers() == [3, 5, 7]
    # When vacuum runs now, Then all are kept (every version is retained)
    assert maintenance.vacuum(table).state_snapshots_deleted == 0
    # When it runs two days later, Then only the newest is needed
    phases: list[str] = []
    report = maintenance.vacuum(table, now=datetime.now(timezone.utc) + TWO_DAYS,
                                progress=lambda phase, done, total: phases.append(phase))
    assert report.state_snapshots_deleted == 2
    assert table.head.state_snapshots.numbers() == [7]
    assert "deleting" in phases
    assert ss.Catalog.local(local_catalog.config.warehouse).table("events").scan().num_rows == 6


def test_vacuum_refuses_a_negative_age(local_catalog: ss.Catalog) -> None:
    table = table_of_appends(local_catalog, 1)
    with pytest.raises(ss.ConfigError, match="older_than"):
        table.vacuum(older_than=timedelta(hours=-1))


def table_of_rows(seq: int) -> pa.Table:
    return pa.table({"day": ["d1"], "n": [seq], "label": [str(seq)]}, schema=SCHEMA)


def test_temporary_files_of_dead_writers_go_when_old(local_catalog: ss.Catalog) -> None:
    # Regression (found by tests/reliability/test_kill_trials.py): a writer SIGKILLed while it
    # wrote a data file or a log entry on the local disk left its ``<key>.tmp-<uuid>`` file, which
    # the store's listing hides, so no vacuum ever removed it.
    table = table_of_appends(local_catalog, 2)
    old_data = disk_path(table, "data/day=d1/dead.parquet.tmp-0123abcd")
    old_entry = disk_path(table, "_log/00000000000000000009.json.tmp-4567ef01")
    young = disk_path(table, "data/day=d2/alive.parquet.tmp-89abcdef")
    for path in (old_data, old_entry, young):
        path.write_bytes(b"half a file")
    age(old_data, TWO_DAYS)
    age(old_entry, TWO_DAYS)
    before = row_set(table)
    # When it is vacuumed with the default 24 hours
    report = table.vacuum()
    # Then the old temporary files are gone, the young one (a live writer's) stays, the table is whole
    assert report.temporaries_deleted == 2 and report.data_files_deleted == 0
    assert set(report.deleted) == {"data/day=d1/dead.parquet.tmp-0123abcd", "_log/00000000000000000009.json.tmp-4567ef01"}
    assert not old_data.exists() and not old_entry.exists() and young.exists()
    assert row_set(table) == before and table.verify().ok and len(table.history()) == 2


def test_intents_of_dead_put_and_verify_writers_go_when_old_except_on_log_entries(tmp_path: Path) -> None:
    # Regression (found by tests/reliability/test_kill_trials.py): a put-and-verify writer killed
    # while it published a data file left ``<file>.INTENT.<id>`` behind, and nothing removed it.
    catalog = ss.Catalog.object_store(str(tmp_path / "warehouse"), conditional_writes="put-and-verify")
    table = table_of_appends(catalog, 2)
    planted = {
        "data/day=d1/dead.parquet.INTENT.0123abcd": TWO_DAYS,
        "_log/bodies/" + "0" * 64 + ".json.INTENT.4567ef01": TWO_DAYS,
        "_state/00000000000000000002.parquet.INTENT.89abcdef": TWO_DAYS,
        "data/day=d2/alive.parquet.INTENT.01234567": None,  # a live writer's
        "_log/00000000000000000009.json.INTENT.deadbeef": TWO_DAYS,  # holds writers of entry 9 off
        "_state/latest.INTENT.feedface": TWO_DAYS,  # holds writers of the pointer off
    }
    for relative, older_by in planted.items():
        path = disk_path(table, relative)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b'{"target": "x"}')
        if older_by is not None:
            age(path, older_by)
    before = row_set(table)
    report = table.vacuum()
    gone = {"data/day=d1/dead.parquet.INTENT.0123abcd", "_log/bodies/" + "0" * 64 + ".json.INTENT.4567ef01",
            "_state/00000000000000000002.parquet.INTENT.89abcdef"}
    assert set(report.deleted) == gone and report.temporaries_deleted == 3
    assert {r for r in planted if disk_path(table, r).exists()} == set(planted) - gone
    assert row_set(table) == before and table.verify().ok
