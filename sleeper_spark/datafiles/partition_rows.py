"""A batch's rows grouped by their partition values, for the writer.

One dictionary code per row, one sort of the codes (Arrow counts small integers into order), and
each partition value's rows are a run of the sorted positions: no filter per partition. The rows
of a big batch are gathered (``take``) only when written, on the thread that writes them, and
the batch is split in pieces first, each grouped on a thread of its own (:func:`pieces`).
"""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa
import pyarrow.compute as pc

from sleeper_spark.datafiles.stats import partition_value_to_string

PartitionKey = tuple[str | None, ...]
# A piece is grouped on one thread: smaller ones cost more in per-call overhead than they save.
MIN_PIECE_ROWS = 65_536


def pieces(table: pa.Table, count: int) -> list[pa.Table]:
    """``table`` as up to ``count`` consecutive slices of at least MIN_PIECE_ROWS rows (views, no copy)."""
    count = min(count, table.num_rows // MIN_PIECE_ROWS)
    if count <= 1:
        return [table]
    size = -(-table.num_rows // count)
    return [table.slice(start, size) for start in range(0, table.num_rows, size)]


class PartitionRows:
    """The rows of one partition value in a batch: the batch, and where they are in it (None: all
    of it). They are taken out of the batch only when written, so that the partitions' takes run
    on the threads that write them."""

    def __init__(self, batch: pa.Table, indices: pa.Array | None = None) -> None:
        self._batch = batch
        self._indices = indices
        self.num_rows = batch.num_rows if indices is None else len(indices)

    def table(self) -> pa.Table:
        return self._batch if self._indices is None else self._batch.take(self._indices)


def split_by_partition(table: pa.Table, columns: tuple[str, ...]) -> Iterator[tuple[PartitionKey, PartitionRows]]:
    """Groups rows by their partition values: one dictionary code per row, then one sort of the
    codes (Arrow counts them into order); each value's rows are a run of the sorted positions."""
    if not columns or table.num_rows == 0:
        if table.num_rows:
            yield (), PartitionRows(table)
        return
    codes: pa.Array | None = None
    dictionaries: list[list[str | None]] = []
    for column in columns:
        encoded = pc.dictionary_encode(table.column(column).combine_chunks(), null_encoding="encode")
        dictionaries.append([partition_value_to_string(v) for v in encoded.dictionary.to_pylist()])
        if codes is None:
            codes = encoded.indices if len(columns) == 1 else encoded.indices.cast(pa.int64())
        else:
            codes = pc.add(pc.multiply(codes, len(encoded.dictionary)), encoded.indices.cast(pa.int64()))
    assert codes is not None
    bounds = pc.min_max(codes)
    if bounds["min"].as_py() == bounds["max"].as_py():
        yield _decode(bounds["min"].as_py(), dictionaries), PartitionRows(table)
        return
    order = pc.sort_indices(codes)
    runs = pc.run_end_encode(codes.take(order))
    # A small batch is gathered at once, in one take: its partitions' takes, each a call of its
    # own, would cost more than they could save on other threads.
    ordered = table.take(order) if table.num_rows < MIN_PIECE_ROWS else None
    start = 0
    for code, end in zip(runs.values.to_pylist(), runs.run_ends.to_pylist(), strict=True):
        rows = PartitionRows(ordered.slice(start, end - start)) if ordered is not None else \
            PartitionRows(table, order.slice(start, end - start))
        yield _decode(code, dictionaries), rows
        start = end


def _decode(code: int, dictionaries: list[list[str | None]]) -> PartitionKey:
    values: list[str | None] = []
    for dictionary in reversed(dictionaries):
        code, index = divmod(code, len(dictionary))
        values.append(dictionary[index])
    return tuple(reversed(values))
