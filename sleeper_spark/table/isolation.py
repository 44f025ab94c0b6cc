"""What a change that reads before it writes (merge, update, delete) must find unchanged to commit.

Such a change reads some files of one version, works out new rows from them and commits a
``ReplaceFiles``. It is only right if what it read still stands when it commits. On each commit
attempt its transaction is rebuilt on the newest state (the commit loop's ``build``), and
:func:`check_unchanged` refuses the attempt with :class:`CommitConflictError` when

- a file it read is gone (a concurrent compaction, delete, overwrite, merge or update removed
  or rewrote it), or
- a file added since the version it read may hold rows it read, or would have read: an append
  into a partition (or a key range) it read. Without this, two merges inserting the same new key
  would both insert it. Appends elsewhere do not conflict, and appends never conflict with each
  other.

Checking on the state the attempt is appended after is as strong as checking in the fold:
the append is conditional on that state's version.
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow.compute as pc

from sleeper_spark.datafiles.pruning import keep_mask
from sleeper_spark.errors import CommitConflictError
from sleeper_spark.state import TableState


@dataclass(frozen=True)
class ReadSet:
    """What a change read: the files of version ``version`` that ``rows`` selects (None: every row)."""

    version: int
    paths: frozenset[str]
    rows: pc.Expression | None


def check_unchanged(read: ReadSet, state: TableState, operation: str) -> None:
    """Raises :class:`CommitConflictError` if ``state`` changed what ``read`` read (see the module doc).

    Only what changed since the version read is looked at: the history entries after it say
    whether any file was removed (if none was, every file read still stands) and how many were
    added, and those files are the newest rows of the files table.
    """
    if state.version == read.version:
        return
    changes = state.history.since(read.version)
    complete = len(changes) == state.version - read.version  # else the history was cut: check it all
    if not complete or any(change.files_removed for change in changes):
        _check_present(read, state, operation)
    if complete and not any(change.files_added for change in changes):
        return
    newer = state.files.added_since(read.version)
    if newer.num_rows == 0:
        return
    may_hold = keep_mask(newer, state.schema, state.partition_by, read.rows)
    if pc.any(may_hold).as_py():
        first = newer.filter(may_hold).column("path")[0].as_py()
        raise CommitConflictError(
            f"table {state.name!r}: a concurrent commit added file(s) with rows this {operation} read or would have "
            f"read (first: {first}); nothing was committed. Run it again on the current version"
        )


def _check_present(read: ReadSet, state: TableState, operation: str) -> None:
    present = state.files.present(list(read.paths))
    if len(present) != len(read.paths):
        missing = sorted(read.paths.difference(present))
        raise CommitConflictError(
            f"table {state.name!r}: {len(missing)} file(s) this {operation} read were removed or rewritten by a "
            f"concurrent commit (first: {missing[0]}); nothing was committed. Run it again on the current version"
        )
