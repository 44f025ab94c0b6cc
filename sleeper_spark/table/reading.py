"""Reading a table's files without Spark: scans and verification."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from sleeper_spark.datafiles.pruning import prune_table
from sleeper_spark.datafiles.stats_check import stats_mismatches
from sleeper_spark.errors import CorruptDataFileError, SchemaMismatchError, StorageError
from sleeper_spark.models import FileProblem, FileRef, TableSchema, VerifyReport
from sleeper_spark.state import TableState
from sleeper_spark.storage import ObjectStore, join_key
from sleeper_spark.storage.arrow_buffers import arrow_owned

_READ_THREADS = 8
_THREADED_READ_BYTES = 2**20  # a file this big is decoded on Arrow's threads
T = TypeVar("T")
R = TypeVar("R")


def _parallel(work: Callable[[T], R], items: Sequence[T]) -> list[R]:
    """``work`` over ``items`` on a few threads, all joined before returning.

    Threads are not kept between calls, so none of ours is left at interpreter exit. Arrow's own
    pool threads do outlive the call, which is why the bytes they decode are first copied into
    Arrow's memory (:mod:`sleeper_spark.storage.arrow_buffers`).
    """
    if len(items) <= 1:
        return [work(item) for item in items]
    with ThreadPoolExecutor(max_workers=min(_READ_THREADS, len(items)), thread_name_prefix="sleeper-read") as pool:
        return list(pool.map(work, items))


def read_file(store: ObjectStore, table_root: str, file: FileRef, schema: pa.Schema,
              columns: Sequence[str] | None, filter: pc.Expression | None) -> pa.Table:
    """One data file as the table's schema (files written before a column was added lack it).

    The bytes are checked against the file's recorded size and checksum before they are decoded:
    a damaged file fails the read with :class:`CorruptDataFileError` naming it, instead of yielding
    wrong rows (a flipped bit in a Parquet page often decodes without error), and compaction,
    which reads through :func:`read_files`, never rewrites damage into a new, valid-looking file.
    """
    # A copy Arrow owns: Arrow's decoding threads may free it after the interpreter stopped.
    data = arrow_owned(_verified_bytes(store, table_root, file))
    wanted = pa.schema([schema.field(name) for name in (columns or schema.names)])
    table = _decoded(store, join_key(table_root, file.path), data, wanted)
    return table.filter(filter) if filter is not None else table


def read_files(store: ObjectStore, table_root: str, files: Sequence[FileRef], schema: pa.Schema) -> pa.Table:
    """Every row of ``files``, file after file, as the table's schema: :func:`read_file` for many
    small files at once (compaction).

    The same checks come first: each file's bytes are read once, and its size and checksum are
    checked on those same bytes before any of them is decoded. A file whose own schema is the
    table's (as is every file ``Table.write`` wrote since the table's last schema change) is then
    read as it is: :func:`read_file`'s selecting and casting, Python's work under the interpreter's
    lock, cost more than decoding a one-row file. Any other file (written before a column was added
    or widened, or by Spark) is conformed as :func:`read_file` conforms it.
    """
    buffers = [arrow_owned(_verified_bytes(store, table_root, f)) for f in files]
    try:
        return _decoded_together(buffers, schema)
    except (pa.ArrowException, OSError, ValueError):
        # Bytes that match their checksum and still do not decode: one by one, as read_file reads
        # them, which names the file that cannot be read.
        tables = [_decoded(store, join_key(table_root, f.path), data, schema)
                  for f, data in zip(files, buffers, strict=True)]
        return pa.concat_tables(tables) if tables else schema.empty_table()


def _decoded_together(buffers: Sequence[pa.Buffer], schema: pa.Schema) -> pa.Table:
    """The rows of Parquet files' bytes, in order, as ``schema``: a file of exactly that schema read
    as it is, any other conformed by :func:`_conformed`."""
    tables = []
    for data in buffers:
        parquet = pq.ParquetFile(pa.BufferReader(data))
        if parquet.schema_arrow.equals(schema):
            # Arrow's threads cost a small file more than they save: a one-row file 110 us of CPU
            # on this thread, 130 us handed to them (and 270 us scanned as a dataset fragment).
            tables.append(parquet.read(use_threads=data.size >= _THREADED_READ_BYTES))
        else:
            tables.append(_conformed(parquet, schema))  # its footer already read
    return pa.concat_tables(tables) if tables else schema.empty_table()


def _verified_bytes(store: ObjectStore, table_root: str, file: FileRef) -> bytes:
    """The file's bytes, once they match its recorded size and checksum."""
    key = join_key(table_root, file.path)
    try:
        data = store.get(key)
    except FileNotFoundError:
        raise StorageError(f"data file {store.uri(key)} is missing; run table.verify() for a full report") from None
    damage = _damage(data, file)
    if damage is not None:
        raise CorruptDataFileError(
            f"data file {store.uri(key)} is damaged ({damage.problem}: {damage.detail}); nothing was read from it. "
            "Run table.verify() for a full report, and restore the file from a backup"
        )
    return data


