"""Writes a DataFrame with Spark's own Parquet writer, then commits the new files as one snapshot.

Spark writes into a directory no other write uses, ``data/spark-<write id>/``, with
``partitionBy`` on hidden columns, one a partition column, that name its folders by value (a hash
of values no folder can name): the data files keep every table column, as the Python writer's
do, so each reader (Spark's, the Python source, ``t.scan()``, compaction) reads them alike.

The files describe themselves where they are written: the write goes through the jar's
``SleeperParquetFormat``, whose writer counts each file's rows and column statistics as the rows
go by and digests the file's bytes as Parquet's writer sends them out, for its size and SHA-256
(:mod:`sleeper_spark.spark.native.write_facts`). The facts reach the driver through an accumulator,
which Spark updates once per successful task, so a retried or speculative attempt adds nothing.
The driver then commits them: it lists no folder and reads no data file, except a file whose
task could not describe (a file system its digesting stream cannot wrap, and a committer that
publishes files only when the job commits), which it reads once for its size and checksum. An
append keeps the files as Arrow columns from the facts to the log entry, with no Python object
per file (:class:`~sleeper_spark.models.columnar.ColumnarAddFiles`); an overwrite, a write that
adds columns and a group commit's append go through ``Table.commit_files`` with FileRefs, like
every other write.

A job that fails commits nothing, and its directory is deleted (best effort). A driver killed
mid-job leaves files that no version refers to: vacuum removes them after its retention.
"""

from __future__ import annotations

import logging
import os
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, TypeVar

import pyarrow as pa
import pyarrow.compute as pc

from sleeper_spark.commit import CommitResult, utc_now
from sleeper_spark.datafiles.paths import NULL_SEGMENT
from sleeper_spark.layout import SPARK_PARTITION_HASH, spark_partition_column, spark_write_dir
from sleeper_spark.models import FileRef, Snapshot, TableSchema, Transaction
from sleeper_spark.models.columnar import ColumnarAddFiles, NewFiles
from sleeper_spark.models.schema_evolution import merged_schema
from sleeper_spark.process_state import SESSION_SETTINGS
from sleeper_spark.spark.common.conversions import quoted_column
from sleeper_spark.spark.common.jvm import hadoop_location, native_entry
from sleeper_spark.spark.native.footers import file_ref as footer_file_ref
from sleeper_spark.spark.native.native_read import native_types
from sleeper_spark.spark.native.partial_overwrite import check_before_staging, staged_replacement
from sleeper_spark.spark.native.write_distribution import distributed
from sleeper_spark.spark.native.write_facts import described_rows, facts_table
from sleeper_spark.state import TableState
from sleeper_spark.state.file_columns import FileLayout
from sleeper_spark.state.file_json import files_json
from sleeper_spark.storage import join_key
from sleeper_spark.table.writes import PartialOverwrite, new_write_id, settle_staged

if TYPE_CHECKING:
    from sleeper_spark.table import Table

log = logging.getLogger(__name__)

_MOST_VALUE_BYTES = 64  # escaped, at most 192 bytes of a folder's name
FORMAT_CLASS = "sleeper.spark.SleeperParquetFormat"  # Spark's Parquet format, each file describing itself
FACTS_OPTION = "sleeper.facts.accumulator"  # SleeperParquetFormat.FACTS_OPTION
_SUCCESS_MARKER = "mapreduce.fileoutputcommitter.marksuccessfuljobs"  # no _SUCCESS file to remove afterwards
_FOOTER_THREADS = 8
_TIMESTAMP_CONF = "spark.sql.parquet.outputTimestampType"
T = TypeVar("T")
R = TypeVar("R")


