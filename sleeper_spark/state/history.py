"""The data snapshots of a table as Arrow columns: immutable, shared between states.

A long-lived table commits one snapshot per write, so history grows as fast as the file list
and would dominate a state's memory as Python objects. It is kept as record batches
(:class:`~sleeper_spark.state.runs.Runs`); a :class:`Snapshot` is built only when asked for,
and the lookups on the commit path (by write id, by app) are vectorized.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime
from typing import Any, overload

import pyarrow as pa
import pyarrow.compute as pc

from sleeper_spark.models import Snapshot, SnapshotMember
from sleeper_spark.state.runs import MaskBuilder, Runs

TAIL_SNAPSHOTS = 256
HISTORY_SCHEMA = pa.schema([
    ("version", pa.int64()), ("snapshot_id", pa.string()),
    # null when it is the previous snapshot's id (almost always): saves an id per row
    ("parent_id", pa.string()), ("parent_is_previous", pa.bool_()),
    ("committed_at", pa.timestamp("us", "UTC")), ("operation", pa.string()),
    ("metadata", pa.string()),  # a JSON object; null when empty
    ("rows_added", pa.int64()), ("rows_removed", pa.int64()), ("files_added", pa.int64()),
    ("files_removed", pa.int64()), ("bytes_added", pa.int64()),
    ("min_event_time", pa.timestamp("us", "UTC")), ("max_event_time", pa.timestamp("us", "UTC")),
    ("app_id", pa.string()), ("app_version", pa.int64()), ("write_id", pa.string()),
    ("operation_metrics", pa.string()),  # a JSON object; null when empty (and in state snapshots made before it)
    ("members", pa.string()),  # a JSON list of a group commit's members; null for a one-writer version
])
_PLAIN = ("version", "snapshot_id", "committed_at", "operation", "rows_added", "rows_removed", "files_added",
          "files_removed", "bytes_added", "min_event_time", "max_event_time", "app_id", "app_version", "write_id")


class SnapshotLog(Sequence[Snapshot]):
    """Data snapshots, oldest first. Never mutated: :meth:`appended` returns a new log.

    Like :class:`~sleeper_spark.state.collections.FileSet`, the newest snapshots are kept as
    objects (the *tail*) and become one Arrow batch every :data:`TAIL_SNAPSHOTS`.
    """

    __slots__ = ("_runs", "_tail", "_tail_batch")

    def __init__(self, runs: Runs | None = None, tail: tuple[Snapshot, ...] = ()) -> None:
        self._runs = runs if runs is not None else Runs(HISTORY_SCHEMA)
        self._tail = tail
        self._tail_batch: pa.RecordBatch | None = None

    @classmethod
    def of(cls, snapshots: Sequence[Snapshot]) -> SnapshotLog:
        return cls(Runs(HISTORY_SCHEMA).append(_batch(snapshots, None)))

    @classmethod
    def of_table(cls, table: pa.Table) -> SnapshotLog:
        for field in HISTORY_SCHEMA:
            if field.name not in table.column_names:  # written before the column existed
                table = table.append_column(field, pa.nulls(table.num_rows, field.type))
        return cls(Runs.of_table(table.select(HISTORY_SCHEMA.names).cast(HISTORY_SCHEMA)))

    def table(self) -> pa.Table:
        batches = list(self._runs.batches)
        if self._tail:
            if self._tail_batch is None:
                self._tail_batch = _batch(self._tail, self._last_run_id())
            batches.append(self._tail_batch)
        return pa.Table.from_batches(batches, schema=HISTORY_SCHEMA)

    def _last_run_id(self) -> str | None:
        if not self._runs.num_rows:
            return None
        last = self._runs.batches[-1]
        value: str | None = last.column("snapshot_id")[last.num_rows - 1].as_py()
        return value

    def appended(self, snapshot: Snapshot) -> SnapshotLog:
        tail = (*self._tail, snapshot)
        if len(tail) < TAIL_SNAPSHOTS:
            return SnapshotLog(self._runs, tail)
        return SnapshotLog(self._runs.append(_batch(tail, self._last_run_id())))

    # -- Sequence ------------------------------------------------------------------------

    def __len__(self) -> int:
        return self._runs.num_rows + len(self._tail)

    @overload
    def __getitem__(self, index: int) -> Snapshot: ...

    @overload
    def __getitem__(self, index: slice) -> list[Snapshot]: ...

    def __getitem__(self, index: int | slice) -> Snapshot | list[Snapshot]:
        count = len(self)
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(count))]
        if index < 0:
            index += count
        if not 0 <= index < count:
            raise IndexError("history index out of range")
        stored = self._runs.num_rows
        if index >= stored:
            return self._tail[index - stored]
        return self._decode(index, index + 1)[0]

    def __iter__(self) -> Iterator[Snapshot]:
        # Decoded a run at a time: memory stays bounded however long the history is.
        start = 0
        for batch in self._runs:
            yield from self._decode(start, start + batch.num_rows)
            start += batch.num_rows
        yield from self._tail

    def __reversed__(self) -> Iterator[Snapshot]:
        return reversed(list(self))

    def _decode(self, start: int, stop: int) -> list[Snapshot]:
        """Stored rows ``start..stop-1``; the row before is read too, for its id (a parent)."""
        first = max(0, start - 1)
        rows = self._runs.table().slice(first, stop - first)
        return decode_rows(rows, skip=start - first)

    # -- lookups -------------------------------------------------------------------------

    def last_where(self, column: str, value: Any, **more: Any) -> Snapshot | None:
        """The newest snapshot whose ``column`` equals ``value`` (and each of ``more``)."""
        wanted = {column: value, **more}
        for snapshot in reversed(self._tail):
            if all(getattr(snapshot, name) == expected for name, expected in wanted.items()):
                return snapshot

        def marks(batch: pa.RecordBatch) -> pa.Array:
            result = None
            for name, expected in wanted.items():
                equal = pc.fill_null(pc.equal(batch.column(name), expected), False)
                result = equal if result is None else pc.and_(result, equal)
            return result

        found = self._index_of_last(marks)
        return None if found is None else self[found]

    def last_holding_write(self, write_id: str) -> Snapshot | None:
        """The newest snapshot that committed the write ``write_id``, alone or as a group member."""
        return _newest(self.last_where("write_id", write_id),
                       self._last_with_member(write_id, lambda m: m.write_id == write_id))

    def last_holding_app(self, app_id: str, app_version: int) -> Snapshot | None:
        """The newest snapshot that committed ``(app_id, app_version)``, alone or as a group member."""
        return _newest(self.last_where("app_id", app_id, app_version=app_version),
                       self._last_with_member(app_id, lambda m: m.app_id == app_id and m.app_version == app_version))

    def last_with_app(self, app_id: str) -> Snapshot | None:
        """The newest snapshot that committed any version of ``app_id``, alone or as a group member."""
        return _newest(self.last_where("app_id", app_id), self._last_with_member(app_id, lambda m: m.app_id == app_id))

    def _last_with_member(self, text: str, wanted: Callable[[SnapshotMember], bool]) -> Snapshot | None:
        """The newest group snapshot with a member ``wanted`` picks; ``text`` occurs in that member's JSON."""
        for snapshot in reversed(self._tail):
            if any(wanted(m) for m in snapshot.members):
                return snapshot
        # Vectorized first: only stored rows whose members' JSON contains the text are decoded.
        candidates = self._indices_where(lambda batch: pc.fill_null(
            pc.match_substring(batch.column("members"), json.dumps(text)[1:-1]), False))
        for index in reversed(candidates):
            snapshot = self[index]
            if any(wanted(m) for m in snapshot.members):
                return snapshot
        return None

    def since(self, version: int) -> list[Snapshot]:
        """The snapshots with a version above ``version``, oldest first (usually a few, from the tail)."""
        newer: list[Snapshot] = []
        for snapshot in reversed(self._tail):
            if snapshot.version <= version:
                return newer[::-1]
            newer.append(snapshot)
        at = pa.scalar(version, pa.int64())
        stored = self._runs.num_rows
        first = next(iter(self._indices_where(lambda batch: pc.greater(batch.column("version"), at))), stored)
        return self._decode(first, stored) + newer[::-1] if first < stored else newer[::-1]

    def _indices_where(self, marks_of: MaskBuilder) -> list[int]:
        """The stored rows (not the tail) ``marks_of`` marks, in order."""
        found: list[int] = []
        start = 0
        for batch in self._runs.batches:
            marks = marks_of(batch)
            if pc.any(marks).as_py():
                found.extend(start + int(i) for i in pc.indices_nonzero(marks).to_pylist())
            start += int(batch.num_rows)
        return found

    def _index_of_last(self, marks_of: MaskBuilder) -> int | None:
        end = self._runs.num_rows
        for batch in reversed(self._runs.batches):
            end -= int(batch.num_rows)
            marks = marks_of(batch)
            if pc.any(marks).as_py():
                return end + int(pc.indices_nonzero(marks)[-1].as_py())
        return None

    def version_at(self, timestamp: datetime) -> int | None:
        """The newest version committed at or before ``timestamp``."""
        for snapshot in reversed(self._tail):
            if snapshot.committed_at <= timestamp:
                return snapshot.version
        at = pa.scalar(timestamp, pa.timestamp("us", "UTC"))
        found = self._index_of_last(lambda batch: pc.less_equal(batch.column("committed_at"), at))
        return None if found is None else self[found].version

    def __eq__(self, other: object) -> bool:
        if isinstance(other, SnapshotLog):
            return bool(self.table().equals(other.table()))
        if isinstance(other, list):
            return list(self) == other
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"SnapshotLog({len(self)} snapshots)"


