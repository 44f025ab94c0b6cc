"""Vacuum and pending appends: a record waiting for a group commit is never garbage, however old."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta, timezone

import sleeper_spark as ss
from sleeper_spark import maintenance
from sleeper_spark.layout import pending_key
from sleeper_spark.log.pending import PendingRecord
from sleeper_spark.log.pending_objectstore import ObjectStorePendingAppends
from tests.maintenance.tables import age, disk_path, table_of_appends


def test_vacuum_leaves_pending_appends_alone_whatever_their_age(local_catalog: ss.Catalog) -> None:
    # Given a table with a pending append recorded two days ago
    table = table_of_appends(local_catalog, 2)
    pending = ObjectStorePendingAppends(table.store, table.root)
    key = uuid.uuid4().hex
    pending.put(key, b'{"members": []}')
    age(disk_path(table, pending_key("", key)), timedelta(days=2))
    # When vacuum runs with no window at all, a day later still
    report = maintenance.vacuum(table, timedelta(0), now=datetime.now(timezone.utc) + timedelta(days=1))
    # Then the record is still there, and vacuum did not count it
    assert pending.list() == [PendingRecord(key, b'{"members": []}')]
    assert not any("pending" in deleted for deleted in report.deleted)