def write_native(table: Table, df: Any, state: TableState, mode: str, metadata: Mapping[str, str],
                 app_id: str | None, app_version: int | None, merge: TableSchema | None = None,
                 partial: PartialOverwrite | None = None, write_id: str | None = None) -> Snapshot | None:
    """Writes ``df`` (already checked against ``state``'s schema) as one snapshot, or returns None
    when this session cannot take the native path (the caller then uses the Python source).

    ``merge``: the data's schema, for a write with ``merge_schema``; ``df`` then has every column
    of the merged schema, which the files are written with and the commit sets. ``partial``: the
    part of the table an overwrite replaces (see :mod:`sleeper_spark.spark.native.partial_overwrite`).
    ``write_id``: the write's id where the caller chose it (a helper write through ``format("sleeper")``
    finds its snapshot by it).
    """
    spark = df.sparkSession
    check_before_staging(spark, table.name, state, partial)
    schema = merged_schema(state.schema, merge, table.name) if merge is not None else state.schema
    layout = FileLayout(schema, state.partition_by)
    staged = _stage(table, df, layout, write_id, state)
    if staged is None:
        return None
    files, write_id, cleanup = staged
    try:
        if mode == "append" and merge is None and table.group_commit is None:
            result = commit_append(table, files, dict(metadata), write_id, app_id, app_version)
        else:
            # An overwrite, a schema change and a group commit's members carry FileRefs.
            refs = layout.file_refs(files.columns)
            replaced = staged_replacement(spark, table, state, partial, refs)
            result = table.commit_files(refs, mode, dict(metadata), write_id, app_id, app_version, merge=merge,
                                        replaced=replaced)
    finally:
        cleanup.result()
    log.info("table %s: Spark wrote %d file(s) for version %d", table.name, len(files), result.snapshot.version)
    return result.snapshot


def commit_append(table: Table, files: NewFiles, metadata: dict[str, str], write_id: str, app_id: str | None,
                  app_version: int | None) -> CommitResult:
    """Commits ``files`` as an append whose files stay columns up to the log (see ``models/columnar.py``),
    as ``Table.commit_files`` does for FileRefs."""
    snapshot_id = uuid.uuid4().hex
    low, high = _event_times(files.columns, table.head.known_state())

    def build(state: TableState) -> Transaction:
        return ColumnarAddFiles.of(files, snapshot_id=snapshot_id, committed_at=utc_now(), operation="append",
                                   metadata=metadata, write_id=write_id, app_id=app_id, app_version=app_version,
                                   min_event_time=low, max_event_time=high)

    return settle_staged(table.store, table.root, files.paths, lambda: table.head.commit(build))


def _event_times(rows: pa.RecordBatch, state: TableState) -> tuple[datetime | None, datetime | None]:
    """The event-time column's bounds over ``rows``, as ``build_write`` takes them from FileRefs."""
    column = state.event_time_column
    if column is None or column not in state.schema.names or state.schema.field(column).type.name != "timestamp":
        return None, None
    bounds = []
    for side, pick in (("min", pc.min), ("max", pc.max)):
        values = rows.column(f"{side}.{column}")
        bound = pick(pc.cast(values, pa.timestamp("us", values.type.tz), safe=False)).as_py()
        bounds.append(bound.astimezone(timezone.utc) if bound is not None and bound.tzinfo is not None else bound)
    return bounds[0], bounds[1]


def stage_native(table: Table, df: Any, schema: TableSchema, partition_by: tuple[str, ...]
                 ) -> tuple[list[FileRef], str] | None:
    """Spark's own writer writes ``df``'s ``schema`` columns as files of ``table``, which no version
    holds yet; returns them and the write id, or None when this session cannot take the native path.
    A failed job leaves nothing (its directory is removed)."""
    layout = FileLayout(schema, partition_by)
    staged = _stage(table, df, layout)
    if staged is None:
        return None
    files, write_id, cleanup = staged
    cleanup.result()
    return layout.file_refs(files.columns), write_id


def _stage(table: Table, df: Any, layout: FileLayout, write_id: str | None = None, state: TableState | None = None
           ) -> tuple[NewFiles, str, Future[None]] | None:
    """As :func:`stage_native`, the files as columns; and the removal of what Spark left beside
    them (see :func:`described_files`), still running. ``state``: the table's, whose
    ``write.distribution`` the write follows (none given: the rows are written as they come)."""
    schema, partition_by = layout.schema, layout.partition_by
    spark = df.sparkSession
    entry = native_entry(spark)
    if entry is None or not native_types(schema):
        return None
    root = hadoop_location(spark, entry, table.location, table.catalog.config.s3_endpoint)
    if root is None:
        return None
    write_id = write_id or new_write_id()
    write_dir = spark_write_dir(write_id)
    target = f"{root.rstrip('/')}/{write_dir}"
    accumulator = entry.factsAccumulator(spark._jsparkSession)
    try:
        run_write_job(spark, df, schema, partition_by, target, FORMAT_CLASS, {FACTS_OPTION: str(accumulator.id())},
                      state)
        files, cleanup = described_files(table, take_facts(entry, accumulator), write_dir, layout,
                                         local=target.startswith("file:"))
    except BaseException:
        remove_write_dir(table, write_dir)
        raise
    return files, write_id, cleanup