def _newest(*found: Snapshot | None) -> Snapshot | None:
    """The one of the snapshots found with the highest version, if any was."""
    return max((s for s in found if s is not None), key=lambda s: s.version, default=None)


def _batch(snapshots: Sequence[Snapshot], previous_id: str | None) -> pa.RecordBatch:
    """Snapshots as history rows; ``previous_id`` is the id of the row before the first."""
    previous = [previous_id, *(s.snapshot_id for s in snapshots)][: len(snapshots)]
    rows = [_row(snapshot, before) for snapshot, before in zip(snapshots, previous, strict=True)]
    return pa.RecordBatch.from_pylist(rows, schema=HISTORY_SCHEMA)


def _row(snapshot: Snapshot, previous_id: str | None) -> dict[str, Any]:
    row = {name: getattr(snapshot, name) for name in _PLAIN}
    same = previous_id is not None and snapshot.parent_id == previous_id
    row["parent_id"] = None if same else snapshot.parent_id
    row["parent_is_previous"] = same
    row["metadata"] = json.dumps(snapshot.metadata, sort_keys=True) if snapshot.metadata else None
    metrics = snapshot.operation_metrics
    row["operation_metrics"] = json.dumps(metrics, sort_keys=True) if metrics else None
    row["members"] = (json.dumps([m.model_dump(exclude_defaults=True) for m in snapshot.members])
                      if snapshot.members else None)
    return row


def decode_rows(rows: pa.Table, skip: int = 0) -> list[Snapshot]:
    """History rows as Snapshots, leaving out the first ``skip`` (read only for their ids)."""
    column = {name: rows.column(name).to_pylist() for name in HISTORY_SCHEMA.names}
    snapshots = []
    for i in range(skip, rows.num_rows):
        fields = {name: column[name][i] for name in _PLAIN}
        if column["parent_is_previous"][i]:
            fields["parent_id"] = column["snapshot_id"][i - 1] if i else _missing_parent(fields["version"])
        else:
            fields["parent_id"] = column["parent_id"][i]
        text = column["metadata"][i]
        fields["metadata"] = json.loads(text) if text else {}
        metrics = column["operation_metrics"][i]
        fields["operation_metrics"] = json.loads(metrics) if metrics else {}
        members = column["members"][i]
        fields["members"] = tuple(SnapshotMember.model_validate(m) for m in json.loads(members)) if members else ()
        snapshots.append(Snapshot.model_validate(fields))
    return snapshots


def _missing_parent(version: int) -> str:
    raise AssertionError(f"history row {version} refers to a previous row that was not read")
