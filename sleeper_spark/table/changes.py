"""A table's changes: the rows each version inserted and deleted, from the files it added and removed.

The log already says which files each version added and removed, so the changes of a range of
versions read only those files:

* an append, a group commit, or an overwrite of an empty table: every row of its files is an
  ``insert``;
* a version that removed files (an overwrite, a delete, a merge, an update, a restore): the rows
  of its removed files and of its added files are compared as multisets. A row in both (one that
  a copy-on-write rewrite only copied) is no change; the rest of the removed rows are
  ``delete``s, the rest of the added rows ``insert``s. So the output never holds carry-over rows,
  and an update is a ``delete`` of the old row and an ``insert`` of the new one (Spark's
  ``computeUpdates`` pairs them by the table's row identity, see ``ROW_ID_PROPERTY``);
* a compaction or a statistics repair (operation ``compact``), a schema or property change and
  the table's creation: nothing. They change no row.

Rows are read under the schema of the range's last version (a column added later reads as null
in older files). Each row carries ``_change_type``, ``_commit_version`` and ``_commit_timestamp``.
This module plans the reads (:func:`plan_changes`) and runs them with pyarrow
(:func:`read_changes`); ``sleeper_spark.spark.changes`` runs the same plan on Spark's reader.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc

from sleeper_spark.errors import ConfigError, LogThrottledError, SnapshotNotFoundError, StorageError
from sleeper_spark.models import AddFiles, AppendGroup, FileRef, FoldedTransaction, ReplaceFiles, TableSchema
from sleeper_spark.table.reading import read_file

if TYPE_CHECKING:
    from sleeper_spark.table.table import Table

CHANGE_TYPE = "_change_type"
COMMIT_VERSION = "_commit_version"
COMMIT_TIMESTAMP = "_commit_timestamp"
INSERT = "insert"
DELETE = "delete"
UPDATE_PREIMAGE = "update_preimage"
UPDATE_POSTIMAGE = "update_postimage"

# The table property naming the columns that identify a row (comma-separated), which lets Spark's
# computeUpdates pair a delete and an insert of one version into an update's two images.
ROW_ID_PROPERTY = "changes.row_id"

CHANGE_COLUMNS = pa.schema([
    pa.field(CHANGE_TYPE, pa.string(), nullable=False),
    pa.field(COMMIT_VERSION, pa.int64(), nullable=False),
    pa.field(COMMIT_TIMESTAMP, pa.timestamp("us", tz="UTC"), nullable=False),
])


@dataclass(frozen=True)
class VersionChanges:
    """What one version changed, as files: ``inserted`` files hold only inserted rows; the rows of
    ``removed`` and ``added`` are compared (see the module doc)."""

    version: int
    committed_at: datetime
    operation: str
    inserted: tuple[FileRef, ...] = ()
    removed: tuple[FileRef, ...] = ()
    added: tuple[FileRef, ...] = ()

    @property
    def compared(self) -> bool:
        return bool(self.removed)


@dataclass(frozen=True)
class ChangePlan:
    """The changes of versions ``first..last`` of a table, as files to read."""

    table: str
    schema: TableSchema  # the last version's
    partition_by: tuple[str, ...]
    first: int
    last: int
    versions: tuple[VersionChanges, ...]  # the versions that changed rows, in order

    @property
    def empty(self) -> bool:
        return not self.versions

    def output_schema(self) -> pa.Schema:
        """The table's columns followed by the change columns."""
        return pa.schema(list(self.schema.to_arrow()) + list(CHANGE_COLUMNS))


def plan_changes(table: Table, starting_version: int, ending_version: int | None = None) -> ChangePlan:
    """The files the changes of versions ``starting_version..ending_version`` (both included;
    None: the latest) come from. A range past the latest version is empty; one the log no longer
    holds (it was truncated) is a :class:`SnapshotNotFoundError`."""
    if starting_version < 1:
        raise ConfigError(f"table {table.name!r}: versions start at 1, not {starting_version}")
    current = table.state()
    last = current.version if ending_version is None else ending_version
    if ending_version is not None and ending_version < starting_version:
        raise ConfigError(f"table {table.name!r}: the changes from version {starting_version} to version "
                          f"{ending_version} are an empty range; give an ending version at or after the start")
    if ending_version is not None and ending_version > current.version:
        raise SnapshotNotFoundError(f"table {table.name!r} has no version {ending_version} yet (the latest is "
                                    f"{current.version}); leave the ending version out to read to the latest")
    end_state = current if last == current.version else table.state(last)
    plan = ChangePlan(table=table.name, schema=end_state.schema, partition_by=end_state.partition_by,
                      first=starting_version, last=last, versions=())
    if starting_version > last:
        return plan
    transactions = list(_transactions(table, starting_version, last))
    return replace(plan, versions=tuple(_version_changes(table, starting_version, transactions)))