def _decoded(store: ObjectStore, key: str, data: pa.Buffer, wanted: pa.Schema) -> pa.Table:
    """:func:`_decode`, a failure to decode reported as the file's damage."""
    try:
        return _decode(data, wanted)
    except (pa.ArrowException, OSError, ValueError) as error:  # ValueError: also bad UTF-8 in metadata
        raise CorruptDataFileError(
            f"data file {store.uri(key)} cannot be read ({str(error).splitlines()[0]}); run table.verify()"
        ) from None


def _decode(data: pa.Buffer, wanted: pa.Schema) -> pa.Table:
    """The columns ``wanted`` of a Parquet file's bytes (in a buffer Arrow owns, see
    :mod:`sleeper_spark.storage.arrow_buffers`); a column the file lacks reads as nulls."""
    return _conformed(pq.ParquetFile(pa.BufferReader(data)), wanted)


def _conformed(parquet: pq.ParquetFile, wanted: pa.Schema) -> pa.Table:
    """The columns ``wanted`` of an open Parquet file, as :func:`_decode` reads them."""
    held = set(parquet.schema_arrow.names)  # the property builds the schema on each call
    present = [name for name in wanted.names if name in held]
    table = parquet.read(columns=present)
    for field in wanted:
        if field.name not in held:
            table = table.append_column(field, pa.nulls(table.num_rows, field.type))
    return table.select(wanted.names).cast(wanted)


def _damage(data: bytes, file: FileRef) -> FileProblem | None:
    """How ``data`` differs from the file the log recorded (size, then checksum), if it does."""
    if len(data) != file.size_bytes:
        return FileProblem(path=file.path, problem="size", detail=f"{len(data)} bytes, expected {file.size_bytes}")
    algo, _, expected = file.checksum.partition(":")
    actual = hashlib.new(algo, data).hexdigest()
    if actual != expected:
        return FileProblem(path=file.path, problem="checksum", detail=f"{algo}:{actual}, expected {file.checksum}")
    return None


def planned_files(state: TableState, filter: pc.Expression | None) -> list[FileRef]:
    """The files a read of ``state`` with ``filter`` must open.

    Pruned as one Arrow table, with FileRefs built only for the files kept: a scan that needs
    100 of a million files builds 100 objects.
    """
    kept = prune_table(state.files.table(), state.schema, state.partition_by, filter)
    return state.layout.file_refs(kept)


def scan(store: ObjectStore, table_root: str, files: Sequence[FileRef], schema: TableSchema,
         columns: Sequence[str] | None, filter: pc.Expression | None) -> pa.Table:
    """Reads ``files`` (already pruned, see :func:`planned_files`) and filters their rows."""
    arrow_schema = schema.to_arrow()
    if columns is not None:
        unknown = [c for c in columns if c not in arrow_schema.names]
        if unknown:
            raise SchemaMismatchError(f"unknown column(s) {unknown}; the table has {arrow_schema.names}")
    # The filter may name columns that are not selected: read them, filter, then drop them.
    needed = list(columns) if columns is not None else None
    if needed is not None and filter is not None:
        needed = list(arrow_schema.names)
    tables = _parallel(lambda f: read_file(store, table_root, f, arrow_schema, needed, filter), files)
    output_schema = pa.schema([arrow_schema.field(c) for c in columns]) if columns is not None else arrow_schema
    if not tables:
        return output_schema.empty_table()
    return pa.concat_tables(tables).select(output_schema.names)


def verify_files(store: ObjectStore, table_root: str, files: Sequence[FileRef], version: int,
                 progress: Callable[[int], None] | None = None,
                 deep_schema: TableSchema | None = None) -> VerifyReport:
    """Checks each file's presence, size and checksum; given the table's schema as ``deep_schema``,
    also that each file's recorded row count, partition values and statistics hold for its rows."""

    def check(file: FileRef) -> FileProblem | None:
        key = join_key(table_root, file.path)
        try:
            data = store.get(key)
        except FileNotFoundError:
            return FileProblem(path=file.path, problem="missing", detail=store.uri(key))
        damage = _damage(data, file)
        if damage is not None or deep_schema is None:
            return damage
        try:
            rows = _decode(arrow_owned(data), deep_schema.to_arrow())
        except (pa.ArrowException, OSError, ValueError) as error:
            return FileProblem(path=file.path, problem="unreadable", detail=str(error).splitlines()[0])
        mismatches = stats_mismatches(file, rows, deep_schema)
        return FileProblem(path=file.path, problem="stats", detail="; ".join(mismatches)) if mismatches else None

    problems: list[FileProblem] = []
    for problem in _parallel(check, files):
        if problem is not None:
            problems.append(problem)
        if progress is not None:
            progress(1)
    return VerifyReport(version=version, files_checked=len(files), bytes_checked=sum(f.size_bytes for f in files),
                        problems=tuple(problems))
