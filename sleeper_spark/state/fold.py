"""The pure fold: ``validate(txn, state)`` and ``apply(txn, state)``, one handler per type.

Pure in the sense that matters for event sourcing: no I/O, no clock, no randomness — the same
transactions always produce the same state. ``apply`` returns a new state and leaves ``state``
as it was (states are shared between threads; see :class:`TableState`); ``validate`` only reads.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from datetime import datetime
from functools import singledispatch

import pyarrow.compute as pc

from sleeper_spark.errors import CommitConflictError, CorruptLogError
from sleeper_spark.models import (
    AddFiles,
    AppendGroup,
    CreateTable,
    FoldedTransaction,
    ReplaceFiles,
    SetProperties,
    SetSchema,
    Snapshot,
    SnapshotMember,
    TableSchema,
    TransactionBase,
    VoidedEntry,
)
from sleeper_spark.models.columnar import ColumnarAddFiles
from sleeper_spark.models.schema_evolution import check_evolution, dropped_columns, with_dropped
from sleeper_spark.state.collections import FileSet
from sleeper_spark.state.table_state import ReadOnlyDict, TableState


def initial_state(create: CreateTable) -> TableState:
    """The state after transaction 1."""
    return TableState(
        table_id=create.table_id,
        name=create.name,
        schema=create.schema_,
        partition_by=tuple(create.partition_by),
        event_time_column=create.event_time_column,
        properties=dict(create.properties),
        version=1,
    )


def fold(transactions: Iterable[tuple[int, FoldedTransaction]], state: TableState | None = None) -> TableState:
    """Applies numbered transactions in order, starting from ``state`` (or from nothing).

    Numbers must follow on from ``state.version`` without gaps; anything else means the log is
    damaged, since appends are conditional on the number.
    """
    for number, txn in transactions:
        if state is None:
            if number != 1 or not isinstance(txn, CreateTable):
                raise CorruptLogError(f"the log starts at transaction {number} ({txn.type}), not a create_table 1")
            state = initial_state(txn)
            continue
        if number != state.version + 1:
            raise CorruptLogError(
                f"table {state.name!r}: transaction {number} follows {state.version}; the log has a gap"
            )
        state = apply(txn, state)
    if state is None:
        raise CorruptLogError("the log holds no transactions")
    return state


@singledispatch
def validate(txn: TransactionBase, state: TableState) -> None:
    """Raises :class:`CommitConflictError` if ``txn`` cannot follow ``state``; retrying won't help."""
    raise TypeError(f"no validation rule for {type(txn).__name__}")


@singledispatch
def apply(txn: TransactionBase, state: TableState) -> TableState:
    """The state after a valid ``txn``; ``state`` itself is left unchanged."""
    raise TypeError(f"no apply rule for {type(txn).__name__}")


# -- create_table --------------------------------------------------------------------------


@validate.register
def _(txn: CreateTable, state: TableState) -> None:
    raise CommitConflictError(f"table {state.name!r} exists already")


@apply.register
def _(txn: CreateTable, state: TableState) -> TableState:
    raise CorruptLogError(f"table {state.name!r}: a second create_table at {state.version + 1}")


# -- an entry of an aborted multi-table transaction ---------------------------------------


@validate.register
def _(txn: VoidedEntry, state: TableState) -> None:
    raise TypeError("a voided entry is what a reader folds in place of an aborted one; it is never committed")


@apply.register
def _(txn: VoidedEntry, state: TableState) -> TableState:
    return replace(state, version=state.version + 1)  # its number is used; nothing else changes


# -- add_files -----------------------------------------------------------------------------


@validate.register
def _(txn: AddFiles, state: TableState) -> None:
    _check_schema(txn.schema_, state)
    _refuse_present([f.path for f in txn.files], state)


@apply.register
def _(txn: AddFiles, state: TableState) -> TableState:
    version = state.version + 1
    state = _evolved(state, txn.schema_)
    return _record(txn, state, files=state.files.added(txn.files, version),
                   rows_added=sum(f.row_count for f in txn.files), files_added=len(txn.files),
                   bytes_added=sum(f.size_bytes for f in txn.files))


@validate.register
def _(txn: ColumnarAddFiles, state: TableState) -> None:
    _check_schema(txn.schema_, state)
    _refuse_present(txn.new_files.paths, state)


@apply.register
def _(txn: ColumnarAddFiles, state: TableState) -> TableState:
    """As an AddFiles, its files taken as rows (see ``models/columnar.py``)."""
    version = state.version + 1
    state = _evolved(state, txn.schema_)
    rows = txn.new_files.columns
    return _record(txn, state, files=state.files.added_rows(rows, version),
                   rows_added=pc.sum(rows.column("row_count")).as_py() or 0, files_added=rows.num_rows,
                   bytes_added=pc.sum(rows.column("size_bytes")).as_py() or 0)


# -- append_group --------------------------------------------------------------------------


@validate.register
def _(txn: AppendGroup, state: TableState) -> None:
    paths = [f.path for f in txn.files]
    if len(set(paths)) != len(paths):
        raise CommitConflictError(f"table {state.name!r}: two members of one group commit add the same file")
    if any(member.schema_ is not None for member in txn.members):
        raise CommitConflictError(f"table {state.name!r}: a member of a group commit sets a schema; it commits alone")
    _refuse_present(paths, state)