def plan_of(table: Table, starting_version: int | None = None, ending_version: int | None = None,
            starting_timestamp: datetime | None = None, ending_timestamp: datetime | None = None) -> ChangePlan:
    """The plan of a range given as versions or as timestamps (``Table.changes`` and ``read_changes``)."""
    if starting_timestamp is None:
        if starting_version is None:
            raise ConfigError("give the first version whose changes to read (starting_version), or a "
                              "starting_timestamp")
        if ending_timestamp is not None:
            raise ConfigError("give the range of changes as versions or as timestamps, not both")
        return plan_changes(table, starting_version, ending_version)
    if starting_version is not None or ending_version is not None:
        raise ConfigError("give the range of changes as versions or as timestamps, not both")
    return plan_between(table, starting_timestamp, ending_timestamp)


def plan_between(table: Table, starting: datetime, ending: datetime | None, starting_inclusive: bool = True,
                 ending_inclusive: bool = True) -> ChangePlan:
    """The plan of the versions committed in a time range (the timestamp forms of a changes read);
    empty when no version was."""
    starting, ending = _utc(starting), _utc(ending) if ending is not None else None
    chosen = [s.version for s in table.state().history
              if (s.committed_at > starting or (starting_inclusive and s.committed_at == starting))
              and (ending is None or s.committed_at < ending or (ending_inclusive and s.committed_at == ending))]
    return plan_changes(table, chosen[0], chosen[-1]) if chosen else empty_plan(table)


def empty_plan(table: Table) -> ChangePlan:
    """A plan with no version: the range after the latest one (what an up-to-date consumer reads)."""
    return plan_changes(table, table.state().version + 1)


def _utc(moment: datetime) -> datetime:
    return moment.replace(tzinfo=timezone.utc) if moment.tzinfo is None else moment


def _transactions(table: Table, first: int, last: int) -> Iterable[tuple[int, FoldedTransaction]]:
    """Transactions ``first..last`` read from the log, checked to be all there."""
    expected = first
    try:
        for entry in table.head.entries(after=first - 1, up_to=last):
            if entry.number != expected:
                break
            yield entry.number, entry.transaction()
            expected += 1
        oldest = table.head.first_number() if expected <= last else None
    except LogThrottledError as error:
        raise StorageError(f"table {table.name!r}: reading the log was throttled: {error}") from None
    if expected <= last:
        raise SnapshotNotFoundError(
            f"table {table.name!r}: version {expected} is no longer in the log (it was truncated; the oldest it holds "
            f"is {oldest}), so its changes are gone; read changes from version {oldest} or later")


def _version_changes(table: Table, first: int, transactions: Sequence[tuple[int, FoldedTransaction]]
                     ) -> Iterable[VersionChanges]:
    known = _files_before(table, first, _removed_before_added(transactions))
    for number, txn in transactions:
        change = _changes_of(number, txn, known)
        known.update((f.path, f) for f in _added(txn))
        if change is not None:
            yield change


def _removed_before_added(transactions: Sequence[tuple[int, FoldedTransaction]]) -> set[str]:
    """The paths the range removes before (or without) adding them itself: versions before it
    added those. A path the range adds later too (a restore brings a removed file back) is one."""
    added: set[str] = set()
    wanted: set[str] = set()
    for _, txn in transactions:
        if isinstance(txn, ReplaceFiles):
            wanted.update(path for path in txn.removed if path not in added)
        added.update(f.path for f in _added(txn))
    return wanted


def _files_before(table: Table, first: int, wanted: set[str]) -> dict[str, FileRef]:
    """The FileRefs of the removed files that versions before ``first`` added (the log names a
    removed file by its path only): one filter of the files table of version ``first - 1``."""
    if not wanted or first <= 1:
        return {}
    state = table.state(first - 1)
    rows = state.files.table()
    rows = rows.filter(pc.is_in(rows["path"], pa.array(sorted(wanted), pa.string())))
    return {f.path: f for f in state.layout.file_refs(rows)}


def _added(txn: FoldedTransaction) -> tuple[FileRef, ...]:
    if isinstance(txn, AppendGroup):
        return tuple(f for member in txn.members for f in member.files)
    if isinstance(txn, AddFiles):
        return txn.files
    if isinstance(txn, ReplaceFiles):
        return txn.added
    return ()


def _changes_of(number: int, txn: FoldedTransaction, known: dict[str, FileRef]) -> VersionChanges | None:
    at = _utc(txn.committed_at)
    if isinstance(txn, (AddFiles, AppendGroup)):
        files = _added(txn)
        return VersionChanges(number, at, txn.operation, inserted=files) if files else None
    if not isinstance(txn, ReplaceFiles) or txn.operation == "compact":
        return None  # the same rows rewritten, or no rows at all
    # A path both removed and added (none of today's operations makes one) holds the same rows.
    kept = set(txn.removed) & {f.path for f in txn.added}
    removed = tuple(known[path] for path in txn.removed if path not in kept)
    added = tuple(f for f in txn.added if f.path not in kept)
    if not removed:
        return VersionChanges(number, at, txn.operation, inserted=added) if added else None
    return VersionChanges(number, at, txn.operation, removed=removed, added=added)


