"""An immutable, append-friendly Arrow table: a tuple of record batches ("runs").

A state's files and history grow by a few rows per commit and are shared by every reader of
that state, so they are never changed in place. Appending makes a new tuple that shares every
existing batch (zero-copy) plus one small batch; to keep the number of batches low, the newest
ones are merged in tiers, as in a log-structured merge tree: a run's tier is log8 of its row
count, and when the newest :data:`FAN_IN` runs share a tier they become one run of the next
tier. A table of n rows then has at most ``FAN_IN - 1`` runs per tier (a few dozen), and each
row is copied about once per tier over its life — merging is rare and cheap per commit, where
merging pairwise would copy on almost every commit. Runs stop merging at
:data:`MAX_RUN_ROWS`, so no single commit copies more than that many rows.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

import pyarrow as pa

MAX_RUN_ROWS = 1 << 16
FAN_IN = 8
MaskBuilder = Callable[[pa.RecordBatch], pa.Array]


class Runs:
    """Record batches of one schema, oldest rows first. Never mutated after construction."""

    __slots__ = ("_batches", "_rows", "schema")

    def __init__(self, schema: pa.Schema, batches: tuple[pa.RecordBatch, ...] = ()) -> None:
        self.schema = schema
        self._batches = tuple(b for b in batches if b.num_rows)
        self._rows = sum(b.num_rows for b in self._batches)

    @classmethod
    def of_table(cls, table: pa.Table) -> Runs:
        """Cut into runs of at most :data:`MAX_RUN_ROWS` rows (zero-copy slices)."""
        return cls(table.schema, tuple(table.to_batches(max_chunksize=MAX_RUN_ROWS)))

    @property
    def num_rows(self) -> int:
        return int(self._rows)

    @property
    def batches(self) -> tuple[pa.RecordBatch, ...]:
        return self._batches

    def table(self) -> pa.Table:
        return pa.Table.from_batches(self._batches, schema=self.schema)

    def __iter__(self) -> Iterator[pa.RecordBatch]:
        return iter(self._batches)

    def append(self, batch: pa.RecordBatch) -> Runs:
        """These rows followed by ``batch``'s, merging small trailing runs (see the module doc)."""
        if batch.num_rows == 0:
            return self
        runs = [*self._batches, batch]
        while len(runs) >= FAN_IN:
            newest = runs[-FAN_IN:]
            tier = _tier(newest[-1])
            if any(_tier(b) != tier for b in newest) or sum(b.num_rows for b in newest) > MAX_RUN_ROWS:
                break
            runs[-FAN_IN:] = [_concat(newest)]
        return Runs(self.schema, tuple(runs))

    def filter(self, keep: list[pa.BooleanArray | None]) -> Runs:
        """Keeps the rows ``keep`` marks, one mask per run; ``None`` keeps a run whole (no copy)."""
        batches = tuple(b if mask is None else b.filter(mask) for b, mask in zip(self._batches, keep, strict=True))
        runs = Runs(self.schema, batches)
        return runs._compacted() if len(runs._batches) > FAN_IN * (max(1, self._rows.bit_length()) // 3 + 2) else runs

    def _compacted(self) -> Runs:
        """After many removals: the same rows in few full runs."""
        return Runs.of_table(self.table().combine_chunks())

    def with_schema(self, schema: pa.Schema, all_null: Sequence[str] = ()) -> Runs:
        """The same rows under another schema: columns it lacks go, columns of another type are
        cast, new columns are null, except the null counts in ``all_null``, which are the row count."""
        batches = []
        for batch in self._batches:
            columns = []
            for field in schema:
                if field.name in batch.schema.names:
                    column = batch.column(field.name)
                    columns.append(column if column.type.equals(field.type) else column.cast(field.type))
                elif field.name in all_null:
                    columns.append(batch.column("row_count").cast(field.type))
                else:
                    columns.append(pa.nulls(batch.num_rows, field.type))
            batches.append(pa.RecordBatch.from_arrays(columns, schema=schema))
        return Runs(schema, tuple(batches))

    def where(self, mask_of: MaskBuilder) -> pa.Table:
        """The rows for which ``mask_of(run)`` is true, as one table."""
        kept = [b.filter(mask_of(b)) for b in self._batches]
        return pa.Table.from_batches([b for b in kept if b.num_rows] or [], schema=self.schema)


def _tier(batch: pa.RecordBatch) -> int:
    return (int(batch.num_rows).bit_length() - 1) // 3


def _concat(batches: list[pa.RecordBatch]) -> pa.RecordBatch:
    combined: pa.RecordBatch = pa.Table.from_batches(batches).combine_chunks().to_batches()[0]
    return combined
