"""The data snapshots of a table as Arrow columns: immutable, shared between states.

A long-lived table commits one snapshot per write, so history grows as fast as the file list
and would dominate a state's memory as Python objects. It is kept as record batches
(:class:`~sleeper_spark.state.runs.Runs`); a :class:`Snapshot` is built only when asked for,
and the lookups on the commit path (by write id, by app) are vectorized.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from datetime import datetime
from typing import Any, overload

import pyarrow as pa
import pyarrow.compute as pc

from sleeper_spark.models import Snapshot
from sleeper_spark.state.runs import MaskBuilder, Runs

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
])
_PLAIN = ("version", "snapshot_id", "committed_at", "operation", "rows_added", "rows_removed", "files_added",
          "files_removed", "bytes_added", "min_event_time", "max_event_time", "app_id", "app_version", "write_id")


class SnapshotLog(Sequence[Snapshot]):
    """Data snapshots, oldest first. Never mutated: :meth:`appended` returns a new log."""

    __slots__ = ("_last", "_runs")

    def __init__(self, runs: Runs | None = None, last: Snapshot | None = None) -> None:
        self._runs = runs if runs is not None else Runs(HISTORY_SCHEMA)
        self._last = last

    @classmethod
    def of(cls, snapshots: Sequence[Snapshot]) -> SnapshotLog:
        previous = [None, *(s.snapshot_id for s in snapshots[:-1])]
        rows = [_row(snapshot, before) for snapshot, before in zip(snapshots, previous, strict=True)]
        table = pa.Table.from_pylist(rows, schema=HISTORY_SCHEMA)
        return cls(Runs.of_table(table), snapshots[-1] if snapshots else None)

    @classmethod
    def of_table(cls, table: pa.Table) -> SnapshotLog:
        return cls(Runs.of_table(table.cast(HISTORY_SCHEMA)))

    def table(self) -> pa.Table:
        return self._runs.table()

    @property
    def runs(self) -> Runs:
        return self._runs

    def appended(self, snapshot: Snapshot) -> SnapshotLog:
        previous = self[-1].snapshot_id if len(self) else None
        row = _row(snapshot, previous)
        batch = pa.RecordBatch.from_pylist([row], schema=HISTORY_SCHEMA)
        return SnapshotLog(self._runs.append(batch), snapshot)

    # -- Sequence ------------------------------------------------------------------------

    def __len__(self) -> int:
        return self._runs.num_rows

    @overload
    def __getitem__(self, index: int) -> Snapshot: ...

    @overload
    def __getitem__(self, index: slice) -> list[Snapshot]: ...

    def __getitem__(self, index: int | slice) -> Snapshot | list[Snapshot]:
        count = len(self)
        if isinstance(index, slice):
            start, stop, step = index.indices(count)
            if step != 1:
                return [self[i] for i in range(start, stop, step)]
            return self._decode(start, stop) if start < stop else []
        if index < 0:
            index += count
        if not 0 <= index < count:
            raise IndexError("history index out of range")
        if index == count - 1:
            if self._last is None:
                self._last = self._decode(index, count)[0]
            return self._last
        return self._decode(index, index + 1)[0]

    def __iter__(self) -> Iterator[Snapshot]:
        # Decoded a run at a time: memory stays bounded however long the history is.
        start = 0
        for batch in self._runs:
            yield from self._decode(start, start + batch.num_rows)
            start += batch.num_rows

    def __reversed__(self) -> Iterator[Snapshot]:
        return reversed(list(self))

    def _decode(self, start: int, stop: int) -> list[Snapshot]:
        """Rows ``start..stop-1``; the row before is read too, for its id (a parent)."""
        first = max(0, start - 1)
        rows = self.table().slice(first, stop - first)
        return decode_rows(rows, skip=start - first)

    # -- lookups -------------------------------------------------------------------------

    def last_where(self, column: str, value: Any, **more: Any) -> Snapshot | None:
        """The newest snapshot whose ``column`` equals ``value`` (and each of ``more``)."""
        def marks(batch: pa.RecordBatch) -> pa.Array:
            result = pc.fill_null(pc.equal(batch.column(column), value), False)
            for name, wanted in more.items():
                result = pc.and_(result, pc.fill_null(pc.equal(batch.column(name), wanted), False))
            return result

        if not len(self):
            return None
        found = self._index_of_last(marks)
        return None if found is None else self[found]

    def _index_of_last(self, marks_of: MaskBuilder) -> int | None:
        end = len(self)
        for batch in reversed(self._runs.batches):
            end -= int(batch.num_rows)
            marks = marks_of(batch)
            if pc.any(marks).as_py():
                return end + int(pc.indices_nonzero(marks)[-1].as_py())
        return None

    def version_at(self, timestamp: datetime) -> int | None:
        """The newest version committed at or before ``timestamp``."""
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


def _row(snapshot: Snapshot, previous_id: str | None) -> dict[str, Any]:
    row = {name: getattr(snapshot, name) for name in _PLAIN}
    same = previous_id is not None and snapshot.parent_id == previous_id
    row["parent_id"] = None if same else snapshot.parent_id
    row["parent_is_previous"] = same
    row["metadata"] = json.dumps(snapshot.metadata, sort_keys=True) if snapshot.metadata else None
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
        snapshots.append(Snapshot.model_construct(**fields))
    return snapshots


def _missing_parent(version: int) -> str:
    raise AssertionError(f"history row {version} refers to a previous row that was not read")
