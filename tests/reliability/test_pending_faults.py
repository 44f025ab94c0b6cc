"""The faults tests/fixtures/faults.py injects into pending appends do what its module doc says."""

from __future__ import annotations

import uuid
from dataclasses import fields
from datetime import datetime, timezone
from pathlib import Path

import pytest

from sleeper_spark.errors import LogThrottledError, StorageError
from sleeper_spark.log import InMemoryPendingAppends, PendingRecord, TableEntry
from sleeper_spark.storage import LocalObjectStore, NativeConditionalWrites
from tests.fixtures.faults import FAULTS, FaultRates, FaultSchedule, FaultyLogBackend, FaultyPendingAppends

KEY = uuid.uuid4().hex


def always(fault: str | None) -> FaultSchedule:
    """A schedule that injects ``fault`` into every call (none for ``None``); held-back writes all land."""
    rates = {f.name: 0.0 for f in fields(FaultRates) if f.name in FAULTS}
    if fault is not None:
        rates[fault] = 1.0
    return FaultSchedule("pending", FaultRates(**rates, land=1.0, lose=0.0))


def entry(table_id: str) -> TableEntry:
    return TableEntry(name=f"t{table_id}", table_id=table_id, root=f"t{table_id}", created_at=datetime.now(timezone.utc))


def faulty(fault: str | None, tmp_path: Path) -> tuple[FaultyPendingAppends, InMemoryPendingAppends]:
    """The pending appends of a table of a faulty backend, and the records underneath."""
    store = LocalObjectStore(tmp_path)
    backend = FaultyLogBackend(store, NativeConditionalWrites(store), always(fault))
    return backend.pending_appends(entry("1")), backend.pending["1"]


@pytest.mark.parametrize(("fault", "error", "stored"), [
    ("before", StorageError, False),
    ("error", StorageError, False),
    ("throttle", LogThrottledError, False),
    ("after", StorageError, True),
])
def test_a_faulty_put_fails_typed_and_stores_only_after(fault: str, error: type[StorageError], stored: bool,
                                                        tmp_path: Path) -> None:
    pending, inner = faulty(fault, tmp_path)
    with pytest.raises(error):
        pending.put(KEY, b"body")
    assert inner.list() == ([PendingRecord(KEY, b"body")] if stored else [])


def test_a_delayed_put_fails_and_its_record_lands_at_a_later_call(tmp_path: Path) -> None:
    # Given a put held back in flight
    pending, inner = faulty("delayed", tmp_path)
    with pytest.raises(StorageError):
        pending.put(KEY, b"body")
    assert inner.list() == []
    # When a later call is made, Then the record lands first, so that call sees it
    assert pending.list() == [PendingRecord(KEY, b"body")]


@pytest.mark.parametrize("fault", ["error", "throttle"])
def test_a_faulty_listing_is_a_storage_error(fault: str, tmp_path: Path) -> None:
    pending, inner = faulty(fault, tmp_path)
    inner.put(KEY, b"body")
    with pytest.raises(StorageError):
        pending.list()


@pytest.mark.parametrize(("fault", "deleted"), [("before", False), ("error", False), ("after", True)])
def test_a_faulty_delete_fails_typed_and_deletes_only_after(fault: str, deleted: bool, tmp_path: Path) -> None:
    pending, inner = faulty(fault, tmp_path)
    inner.put(KEY, b"body")
    with pytest.raises(StorageError):
        pending.delete(KEY)
    assert inner.list() == ([] if deleted else [PendingRecord(KEY, b"body")])


def test_the_faulty_backend_keeps_one_record_set_per_table(tmp_path: Path) -> None:
    # Given a faulty backend whose schedule injects nothing
    store = LocalObjectStore(tmp_path)
    backend = FaultyLogBackend(store, NativeConditionalWrites(store), always(None))
    one, two = entry("1"), entry("2")
    # When a record is put through one handle of a table
    backend.pending_appends(one).put(KEY, b"body")
    # Then a new handle of that table lists it, and the other table's does not
    assert backend.pending_appends(one).list() == [PendingRecord(KEY, b"body")]
    assert backend.pending_appends(two).list() == []
