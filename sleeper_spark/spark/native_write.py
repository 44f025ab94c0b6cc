"""Writes a DataFrame with Spark's own Parquet writer, then commits the new files as one snapshot.

Spark writes into a directory no other write uses, ``data/spark-<write id>/``, with
``partitionBy`` on a hidden column, a hash of the partition values: the data files keep every
table column, as the Python writer's do, so each reader (Spark's, the Python source,
``t.scan()``, compaction) reads them alike.

The files describe themselves where they are written: the write goes through the jar's
``SleeperParquetFormat``, whose writer counts each file's rows and column statistics as the rows
go by and reads the closed file back, in the same task, for its size and SHA-256
(:mod:`sleeper_spark.spark.write_facts`). The facts reach the driver through an accumulator,
which Spark updates once per successful task, so a retried or speculative attempt adds nothing.
The driver then commits through ``Table.commit_files`` like every other write: it lists no
folder and reads no data file, except a file whose task could not read it back (a committer
that publishes files only when the job commits), which it reads once for its size and checksum.

A job that fails commits nothing, and its directory is deleted (best effort). A driver killed
mid-job leaves files that no version refers to: vacuum removes them after its retention.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TypeVar

from sleeper_spark.layout import spark_write_dir
from sleeper_spark.models import FileRef, Snapshot, TableSchema
from sleeper_spark.models.schema_evolution import merged_schema
from sleeper_spark.process_state import SESSION_SETTINGS
from sleeper_spark.spark.footers import file_ref as footer_file_ref
from sleeper_spark.spark.jvm import hadoop_location, native_entry
from sleeper_spark.spark.native_read import native_types
from sleeper_spark.spark.write_facts import FileFacts, FileRefs, parse_facts
from sleeper_spark.state import TableState
from sleeper_spark.storage import join_key
from sleeper_spark.table.writes import new_write_id

if TYPE_CHECKING:
    from sleeper_spark.table import Table

log = logging.getLogger(__name__)

HIDDEN_COLUMN = "__sleeper_partition"
FORMAT_CLASS = "sleeper.spark.SleeperParquetFormat"  # Spark's Parquet format, each file describing itself
FACTS_OPTION = "sleeper.facts.accumulator"  # SleeperParquetFormat.FACTS_OPTION
_SUCCESS_MARKER = "mapreduce.fileoutputcommitter.marksuccessfuljobs"  # no _SUCCESS file to remove afterwards
_FOOTER_THREADS = 8
_TIMESTAMP_CONF = "spark.sql.parquet.outputTimestampType"
T = TypeVar("T")
R = TypeVar("R")


def write_native(table: Table, df: Any, state: TableState, mode: str, metadata: Mapping[str, str],
                 app_id: str | None, app_version: int | None, merge: TableSchema | None = None) -> Snapshot | None:
    """Writes ``df`` (already checked against ``state``'s schema) as one snapshot, or returns None
    when this session cannot take the native path (the caller then uses the Python source).

    ``merge``: the data's schema, for a write with ``merge_schema``; ``df`` then has every column
    of the merged schema, which the files are written with and the commit sets.
    """
    schema = merged_schema(state.schema, merge, table.name) if merge is not None else state.schema
    staged = stage_native(table, df, schema, state.partition_by)
    if staged is None:
        return None
    files, write_id = staged
    result = table.commit_files(files, mode, dict(metadata), write_id, app_id, app_version, merge=merge)
    log.info("table %s: Spark wrote %d file(s) for version %d", table.name, len(files), result.snapshot.version)
    return result.snapshot


def stage_native(table: Table, df: Any, schema: TableSchema, partition_by: tuple[str, ...]
                 ) -> tuple[list[FileRef], str] | None:
    """Spark's own writer writes ``df``'s ``schema`` columns as files of ``table``, which no version
    holds yet; returns them and the write id, or None when this session cannot take the native path.
    A failed job leaves nothing (its directory is removed)."""
    spark = df.sparkSession
    entry = native_entry(spark)
    if entry is None or not native_types(schema):
        return None
    root = hadoop_location(spark, entry, table.location, table.catalog.config.s3_endpoint)
    if root is None:
        return None
    write_id = new_write_id()
    write_dir = spark_write_dir(write_id)
    target = f"{root.rstrip('/')}/{write_dir}"
    facts = entry.factsAccumulator(spark._jsparkSession, f"sleeper files of write {write_id}")
    try:
        _run_job(spark, df, schema, partition_by, target, str(facts.id()))
        files = described_files(table, parse_facts(entry.takeFacts(facts), write_dir), schema, partition_by,
                                local=target.startswith("file:"))
    except BaseException:
        _remove(table, write_dir)
        raise
    return files, write_id


def _run_job(spark: Any, df: Any, schema: TableSchema, partition_by: tuple[str, ...], target: str,
             facts_id: str) -> None:
    from pyspark.sql import functions as F

    columns = [F.col(quoted_column(name)) for name in schema.names]
    partitioned = bool(partition_by)
    if partitioned:
        # One directory per partition value, named by a hash of the values: Spark's own directory
        # names fail on long values (a file name has 255 bytes) and the values themselves are in
        # the files, whose writers report them. The null flags keep (null, "a") and ("a", null)
        # apart, since the hash skips nulls.
        parts = [F.col(quoted_column(name)) for name in partition_by]
        key = F.xxhash64(*[c for part in parts for c in (part, part.isNull())])
        columns.append(key.alias(HIDDEN_COLUMN))
    writer = (df.select(*columns).write.mode("errorifexists").format(FORMAT_CLASS)
              .option(FACTS_OPTION, facts_id).option(_SUCCESS_MARKER, "false"))
    if partitioned:
        writer = writer.partitionBy(HIDDEN_COLUMN)
    with _micros_timestamps(spark, any(f.type.name == "timestamp" for f in schema.fields)):
        writer.save(target)


def quoted_column(name: str) -> str:
    """``name`` as a Spark column reference, backquoted (names may hold dots and spaces)."""
    return "`" + name.replace("`", "``") + "`"


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


def described_files(table: Table, facts: Iterable[FileFacts], schema: TableSchema, partition_by: tuple[str, ...],
                    local: bool) -> list[FileRef]:
    """FileRefs of the files a write's tasks described; empty files are removed.

    A file its task could not read back is read here, once, for its size, checksum and footer.
    On the local disk, Hadoop leaves a ``.<name>.crc`` beside each file: removed by name.
    """
    described = FileRefs(schema, partition_by, table.name)
    files: list[FileRef] = []
    unread: list[FileFacts] = []
    removed: list[str] = []
    for fact in facts:
        if fact.rows == 0:
            removed.append(join_key(table.root, fact.path))  # Spark writes an empty file for an empty input
        elif fact.described:
            files.append(described.of(fact))
        else:
            unread.append(fact)
        if local:
            removed.append(join_key(table.root, _crc_name(fact.path)))

    def read(fact: FileFacts) -> FileRef:
        data = table.store.get(join_key(table.root, fact.path))
        return footer_file_ref(data, fact.path, schema, partition_by, table.name)

    files += _parallel(read, unread)
    _delete(table, removed)
    return sorted(files, key=lambda f: f.path)


def _crc_name(path: str) -> str:
    folder, _, name = path.rpartition("/")
    return f"{folder}/.{name}.crc"


def _parallel(work: Callable[[T], R], items: Sequence[T]) -> list[R]:
    if len(items) <= 1:
        return [work(item) for item in items]
    with ThreadPoolExecutor(max_workers=min(_FOOTER_THREADS, len(items)), thread_name_prefix="sleeper-footer") as pool:
        return list(pool.map(work, items))


def _remove(table: Table, write_dir: str) -> None:
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