@apply.register
def _(txn: AppendGroup, state: TableState) -> TableState:
    """One version, one history entry listing the members; each member's app version is recorded (_record)."""
    files = txn.files
    members = tuple(
        SnapshotMember(write_id=m.write_id, operation=m.operation, metadata=m.metadata, app_id=m.app_id,
                       app_version=m.app_version, rows_added=sum(f.row_count for f in m.files),
                       files_added=len(m.files), bytes_added=sum(f.size_bytes for f in m.files))
        for m in txn.members
    )
    lows = [m.min_event_time for m in txn.members if m.min_event_time is not None]
    highs = [m.max_event_time for m in txn.members if m.max_event_time is not None]
    return _record(txn, state, files=state.files.added(files, state.version + 1),
                   rows_added=sum(m.rows_added for m in members), files_added=len(files),
                   bytes_added=sum(m.bytes_added for m in members), members=members,
                   event_times=(min(lows, default=None), max(highs, default=None)))


# -- replace_files -------------------------------------------------------------------------


@validate.register
def _(txn: ReplaceFiles, state: TableState) -> None:
    live = set(state.files.present(list(txn.removed)))
    gone = [path for path in txn.removed if path not in live]
    if gone:
        raise CommitConflictError(
            f"table {state.name!r}: {len(gone)} file(s) this {txn.operation} replaces were removed by a "
            f"concurrent commit (first: {gone[0]}); run it again on the current version"
        )
    _check_schema(txn.schema_, state)
    _refuse_present([f.path for f in txn.added], state)


@apply.register
def _(txn: ReplaceFiles, state: TableState) -> TableState:
    state = _evolved(state, txn.schema_)
    remaining, rows_removed = state.files.removed(txn.removed)
    return _record(txn, state, files=remaining.added(txn.added, state.version + 1),
                   rows_added=sum(f.row_count for f in txn.added), rows_removed=rows_removed,
                   files_added=len(txn.added), files_removed=len(txn.removed),
                   bytes_added=sum(f.size_bytes for f in txn.added))


# -- set_schema ----------------------------------------------------------------------------


@validate.register
def _(txn: SetSchema, state: TableState) -> None:
    _check_schema(txn.schema_, state)


@apply.register
def _(txn: SetSchema, state: TableState) -> TableState:
    return _record(txn, _evolved(state, txn.schema_))


def _check_schema(schema: TableSchema | None, state: TableState) -> None:
    """A schema a transaction sets must be one the table may evolve to (see ``schema_evolution``)."""
    if schema is not None and schema != state.schema:
        fixed = (*state.partition_by, *((state.event_time_column,) if state.event_time_column else ()))
        check_evolution(state.schema, schema, state.name, dropped_columns(state.properties), fixed)


def _evolved(state: TableState, schema: TableSchema | None) -> TableState:
    """``state`` under ``schema`` (None: as it is): its files table follows, dropped names are retired."""
    if schema is None or schema == state.schema:
        return state
    evolved = replace(state, schema=schema,
                      properties=ReadOnlyDict(with_dropped(state.properties, state.schema, schema)))
    # No file of ``state`` can hold a value of a column ``schema`` adds: new names are never old ones.
    added = tuple(name for name in schema.names if name not in state.schema.names)
    return replace(evolved, files=state.files.with_layout(evolved.layout, added=added))


# -- set_properties ------------------------------------------------------------------------


@validate.register
def _(txn: SetProperties, state: TableState) -> None:
    return None


@apply.register
def _(txn: SetProperties, state: TableState) -> TableState:
    properties = {**state.properties, **txn.set}
    for key in txn.unset:
        properties.pop(key, None)
    return _record(txn, replace(state, properties=ReadOnlyDict(properties)))


# -- shared --------------------------------------------------------------------------------


def _refuse_present(paths: Iterable[str], state: TableState) -> None:
    present = state.files.present(list(paths))
    if present:
        # Data file names are random UUIDs, so this is a replayed transaction, not bad luck.
        raise CommitConflictError(f"table {state.name!r}: file {present[0]} is in the table already")


def _record(txn: TransactionBase, state: TableState, *, files: FileSet | None = None, rows_added: int = 0,
            rows_removed: int = 0, files_added: int = 0, files_removed: int = 0, bytes_added: int = 0,
            members: tuple[SnapshotMember, ...] = (),
            event_times: tuple[datetime | None, datetime | None] | None = None) -> TableState:
    """The next state: ``files`` (or the same files), one more history entry, and the app versions
    the transaction records (a group: each member's)."""
    version = state.version + 1
    low, high = event_times or (getattr(txn, "min_event_time", None), getattr(txn, "max_event_time", None))
    snapshot = Snapshot(
        version=version,
        snapshot_id=txn.snapshot_id,
        parent_id=txn.parent_id,
        committed_at=txn.committed_at,
        operation=txn.operation,
        metadata=txn.metadata,
        rows_added=rows_added,
        rows_removed=rows_removed,
        files_added=files_added,
        files_removed=files_removed,
        bytes_added=bytes_added,
        min_event_time=low,
        max_event_time=high,
        app_id=txn.app_id,
        app_version=txn.app_version,
        write_id=txn.write_id,
        operation_metrics=txn.operation_metrics or {},
        members=members,
    )
    app_versions = state.app_versions
    tagged = [(t.app_id, t.app_version) for t in (txn.members if isinstance(txn, AppendGroup) else (txn,))
              if t.app_id is not None and t.app_version is not None]
    if tagged:
        highest = dict(app_versions)
        for app_id, app_version in tagged:
            highest[app_id] = max(app_version, highest.get(app_id, app_version))
        app_versions = ReadOnlyDict(highest)
    return replace(state, version=version, files=files if files is not None else state.files,
                   history=state.history.appended(snapshot), app_versions=app_versions)
