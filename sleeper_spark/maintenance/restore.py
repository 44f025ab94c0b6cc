"""Restoring a table to an earlier version: a new snapshot whose files are exactly that version's.

Nothing is copied. The restore is one ``ReplaceFiles`` snapshot with operation ``"restore"`` and
the metadata ``{"restored_version": "<v>"}``: it removes every live file the old version did not
have and adds back every file of the old version that is no longer live. Both sets are worked
out again from the current state on every commit attempt, so a write that lands meanwhile is
undone too: what the restore commits is the old version's files, whatever came between.

The files to add back must still exist: they are checked (one HEAD each) before anything is
committed, and a restore to a version whose files vacuum has deleted fails with
:class:`~sleeper_spark.errors.StorageError` naming one, leaving the table as it was. Files it
adds back are never deleted on failure, since they belong to the old version. The table keeps
its current schema (schema changes only add nullable columns, which old files read as nulls).
"""

from __future__ import annotations

import logging
import uuid
from typing import TYPE_CHECKING

from sleeper_spark.commit import utc_now
from sleeper_spark.errors import StorageError
from sleeper_spark.models import ReplaceFiles, Snapshot, Transaction
from sleeper_spark.state import TableState
from sleeper_spark.storage import join_key
from sleeper_spark.table.writes import new_write_id

if TYPE_CHECKING:
    from sleeper_spark.table import Table

log = logging.getLogger(__name__)


def restore(table: Table, version: int) -> Snapshot:
    """Commits a snapshot of ``table`` holding exactly the files of ``version`` (see the module doc)."""
    target = table.state(version)  # SnapshotNotFoundError for a version the table never had
    wanted = {f.path: f for f in target.files.values()}
    current = table.state()
    missing = [path for path in wanted if path not in current.files
               and table.store.head(join_key(table.root, path)) is None]
    if missing:
        raise StorageError(
            f"table {table.name!r}: {len(missing)} file(s) of version {version} are gone (first: {missing[0]}), "
            "probably removed by vacuum; that version cannot be restored. Nothing was committed"
        )
    snapshot_id, write_id = uuid.uuid4().hex, new_write_id()
    metadata = {"restored_version": str(target.version)}

    def build(state: TableState) -> Transaction:
        removed = tuple(path for path in state.files if path not in wanted)
        added = tuple(file for path, file in wanted.items() if path not in state.files)
        return ReplaceFiles(snapshot_id=snapshot_id, committed_at=utc_now(), operation="restore",
                            metadata=metadata, write_id=write_id, removed=removed, added=added)

    snapshot = table.head.commit(build).snapshot
    log.info("table %s: restored version %d as version %d (%d file(s) removed, %d added back)", table.name,
             target.version, snapshot.version, snapshot.files_removed, snapshot.files_added)
    return snapshot
