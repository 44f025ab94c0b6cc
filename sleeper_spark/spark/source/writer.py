"""The write side of the ``sleeper`` data source.

Where each step runs (PySpark 4.3): ``SleeperDataSource.writer()`` in a Python worker of the
driver while the query is planned, before any task; ``SleeperWriter.write()`` in the executors'
Python workers, once per task attempt; ``commit()`` / ``abort()`` in yet another Python worker
of the driver. The writer object is pickled between them, so it carries plain data only (the
catalog's options, never a catalog or a client).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass

import pyarrow as pa
from pyspark import TaskContext
from pyspark.sql.datasource import DataSourceArrowWriter, WriterCommitMessage
from pyspark.sql.types import StructType

from sleeper_spark.commit import CommitResult
from sleeper_spark.datafiles.writer import DataFileWriter
from sleeper_spark.errors import CommitConflictError, ConfigError, TableAlreadyExistsError, TableNotFoundError
from sleeper_spark.models import FileRef, TableSchema
from sleeper_spark.models.schema import check_data_schema
from sleeper_spark.models.schema_evolution import merged_schema
from sleeper_spark.spark.common.messages import short_traceback
from sleeper_spark.spark.common.options import WriteOptions, open_catalog, parse_write
from sleeper_spark.table import Table
from sleeper_spark.table.writes import check_partial_overwrite, check_write_args, delete_staged, dynamic_overwrite

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class SleeperCommitMessage(WriterCommitMessage):
    """What one successful task attempt staged: its files, not yet part of the table."""

    files: tuple[FileRef, ...]
    partition_id: int
    attempt: int


@dataclass(frozen=True)
class WriteTarget:
    """The table a write goes to, resolved on the driver: enough for tasks to stage files."""

    options: tuple[tuple[str, str], ...]  # the data source options; the catalog is rebuilt from them
    table: str
    table_id: str
    root: str
    schema: TableSchema  # with the columns the data adds, for a write with merge_schema
    partition_by: tuple[str, ...]
    target_file_bytes: int
    row_group_rows: int
    merge_schema: bool = False


def plan_write(options: Mapping[str, str], data_schema: StructType, overwrite: bool) -> SleeperWriter:
    """Resolves (or creates) the table and checks the data's schema; runs before any task."""
    settings = parse_write(options)
    mode = "overwrite" if overwrite else "append"
    metadata = check_write_args(mode, settings.metadata, settings.app_id, settings.app_version)
    partial = check_partial_overwrite(mode, settings.replace_where, settings.partition_overwrite_mode)
    if partial is not None and partial.replace_where is not None:
        # commit() runs in a Python worker, where no SparkSession can evaluate the condition.
        raise ConfigError("replaceWhere needs Spark's own Parquet writer, which this session lacks (the jar, see "
                          "ss.configure_spark), or the driver: write with t.write(df, mode='overwrite', "
                          "replace_where=...) or through the SQL catalog; nothing was written")
    catalog = open_catalog(options)
    table = _table_for(catalog_table=lambda: catalog.table(settings.table),
                       create=lambda: catalog.create_table(settings.table, data_schema,
                                                           partition_by=settings.partition_by or (),
                                                           event_time_column=settings.event_time_column))
    state = table.state()
    if settings.partition_by is not None and settings.partition_by != state.partition_by:
        raise ConfigError(f"table {table.name!r} is partitioned by {list(state.partition_by)}, "
                          f"not {list(settings.partition_by)}; nothing was written")
    # Refused here, on the driver, so that no task stages a single file.
    data = TableSchema.from_any(data_schema)
    schema = merged_schema(state.schema, data, table.name) if settings.merge_schema else state.schema
    check_data_schema(data, schema, table.name, missing_ok=settings.merge_schema)
    target = WriteTarget(
        options=tuple(sorted(options.items())), table=table.name, table_id=table.table_id, root=table.root,
        schema=schema, partition_by=state.partition_by, merge_schema=settings.merge_schema,
        target_file_bytes=settings.target_file_bytes, row_group_rows=settings.row_group_rows,
    )
    return SleeperWriter(target, settings, metadata, overwrite, dynamic=partial is not None and partial.dynamic)


def _table_for(catalog_table: Callable[[], Table], create: Callable[[], Table]) -> Table:
    try:
        return catalog_table()
    except TableNotFoundError:
        pass
    try:
        return create()
    except TableAlreadyExistsError:
        return catalog_table()  # another job created it first: write into theirs


