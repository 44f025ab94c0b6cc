"""RESTORE: a new snapshot with exactly an old version's files, nothing copied, even when writers race it."""

from __future__ import annotations

from datetime import timedelta

import pyarrow.compute as pc
import pytest

import sleeper_spark as ss
from sleeper_spark.log import InMemoryLogBackend
from tests.fixtures.catalogs import EVENTS_SCHEMA, events, memory_catalog


def sorted_rows(table: ss.Table, version: int | None = None) -> list[dict[str, object]]:
    return sorted(table.scan(version=version).to_pylist(), key=lambda r: (r["writer"], r["seq"], r["value"]))


def test_a_restore_is_a_snapshot_with_exactly_the_old_files(catalog: ss.Catalog) -> None:
    # Given a table appended to, deleted from and overwritten
    table = catalog.create_table("events", EVENTS_SCHEMA, partition_by=["day"])
    table.write(events(1, 0))
    v3 = table.write(events(1, 1, day="2024-01-02"))
    table.delete_where(None, pc.field("day") == "2024-01-01")
    table.write(events(2, 0), mode="overwrite")

    # When version 3 is restored
    restored = table.restore(v3.version)

    # Then the new snapshot holds exactly version 3's files and rows, and says what it did
    assert restored.operation == "restore" and restored.metadata == {"restored_version": "3"}
    assert {f.path for f in table.files()} == {f.path for f in table.files(v3.version)}
    assert sorted_rows(table) == sorted_rows(table, v3.version)
    assert restored.files_added == 2 and restored.files_removed == 1
    assert [s.operation for s in table.history()] == ["append", "append", "delete", "overwrite", "restore"]
    assert table.verify().ok


def test_a_write_racing_the_restore_is_undone_too(memory_backend: InMemoryLogBackend) -> None:
    # Given a table at version 3, and a rival that appends just before the restore's first put
    table = memory_catalog(memory_backend).create_table("events", EVENTS_SCHEMA)
    v2 = table.write(events(1, 0))
    table.write(events(1, 1))
    rival = memory_catalog(memory_backend).table("events")
    memory_backend.logs[table.table_id].at_start_of_next_append(lambda: rival.write(events(9, 0)))

    # When version 2 is restored
    restored = table.restore(v2.version)

    # Then the restore rebased and still holds exactly version 2's files
    assert restored.version == 5
    assert {f.path for f in table.files()} == {f.path for f in table.files(v2.version)}
    assert sorted_rows(table) == sorted_rows(table, v2.version)


def test_a_restore_of_files_vacuum_removed_fails_and_commits_nothing(local_catalog: ss.Catalog) -> None:
    table = local_catalog.create_table("events", EVENTS_SCHEMA)
    v2 = table.write(events(1, 0))
    table.write(events(2, 0), mode="overwrite")
    table.vacuum(older_than=timedelta(0))
    latest = table.latest().version

    with pytest.raises(ss.StorageError, match="of version 2 are gone"):
        table.restore(v2.version)
    assert table.latest().version == latest


@pytest.mark.parametrize("version", [0, 99, "2"])
def test_a_version_the_table_never_had_is_refused(local_catalog: ss.Catalog, version: object) -> None:
    table = local_catalog.create_table("events", EVENTS_SCHEMA)
    table.write(events(1, 0))
    with pytest.raises((ss.SnapshotNotFoundError, ss.ConfigError)):
        table.restore(version)  # type: ignore[arg-type]
    assert table.latest().version == 2
