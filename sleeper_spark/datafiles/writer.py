"""Writes Arrow data as immutable Parquet data files, one set per partition value.

One module serves both the driver-side pyarrow path (``Table.write``) and Spark's executors
(``sleeper_spark.spark.source.writer``), so files written either way have the same layout, statistics
and checksums. Rows are buffered per partition value into row groups of sensible size; a file
is closed when it reaches the target size. Files become visible create-if-absent, only when
complete, and are not part of the table until a transaction names them.

Each file is described by what was written: its checksum and size by the bytes on their way to
the store, its statistics by the Parquet writer's own footer where that holds them exactly, and
by the rows otherwise (:class:`~sleeper_spark.datafiles.stats.WrittenFileStats`). Partitions are
independent, so the files of several can be written at once (``threads``).
"""

from __future__ import annotations

import hashlib
import io
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import BinaryIO, TypeVar

import pyarrow as pa
import pyarrow.parquet as pq

from sleeper_spark.datafiles.partition_rows import PartitionKey, PartitionRows, pieces, split_by_partition
from sleeper_spark.datafiles.paths import new_data_file_path
from sleeper_spark.datafiles.stats import WrittenFileStats
from sleeper_spark.errors import SchemaMismatchError
from sleeper_spark.models import FileRef, TableSchema
from sleeper_spark.models.schema import check_data_schema
from sleeper_spark.source_options import DEFAULT_ROW_GROUP_ROWS, DEFAULT_TARGET_FILE_BYTES
from sleeper_spark.storage import NewObject, ObjectStore, join_key

_T = TypeVar("_T")
_R = TypeVar("_R")


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


class _Partition:
    """One partition value's rows on their way to its files: those short of a row group, buffered,
    and the file being written. Only one thread at a time works on a partition."""

    def __init__(self, values: dict[str, str | None]) -> None:
        self.values = values
        self.buffered: list[PartitionRows] = []
        self.buffered_rows = 0
        self.open: _OpenFile | None = None

    def buffer(self, rows: PartitionRows) -> None:
        self.buffered.append(rows)
        self.buffered_rows += rows.num_rows

    def take_buffered(self) -> pa.Table | None:
        parts, self.buffered, self.buffered_rows = self.buffered, [], 0
        return pa.concat_tables([part.table() for part in parts]) if parts else None


class DataFileWriter:
    """Accepts batches in any order; ``close()`` returns the FileRefs of every file written.

    ``threads``: how many partitions' files are written at once. pyarrow encodes and compresses
    without the GIL, so a write of many partitions uses that many cores; 1 where the caller runs
    writers side by side itself (Spark's tasks, compaction's groups).
    """

    def __init__(self, store: ObjectStore, table_root: str, schema: TableSchema, partition_by: tuple[str, ...],
                 table_name: str, target_file_bytes: int = DEFAULT_TARGET_FILE_BYTES,
                 row_group_rows: int = DEFAULT_ROW_GROUP_ROWS, threads: int = 1) -> None:
        self._store = store
        self._root = table_root
        self._schema = schema
        self._arrow_schema = schema.to_arrow()
        self._partition_by = partition_by
        self._name = table_name
        self._target = target_file_bytes
        self._row_group_rows = row_group_rows
        self._threads = max(1, threads)
        self._required = [f.name for f in schema.fields if not f.nullable]
        self._partitions: dict[PartitionKey, _Partition] = {}
        self._done: list[FileRef] = []

    def write(self, data: pa.RecordBatch | pa.Table) -> None:
        table = self._conform(pa.Table.from_batches([data]) if isinstance(data, pa.RecordBatch) else data)
        grouped = self._on_threads(lambda piece: list(split_by_partition(piece, self._partition_by)),
                                   pieces(table, self._threads))
        touched: dict[PartitionKey, _Partition] = {}
        for key, rows in (pair for piece in grouped for pair in piece):
            partition = touched[key] = self._partition(key)
            partition.buffer(rows)
        self._each([p for p in touched.values() if p.buffered_rows >= self._row_group_rows], self._flush)

    def write_all(self, batches: Iterable[pa.RecordBatch | pa.Table]) -> list[FileRef]:
        try:
            for batch in batches:
                self.write(batch)
            return self.close()
        except BaseException:
            self.abort()
            raise

    def close(self) -> list[FileRef]:
        self._each(list(self._partitions.values()), self._finish)
        self._partitions.clear()
        return list(self._done)

    def abort(self) -> None:
        """Discards open files and deletes the ones already published (best effort)."""
        for partition in self._partitions.values():
            if partition.open is not None:
                try:
                    partition.open.discard()
                except Exception:
                    pass
        self._partitions.clear()
        self._store.delete_many([join_key(self._root, f.path) for f in self._done])
        self._done.clear()

    def _partition(self, key: PartitionKey) -> _Partition:
        partition = self._partitions.get(key)
        if partition is None:
            partition = self._partitions[key] = _Partition(dict(zip(self._partition_by, key, strict=True)))
        return partition

    def _each(self, partitions: list[_Partition], work: Callable[[_Partition, list[FileRef]], None]) -> None:
        """Runs ``work`` on each partition (see :meth:`_on_threads`); the files it publishes are
        recorded in the partitions' order, those of a partition that failed too (so that ``abort``
        deletes them)."""
        published: list[list[FileRef]] = [[] for _ in partitions]
        try:
            self._on_threads(lambda pair: work(*pair), list(zip(partitions, published, strict=True)))
        finally:
            self._done.extend(file for files in published for file in files)

    def _on_threads(self, work: Callable[[_T], _R], items: Sequence[_T]) -> list[_R]:
        """``work`` of each item, in order, on up to ``threads`` threads at once; the first failure
        is raised once every item is done. Each item must be independent of the others."""
        if self._threads == 1 or len(items) < 2:
            return [work(item) for item in items]
        with ThreadPoolExecutor(min(self._threads, len(items)), thread_name_prefix="sleeper-write") as pool:
            futures = [pool.submit(work, item) for item in items]
        return [future.result() for future in futures]

    def _finish(self, partition: _Partition, published: list[FileRef]) -> None:
        """Writes the partition's last rows and publishes its open file."""
        self._flush(partition, published, final=True)
        if partition.open is not None:
            open_file, partition.open = partition.open, None
            published.append(open_file.publish())

    def _flush(self, partition: _Partition, published: list[FileRef], final: bool = False) -> None:
        """Writes the buffered rows as row groups of ``row_group_rows``; the rows short of a whole
        group stay buffered unless ``final``. A file is published once it reaches the target size,
        so however big a batch, no file grows more than one row group past it."""
        table = partition.take_buffered()
        if table is None:
            return
        size = self._row_group_rows
        end = table.num_rows if final else table.num_rows - table.num_rows % size
        for offset in range(0, end, size):
            self._write_group(partition, table.slice(offset, min(size, end - offset)), published)
        if end < table.num_rows:
            partition.buffer(PartitionRows(table.slice(end)))

    def _write_group(self, partition: _Partition, group: pa.Table, published: list[FileRef]) -> None:
        if partition.open is None:
            partition.open = _OpenFile(self._store, self._root, self._arrow_schema, partition.values,
                                       self._partition_by)
        partition.open.write(group)
        if partition.open.bytes_written >= self._target:
            open_file, partition.open = partition.open, None
            published.append(open_file.publish())

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