def take_facts(entry: Any, accumulator: Any) -> str:
    """The facts a write's tasks added to ``accumulator``, one JSON object a line (see
    :func:`facts_table`); the JVM forgets the accumulator. They come through a temporary file
    (the JVM driver and this process share a machine): py4j would send them as one long answer,
    which waits on TCP's delayed acknowledgement."""
    path = entry.takeFactsFile(accumulator)
    try:
        with open(path, encoding="utf-8") as source:
            return source.read()
    finally:
        os.unlink(path)


def run_write_job(spark: Any, df: Any, schema: TableSchema, partition_by: tuple[str, ...], target: str,
                  format_name: str, options: Mapping[str, str], state: TableState | None = None) -> None:
    """Spark writes ``df``'s ``schema`` columns into ``target`` in ``format_name`` (Spark's Parquet
    format or the jar's), one level of folders per partition column (see :func:`_folders`); spread
    over tasks as ``state``'s ``write.distribution`` says
    (:mod:`~sleeper_spark.spark.native.write_distribution`)."""
    # SQL text in one call: a classic session builds each Column through py4j, a round trip
    # each (about 1.5 ms), which a write of many columns paid on every call. Where the rows have
    # the table's columns in its order (most writes), "*" keeps them: Spark resolves one star
    # faster than a list of columns (6 against 17 ms for 22 columns).
    same_columns = list(df.columns) == list(schema.names)
    columns = ["*"] if same_columns else [quoted_column(name) for name in schema.names]
    folders = _folders(schema, partition_by)
    columns += [f"{value} AS {hidden}" for hidden, value in folders]
    rows = df if same_columns and not folders else df.selectExpr(*columns)
    if state is not None:
        rows = distributed(rows, state, [hidden for hidden, _ in folders])
    writer = (rows.write.mode("error").format(format_name).options(**options)
              .option(_SUCCESS_MARKER, "false"))
    if folders:
        writer = writer.partitionBy(*[hidden for hidden, _ in folders])
    with _micros_timestamps(spark, any(f.type.name == "timestamp" for f in schema.fields)):
        writer.save(target)


def _folders(schema: TableSchema, partition_by: tuple[str, ...]) -> list[tuple[str, str]]:
    """The hidden columns that name a partition's folders, each with its value (Spark SQL).

    A folder a partition column, each inside the one before, named by its value, so that Spark's
    own partition discovery reads it back from the folder and a reader without the jar can prune
    folders by it (:mod:`sleeper_spark.spark.connect.parquet_scan`); null is Spark's default
    partition folder. Strings Spark would not read back as themselves
    (empty, its default partition's name), that could make a folder name too long (a file name
    has 255 bytes; Spark escapes a character as 3), that look like a hash, or that some file
    systems would fold into another value's folder get a hash of the value instead: capitals and
    characters outside ASCII (macOS and Windows ignore case, macOS Unicode normalization) and a
    trailing dot or space (Windows drops them), since in a shared folder one task's files of both
    values have the same name. The values themselves are in the files, whose writers report them
    (the jar's writer reports each file's partition folders, see ``FactsOutputWriter``).

    Writes before 2026-12-02 through the jar named one folder by a hash of several partition
    columns' values; their files keep those paths, which reads take from the log as any path."""
    return [(spark_partition_column(index), _folder_value(schema, name)) for index, name in enumerate(partition_by)]


def _hashed(part: str) -> str:
    """The folder value of the (quoted, not null) column ``part``: a hash, of the value and a null
    flag as folders of several columns were named before 2026-12-02, so that one value's folder
    name stays what it was."""
    return f"concat('{SPARK_PARTITION_HASH}', CAST(xxhash64({part}, {part} IS NULL) AS STRING))"


def _folder_value(schema: TableSchema, column: str) -> str:
    part = quoted_column(column)
    if schema.field(column).type.name != "string":
        return f"CAST({part} AS STRING)"  # integers, booleans and dates: short text Spark casts back
    named = (f"octet_length({part}) BETWEEN 1 AND {_MOST_VALUE_BYTES} AND octet_length({part}) = length({part}) "
             f"AND {part} != '{NULL_SEGMENT}' AND NOT startswith({part}, '{SPARK_PARTITION_HASH}') "
             f"AND lower({part}) = {part} AND NOT endswith({part}, '.') AND NOT endswith({part}, ' ')")
    return f"CASE WHEN {part} IS NULL OR ({named}) THEN {part} ELSE {_hashed(part)} END"