# -- reading with pyarrow ------------------------------------------------------------------


def read_changes(table: Table, plan: ChangePlan) -> pa.Table:
    """The rows of ``plan`` (see the module doc), version by version: deletes, then inserts."""
    schema = plan.output_schema()
    parts = []
    for change in plan.versions:
        if change.compared:
            deleted, inserted = net_rows(_read(table, plan, change, change.removed),
                                         _read(table, plan, change, change.added))
        else:
            deleted, inserted = None, _read(table, plan, change, change.inserted)
        for rows, kind in ((deleted, DELETE), (inserted, INSERT)):
            if rows is not None and rows.num_rows:
                parts.append(_tagged(rows, kind, change))
    return pa.concat_tables(parts).cast(schema) if parts else schema.empty_table()


def _read(table: Table, plan: ChangePlan, change: VersionChanges, files: Sequence[FileRef]) -> pa.Table:
    arrow_schema = plan.schema.to_arrow()
    tables = []
    for file in files:
        try:
            tables.append(read_file(table.store, table.root, file, arrow_schema, None, None))
        except StorageError as error:
            if "is missing" not in str(error):
                raise
            raise SnapshotNotFoundError(
                f"table {table.name!r}: the changes of version {change.version} ({change.operation}) need data file "
                f"{file.path}, which is gone (vacuum deletes the files of versions older than its retention); read "
                "changes of later versions only") from None
    return pa.concat_tables(tables) if tables else arrow_schema.empty_table()


def _tagged(rows: pa.Table, kind: str, change: VersionChanges) -> pa.Table:
    count = rows.num_rows
    rows = rows.append_column(CHANGE_COLUMNS.field(CHANGE_TYPE), pa.array([kind] * count, pa.string()))
    rows = rows.append_column(CHANGE_COLUMNS.field(COMMIT_VERSION), pa.array([change.version] * count, pa.int64()))
    return rows.append_column(CHANGE_COLUMNS.field(COMMIT_TIMESTAMP),
                              pa.array([change.committed_at] * count, pa.timestamp("us", tz="UTC")))


def net_rows(removed: pa.Table, added: pa.Table) -> tuple[pa.Table, pa.Table]:
    """The multiset difference both ways: (rows of ``removed`` not in ``added``, rows of ``added``
    not in ``removed``), each row counted as often as it occurs. Both have the same schema."""
    if removed.num_rows == 0 or added.num_rows == 0:
        return removed, added
    both = pa.concat_tables([removed, added])
    keys = _grouping_keys(both)
    sign = pa.concat_arrays([pa.repeat(pa.scalar(-1, pa.int64()), removed.num_rows),
                             pa.repeat(pa.scalar(1, pa.int64()), added.num_rows)])
    grouped = pa.table({**{f"k{i}": key for i, key in enumerate(keys)},
                        "sign": sign, "row": pa.array(range(both.num_rows), pa.int64())})
    net = grouped.group_by([f"k{i}" for i in range(len(keys))], use_threads=False).aggregate(
        [("sign", "sum"), ("row", "min"), ("row", "max")])
    changed = net.filter(pc.not_equal(net["sign_sum"], 0))
    deleted: list[int] = []
    inserted: list[int] = []
    for total, first, last in zip(changed["sign_sum"].to_pylist(), changed["row_min"].to_pylist(),
                                  changed["row_max"].to_pylist(), strict=True):
        # Removed rows come first in ``both``: the group's first row is a removed one when it
        # has any, its last an added one (equal rows, but -0.0 and 0.0 keep their sign).
        if total < 0:
            deleted += [first] * -total
        else:
            inserted += [last] * total
    return both.take(pa.array(sorted(deleted), pa.int64())), both.take(pa.array(sorted(inserted), pa.int64()))


def _grouping_keys(rows: pa.Table) -> list[pa.ChunkedArray | pa.Array]:
    """One key per column that Arrow's hash grouping takes: the column itself, or for a nested
    column (struct, list, map) its values' text, which is equal exactly when the values are."""
    keys: list[pa.ChunkedArray | pa.Array] = []
    for column in rows.columns:
        if pa.types.is_nested(column.type):
            keys.append(pa.array([None if v is None else repr(v) for v in column.to_pylist()], pa.string()))
        elif pa.types.is_floating(column.type):
            # Arrow groups floats by value, -0.0 with 0.0: group by the bits, which copies keep.
            width = pa.int32() if column.type.bit_width == 32 else pa.int64()
            keys.append(_float_bits(column, width))
        else:
            keys.append(column)
    return keys


def _float_bits(column: pa.ChunkedArray, width: pa.DataType) -> pa.Array:
    combined = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    if combined.type == pa.float16():
        combined = combined.cast(pa.float32())
        width = pa.int32()
    buffers = combined.buffers()
    return pa.Array.from_buffers(width, len(combined), [buffers[0], buffers[1]], offset=combined.offset)
