"""Committing rewritten files as one ``ReplaceFiles`` transaction (compaction, delete).

The list of removed files is fixed when the rewrite is planned. If a concurrent commit has
removed one of them by the time this one lands, the fold refuses it with
:class:`~sleeper_spark.errors.CommitConflictError` and the new files are deleted: they
replaced data that is no longer there. Appends that land meanwhile only add files, so the
commit loop rebases over them and they survive; a delete, though, also conflicts with an append
that may hold rows its predicate matches (:mod:`sleeper_spark.table.isolation`).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from sleeper_spark.commit import utc_now
from sleeper_spark.models import FileRef, ReplaceFiles, Snapshot, Transaction
from sleeper_spark.state import TableState
from sleeper_spark.table.isolation import ReadSet, check_unchanged
from sleeper_spark.table.writes import commit_staged, new_write_id

if TYPE_CHECKING:
    from sleeper_spark.table import Table


def commit_replacement(table: Table, operation: str, removed: Sequence[str], added: Sequence[FileRef],
                       metadata: Mapping[str, str] | None = None, read: ReadSet | None = None) -> Snapshot:
    """Commits ``removed`` -> ``added`` as one snapshot; deletes ``added`` if it cannot land.

    ``read``: what the change read to decide (a delete's candidate files and predicate), which must
    still stand (see :mod:`sleeper_spark.table.isolation`); a compaction reads nothing that matters.
    """
    snapshot_id = uuid.uuid4().hex
    write_id = new_write_id()
    removed_paths = tuple(removed)
    added_files = tuple(added)
    recorded = dict(metadata or {})

    def build(state: TableState) -> Transaction:
        if read is not None:
            check_unchanged(read, state, operation)
        return ReplaceFiles(snapshot_id=snapshot_id, committed_at=utc_now(), operation=operation,
                            metadata=recorded, write_id=write_id, removed=removed_paths, added=added_files)

    return commit_staged(table.head, table.store, table.root, added_files, build).snapshot
