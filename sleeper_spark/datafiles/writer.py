"""Writes Arrow data as immutable Parquet data files, one set per partition value.

One module serves both the driver-side pyarrow path (``Table.write``) and Spark's executors
(``sleeper_spark.spark.source.writer``), so files written either way have the same layout, statistics
and checksums. Rows are buffered per partition value into row groups of sensible size; a file
is closed when it reaches the target size. Files become visible create-if-absent, only when
complete, and are not part of the table until a transaction names them.

Each file is described by what was written: its checksum and size by the bytes on their way to
the store, its statistics by the Parquet writer's own footer where that holds them exactly, and
by the rows otherwise (:class:`~sleeper_spark.datafiles.stats.WrittenFileStats`).
"""

from __future__ import annotations

import hashlib
import io
from collections.abc import Iterable, Iterator
from typing import BinaryIO

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from sleeper_spark.datafiles.paths import new_data_file_path
from sleeper_spark.datafiles.stats import WrittenFileStats, partition_value_to_string
from sleeper_spark.errors import SchemaMismatchError
from sleeper_spark.models import FileRef, TableSchema
from sleeper_spark.models.schema import check_data_schema
from sleeper_spark.source_options import DEFAULT_ROW_GROUP_ROWS, DEFAULT_TARGET_FILE_BYTES
from sleeper_spark.storage import NewObject, ObjectStore, join_key

PartitionKey = tuple[str | None, ...]


class _HashingFile(io.RawIOBase):
    """Counts and hashes bytes on their way to the real file, so the checksum costs no re-read."""

    def __init__(self, target: BinaryIO) -> None:
        self._target = target
        self._hash = hashlib.sha256()
        self.size = 0

    def writable(self) -> bool:
        return True

    def write(self, data: bytes | bytearray | memoryview) -> int:  # type: ignore[override]
        view = memoryview(data)
        self._target.write(view)
        self._hash.update(view)
        self.size += view.nbytes
        return view.nbytes

    def tell(self) -> int:
        return self.size

    @property
    def checksum(self) -> str:
        return f"sha256:{self._hash.hexdigest()}"


class _OpenFile:
    def __init__(self, store: ObjectStore, table_root: str, schema: pa.Schema,
                 partition: dict[str, str | None], columns: tuple[str, ...]) -> None:
        self.path = new_data_file_path(partition, columns)
        self.partition = partition
        self._new: NewObject = store.new_object(join_key(table_root, self.path))
        self._hashing = _HashingFile(self._new.file())
        self._writer = pq.ParquetWriter(pa.PythonFile(self._hashing, mode="w"), schema, compression="zstd")
        self._stats = WrittenFileStats(schema)
        self.rows = 0

    @property
    def bytes_written(self) -> int:
        return self._hashing.size

    def write(self, table: pa.Table) -> None:
        self._writer.write_table(table)
        self._stats.update(table)
        self.rows += table.num_rows

    def publish(self) -> FileRef:
        self._writer.close()
        self._new.publish()
        return FileRef(path=self.path, partition=self.partition, size_bytes=self._hashing.size,
                       row_count=self.rows, checksum=self._hashing.checksum,
                       column_stats=self._stats.result(self._writer.writer.metadata))

    def discard(self) -> None:
        try:
            self._writer.close()
        finally:
            self._new.discard()