@contextmanager
def _micros_timestamps(spark: Any, needed: bool) -> Iterator[None]:
    """Spark's default INT96 timestamps have no statistics and overflow pyarrow's nanoseconds after
    2262; the session writes INT64 microseconds while any helper write runs (a per-write option
    does not exist). Writes that overlap share the setting; the last one restores it."""
    setting = SESSION_SETTINGS[_TIMESTAMP_CONF]
    if not needed or (spark.conf.get(_TIMESTAMP_CONF, "") == "TIMESTAMP_MICROS" and setting.users == 0):
        yield
        return
    with setting.lock:
        if setting.users == 0:
            setting.before = spark.conf.get(_TIMESTAMP_CONF, "INT96")
            spark.conf.set(_TIMESTAMP_CONF, "TIMESTAMP_MICROS")
        setting.users += 1
    try:
        yield
    finally:
        with setting.lock:
            setting.users -= 1
            if setting.users == 0:
                spark.conf.set(_TIMESTAMP_CONF, setting.before)


def described_files(table: Table, lines: str, write_dir: str, layout: FileLayout, local: bool
                    ) -> tuple[NewFiles, Future[None]]:
    """The files a write's tasks described in ``lines`` (see :func:`facts_table`), sorted by path;
    and the removal of the files Spark left beside them, running meanwhile (a thread of its own,
    so that the driver's work and the commit overlap it): empty files, and on the local disk
    the ``.<name>.crc`` Hadoop leaves beside each file.

    A file its task could not describe is read here, once, for its size, checksum and footer.
    """
    facts = facts_table(lines, write_dir, layout.schema)
    empty = pc.equal(facts.column("rows"), 0)
    removed = [join_key(table.root, path) for path in facts.filter(empty).column("path").to_pylist()]
    if local:
        removed += [join_key(table.root, crc_name(path)) for path in facts.column("path").to_pylist()]
    cleanup = _deleting(table, removed)
    try:
        return _described(table, facts.filter(pc.invert(empty)), layout), cleanup
    except BaseException:
        cleanup.result()
        raise


def _described(table: Table, facts: pa.Table, layout: FileLayout) -> NewFiles:
    described = pc.and_(pc.is_valid(facts.column("size")), pc.is_valid(facts.column("sha256")))
    unread = facts.filter(pc.invert(described)).column("path").to_pylist()

    def read(path: str) -> FileRef:
        data = table.store.get(join_key(table.root, path))
        return footer_file_ref(data, path, layout.schema, layout.partition_by, table.name)

    rows, finer = described_rows(facts.filter(described), layout, table.name)
    if unread:
        read_back = layout.batch(_parallel(read, unread), [None] * len(unread))
        rows = pa.concat_batches([rows, read_back])
        finer = {name: pa.concat_arrays([bounds, pc.cast(read_back.column(name), bounds.type)])
                 for name, bounds in finer.items()}
    order = pc.sort_indices(rows.column("path"))
    rows = rows.take(order)
    return NewFiles(rows, files_json(layout, rows, {name: bounds.take(order) for name, bounds in finer.items()}))


def _deleting(table: Table, keys: list[str]) -> Future[None]:
    """``keys`` being deleted (best effort) by a thread of its own."""
    if not keys:
        done: Future[None] = Future()
        done.set_result(None)
        return done
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sleeper-cleanup")
    try:
        return pool.submit(_delete, table, keys)
    finally:
        pool.shutdown(wait=False)


def crc_name(path: str) -> str:
    folder, _, name = path.rpartition("/")
    return f"{folder}/.{name}.crc"


def _parallel(work: Callable[[T], R], items: Sequence[T]) -> list[R]:
    if len(items) <= 1:
        return [work(item) for item in items]
    with ThreadPoolExecutor(max_workers=min(_FOOTER_THREADS, len(items)), thread_name_prefix="sleeper-footer") as pool:
        return list(pool.map(work, items))


def remove_write_dir(table: Table, write_dir: str) -> None:
    try:
        keys = [info.key for info in table.store.list(join_key(table.root, write_dir) + "/")]
    except Exception as error:
        log.warning("could not list %s after a failed write: %s; vacuum will remove its files", write_dir, error)
        return
    _delete(table, keys)


def _delete(table: Table, keys: list[str]) -> None:
    if not keys:
        return
    try:
        table.store.delete_many(keys)
    except Exception as error:
        log.warning("could not delete %d file(s) of a Spark write: %s; vacuum will remove data files", len(keys),
                    error)