class SleeperWriter(DataSourceArrowWriter):
    """Stages Parquet files in the tasks and commits them as one snapshot."""

    def __init__(self, target: WriteTarget, settings: WriteOptions, metadata: dict[str, str],
                 overwrite: bool, dynamic: bool = False) -> None:
        self.target = target
        self.mode = "overwrite" if overwrite else "append"
        self.dynamic = dynamic  # partitionOverwriteMode=dynamic: replaces the partitions written to only
        self.metadata = metadata
        self.write_id = settings.write_id
        self.app_id = settings.app_id
        self.app_version = settings.app_version

    # -- executors -----------------------------------------------------------------------

    @short_traceback
    def write(self, iterator: Iterator[pa.RecordBatch]) -> SleeperCommitMessage:
        return stage_files(self.target, iterator)

    # -- driver --------------------------------------------------------------------------

    @short_traceback
    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        commit_messages(self.target, messages, self.mode, self.metadata, self.write_id, self.app_id,
                        self.app_version, dynamic=self.dynamic)

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        abort_messages(self.target, messages, self.write_id)


def stage_files(target: WriteTarget, batches: Iterator[pa.RecordBatch]) -> SleeperCommitMessage:
    """Writes one task's batches as data files of ``target``; nothing is visible until a commit.

    Shared by the batch and the streaming writer, so that both stage files the same way.
    """
    store = open_catalog(dict(target.options)).backend.store
    writer = DataFileWriter(store, target.root, target.schema, target.partition_by, target.table,
                            target_file_bytes=target.target_file_bytes, row_group_rows=target.row_group_rows)
    files = writer.write_all(_conformed(batches, target.schema.to_arrow()))
    context = TaskContext.get()
    return SleeperCommitMessage(
        files=tuple(files),
        partition_id=context.partitionId() if context else 0,
        attempt=context.attemptNumber() if context else 0,
    )


def commit_messages(target: WriteTarget, messages: Iterable[WriterCommitMessage | None], mode: str,
                    metadata: dict[str, str], write_id: str, app_id: str | None,
                    app_version: int | None, dynamic: bool = False) -> CommitResult:
    """Commits the files of the successful task attempts as one snapshot of ``target``; ``dynamic``:
    an overwrite replaces only the partitions of these files."""
    files = files_of(messages)
    try:
        table = _table(target)
    except BaseException:
        _delete(target, files)  # nothing was committed: the log was never written to
        raise
    replaced = dynamic_overwrite(files, target.partition_by) if dynamic and mode == "overwrite" else None
    result = table.commit_files(files, mode, metadata, write_id, app_id, app_version,
                                merge=target.schema if target.merge_schema else None, replaced=replaced)
    log.info("table %s: write %s is version %d (%d files)", table.name, write_id, result.snapshot.version,
             len(files))
    return result


def abort_messages(target: WriteTarget, messages: list[WriterCommitMessage | None], write_id: str) -> None:
    """Deletes what a failed write staged, unless ``commit_messages`` has handled it already."""
    # Spark calls abort() when a task failed for good (its message is None and commit() never
    # ran) and also after commit() raised. In the second case commit() has already deleted
    # what it certainly did not commit, and kept the files of a commit whose outcome is
    # unknown: deleting them here could remove files of a committed version.
    if messages and all(message is not None for message in messages):
        log.warning("write %s to %s failed in commit(); staged files were handled there", write_id, target.table)
        return
    _delete(target, files_of(messages))


def _table(target: WriteTarget) -> Table:
    table = open_catalog(dict(target.options)).table(target.table)
    if table.table_id != target.table_id:
        raise CommitConflictError(
            f"table {target.table!r} was dropped and created again during the write; nothing was committed"
        )
    return table


def _delete(target: WriteTarget, files: list[FileRef]) -> None:
    if files:
        store = open_catalog(dict(target.options)).backend.store
        delete_staged(store, target.root, files)


def files_of(messages: Iterable[WriterCommitMessage | None]) -> list[FileRef]:
    """The staged files of the successful task attempts, in message order."""
    return [file for message in messages if isinstance(message, SleeperCommitMessage) for file in message.files]


def _conformed(batches: Iterable[pa.RecordBatch], schema: pa.Schema) -> Iterator[pa.RecordBatch]:
    """Spark's batches with the table's Arrow types.

    The driver has checked the column types already (and let a merge_schema write lack nullable
    columns, filled here with nulls); what may still differ is representation:
    Spark labels timestamps with the session time zone (the instants are UTC either way) and
    names list and map children its own way. Columns are cast one by one and the batch is
    rebuilt in the table's column order; DataFileWriter then checks nulls in required columns.
    """
    for batch in batches:
        if batch.schema.equals(schema):
            yield batch
            continue
        columns = []
        for field in schema:
            if field.name not in batch.schema.names:  # a merge_schema write may lack nullable columns
                columns.append(pa.nulls(batch.num_rows, field.type))
                continue
            column = batch.column(field.name)
            columns.append(column if column.type.equals(field.type) else column.cast(field.type))
        yield pa.RecordBatch.from_arrays(columns, schema=schema)