class DataFileWriter:
    """Accepts batches in any order; ``close()`` returns the FileRefs of every file written."""

    def __init__(self, store: ObjectStore, table_root: str, schema: TableSchema, partition_by: tuple[str, ...],
                 table_name: str, target_file_bytes: int = DEFAULT_TARGET_FILE_BYTES,
                 row_group_rows: int = DEFAULT_ROW_GROUP_ROWS) -> None:
        self._store = store
        self._root = table_root
        self._schema = schema
        self._arrow_schema = schema.to_arrow()
        self._partition_by = partition_by
        self._name = table_name
        self._target = target_file_bytes
        self._row_group_rows = row_group_rows
        self._required = [f.name for f in schema.fields if not f.nullable]
        self._buffers: dict[PartitionKey, list[pa.Table]] = {}
        self._buffered_rows: dict[PartitionKey, int] = {}
        self._open: dict[PartitionKey, _OpenFile] = {}
        self._done: list[FileRef] = []

    def write(self, data: pa.RecordBatch | pa.Table) -> None:
        table = self._conform(pa.Table.from_batches([data]) if isinstance(data, pa.RecordBatch) else data)
        for key, part in split_by_partition(table, self._partition_by):
            self._buffers.setdefault(key, []).append(part)
            self._buffered_rows[key] = self._buffered_rows.get(key, 0) + part.num_rows
            if self._buffered_rows[key] >= self._row_group_rows:
                self._flush(key)

    def write_all(self, batches: Iterable[pa.RecordBatch | pa.Table]) -> list[FileRef]:
        try:
            for batch in batches:
                self.write(batch)
            return self.close()
        except BaseException:
            self.abort()
            raise

    def close(self) -> list[FileRef]:
        for key in list(self._buffers):
            self._flush(key, final=True)
        for key in list(self._open):
            self._done.append(self._open.pop(key).publish())
        return list(self._done)

    def abort(self) -> None:
        """Discards open files and deletes the ones already published (best effort)."""
        for open_file in self._open.values():
            try:
                open_file.discard()
            except Exception:
                pass
        self._open.clear()
        self._buffers.clear()
        self._store.delete_many([join_key(self._root, f.path) for f in self._done])
        self._done.clear()

    def _flush(self, key: PartitionKey, final: bool = False) -> None:
        """Writes the buffered rows as row groups of ``row_group_rows``; the rows short of a whole
        group stay buffered unless ``final``. A file is published once it reaches the target size,
        so however big a batch, no file grows more than one row group past it."""
        parts = self._buffers.pop(key, [])
        self._buffered_rows.pop(key, None)
        if not parts:
            return
        table = pa.concat_tables(parts)
        size = self._row_group_rows
        end = table.num_rows if final else table.num_rows - table.num_rows % size
        for offset in range(0, end, size):
            self._write_group(key, table.slice(offset, min(size, end - offset)))
        if end < table.num_rows:
            self._buffers[key] = [table.slice(end)]
            self._buffered_rows[key] = table.num_rows - end

    def _write_group(self, key: PartitionKey, group: pa.Table) -> None:
        open_file = self._open.get(key)
        if open_file is None:
            partition = dict(zip(self._partition_by, key, strict=True))
            open_file = self._open[key] = _OpenFile(self._store, self._root, self._arrow_schema, partition,
                                                    self._partition_by)
        open_file.write(group)
        if open_file.bytes_written >= self._target:
            self._done.append(self._open.pop(key).publish())

    def _conform(self, table: pa.Table) -> pa.Table:
        """Selects and casts the data to the table's schema; refuses what cannot fit."""
        check_data_schema(TableSchema.from_arrow(table.schema), self._schema, self._name)
        for name in self._required:
            if table.column(name).null_count:
                raise SchemaMismatchError(
                    f"column {name!r} of table {self._name!r} is not nullable, but the data holds nulls; "
                    "nothing was written"
                )
        table = table.select(self._arrow_schema.names)
        if table.schema != self._arrow_schema:
            table = table.cast(self._arrow_schema)
        return table


def split_by_partition(table: pa.Table, columns: tuple[str, ...]) -> Iterator[tuple[PartitionKey, pa.Table]]:
    """Groups rows by their partition values: one dictionary code per row, then one sort."""
    if not columns or table.num_rows == 0:
        if table.num_rows:
            yield (), table
        return
    codes: pa.Array | None = None
    dictionaries: list[list[str | None]] = []
    for column in columns:
        encoded = pc.dictionary_encode(table.column(column).combine_chunks(), null_encoding="encode")
        indices = encoded.indices.cast(pa.int64())
        dictionaries.append([partition_value_to_string(v) for v in encoded.dictionary.to_pylist()])
        codes = indices if codes is None else pc.add(pc.multiply(codes, len(encoded.dictionary)), indices)
    assert codes is not None
    counts = pc.value_counts(codes)
    if len(counts) == 1:
        yield _decode(int(counts[0]["values"].as_py()), dictionaries), table
        return
    order = pc.sort_indices(codes)
    ordered = table.take(order)
    ordered_codes = codes.take(order)
    offset = 0
    while offset < len(ordered_codes):
        code = ordered_codes[offset].as_py()
        # Runs are contiguous after the sort; find this run's end by binary search.
        end = offset + _run_length(ordered_codes, offset, code)
        yield _decode(code, dictionaries), ordered.slice(offset, end - offset)
        offset = end


def _run_length(codes: pa.Array, start: int, code: int) -> int:
    low, high = start, len(codes)
    while low < high:
        middle = (low + high) // 2
        if codes[middle].as_py() <= code:
            low = middle + 1
        else:
            high = middle
    return low - start


def _decode(code: int, dictionaries: list[list[str | None]]) -> PartitionKey:
    values: list[str | None] = []
    for dictionary in reversed(dictionaries):
        code, index = divmod(code, len(dictionary))
        values.append(dictionary[index])
    return tuple(reversed(values))
