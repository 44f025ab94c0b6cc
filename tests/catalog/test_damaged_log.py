"""A damaged log entry: the versions before it still read; after it, a typed error and a working repair."""

from __future__ import annotations

from pathlib import Path

import pytest

import sleeper_spark as ss
from sleeper_spark.layout import log_entry_key
from tests.fixtures.catalogs import EVENTS_SCHEMA, events, make_catalog
from tests.invariants import check_log_invariants

KINDS = ["local", pytest.param("object_store", marks=pytest.mark.integration)]


def _damage(catalog: ss.Catalog, number: int) -> None:
    """Cuts log entry ``number`` short, as a partial write on a store without atomic PUTs would."""
    store = catalog.backend.store
    key = log_entry_key("events", number)
    store.put(key, store.get(key)[:25])


def _table_with_three_versions(catalog: ss.Catalog) -> ss.Table:
    table = catalog.create_table("events", EVENTS_SCHEMA)
    for seq in range(3):
        table.write(events(0, seq, rows=2), metadata={"writer": "0", "seq": str(seq)})
    return table  # versions 2, 3, 4


def _cold(catalog: ss.Catalog) -> ss.Table:
    return ss.Catalog(catalog.config).table("events")


@pytest.mark.parametrize("kind", KINDS)
def test_versions_before_a_damaged_newest_entry_still_read(kind: str, request: pytest.FixtureRequest,
                                                           tmp_path: Path) -> None:
    # Given a table whose newest log entry (transaction 4) is damaged
    catalog = make_catalog(kind, request, tmp_path)
    _table_with_three_versions(catalog)
    _damage(catalog, 4)

    # When a cold reader travels to the versions before it, Then they read in full
    cold = _cold(catalog)
    assert cold.scan(version=3).num_rows == 4
    assert cold.scan(version=2).num_rows == 2
    assert cold.snapshot(3).version == 3
    assert len(cold.files(version=3)) == 2

    # And reading the latest version fails with an error naming the entry and the repair
    with pytest.raises(ss.CorruptLogError, match=r"transaction 4 cannot be decoded") as raised:
        cold.scan()
    assert "sleeper-spark repair events 4" in str(raised.value)
    assert "Versions before 4 still read" in str(raised.value)


@pytest.mark.parametrize("kind", KINDS)
def test_a_damaged_entry_recorded_as_lost_unblocks_reads_and_writes(kind: str, request: pytest.FixtureRequest,
                                                                    tmp_path: Path) -> None:
    # Given a table whose newest entry is damaged, so that writers cannot get past it either
    catalog = make_catalog(kind, request, tmp_path)
    _table_with_three_versions(catalog)
    _damage(catalog, 4)
    with pytest.raises(ss.CorruptLogError):
        _cold(catalog).write(events(1, 0))

    # When it is recorded as lost
    repaired = _cold(catalog).record_lost_transaction(4, reason="cut short by a failed upload")

    # Then the history says so at that version, the table reads at the version before, and writes go on
    assert repaired.version == 4 and repaired.operation == "repair"
    assert repaired.metadata["lost_transaction"] == "4"
    assert repaired.metadata["reason"] == "cut short by a failed upload"
    assert repaired.metadata["damaged_bytes"] == "25"
    cold = _cold(catalog)
    assert [s.operation for s in cold.history()] == ["append", "append", "repair"]
    assert cold.scan().num_rows == 4
    assert cold.write(events(1, 0, rows=1)).version == 5
    assert _cold(catalog).scan().num_rows == 5
    check_log_invariants(_cold(catalog))


def test_an_intact_entry_is_never_recorded_as_lost(local_catalog: ss.Catalog) -> None:
    # Given an intact table
    table = _table_with_three_versions(local_catalog)

    # When someone asks to record an intact entry (or a missing one) as lost, Then it is refused
    with pytest.raises(ss.ConfigError, match="intact"):
        table.record_lost_transaction(3)
    with pytest.raises(ss.SnapshotNotFoundError):
        table.record_lost_transaction(9)
    assert [s.operation for s in _cold(local_catalog).history()] == ["append"] * 3


def test_an_entry_a_state_snapshot_covers_is_cut_by_truncation_not_repaired(local_catalog: ss.Catalog) -> None:
    # Given a damaged entry below the newest state snapshot
    table = _table_with_three_versions(local_catalog)
    table.create_state_snapshot()
    _damage(local_catalog, 3)

    # When it is recorded as lost, Then that is refused with the way that works (truncation)
    with pytest.raises(ss.ConfigError, match="truncate"):
        _cold(local_catalog).record_lost_transaction(3)
    assert _cold(local_catalog).scan().num_rows == 6  # the latest reads through the state snapshot


def test_the_cli_records_a_damaged_entry_as_lost(local_catalog: ss.Catalog) -> None:
    from sleeper_spark.cli.main import main

    # Given a damaged newest entry
    _table_with_three_versions(local_catalog)
    _damage(local_catalog, 4)

    # When `sleeper-spark repair events 4` runs, Then it succeeds and the table reads again
    assert main(["--warehouse", local_catalog.config.warehouse, "repair", "events", "4"]) == 0
    assert _cold(local_catalog).latest().operation == "repair"
