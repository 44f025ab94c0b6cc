"""The streaming sink of the ``sleeper`` data source: one snapshot per micro-batch, exactly once.

Where each step runs (PySpark 4.3, verified by running it): for every micro-batch Spark calls
``SleeperDataSource.streamWriter()`` twice, in a Python worker of the driver while it plans the
batch and again in the worker that commits it; ``write()`` runs in the executors' Python
workers, once per task attempt; ``commit(messages, batchId)`` / ``abort()`` run in that
committing worker. The options carry the query's ``checkpointLocation`` but not its id.

Exactly once. The tasks of a streaming query see its id as the task property
``sql.streaming.queryId``; Spark keeps that id in the checkpoint, so it is the same after every
restart from one checkpoint, and a new checkpoint gets a new one. Each task puts it in its
commit message, and ``commit()`` commits the batch with ``app_id`` = query id and
``app_version`` = batch id. Spark writes a batch's offsets before running it and marks it done
in the checkpoint only after ``commit()`` returned; after a crash it runs the unmarked batch
again, with the same id and the same input. If the earlier run's commit reached the log, the
table's state already holds that (app_id, app_version): the replay commits nothing and deletes
the files it staged. If it did not, the replay commits the batch. Either way the batch is in the
table once.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

import pyarrow as pa
from pyspark import TaskContext
from pyspark.sql.datasource import DataSourceStreamArrowWriter, WriterCommitMessage
from pyspark.sql.types import StructType

from sleeper_spark.errors import ConfigError
from sleeper_spark.spark.common.options import open_catalog, parse_stream_write
from sleeper_spark.spark.source.writer import (
    SleeperCommitMessage,
    WriteTarget,
    abort_messages,
    commit_messages,
    files_of,
    plan_write,
    stage_files,
)
from sleeper_spark.table.writes import delete_staged, new_write_id

log = logging.getLogger(__name__)

QUERY_ID_PROPERTY = "sql.streaming.queryId"  # a task property Spark sets for streaming queries
QUERY_ID_KEY = "streaming.query_id"  # snapshot metadata
BATCH_ID_KEY = "streaming.batch_id"


@dataclass(frozen=True)
class StreamCommitMessage(SleeperCommitMessage):
    """A task's staged files, and the id of the streaming query that ran the task."""

    query_id: str | None


def plan_stream_write(options: Mapping[str, str], data_schema: StructType, overwrite: bool) -> SleeperStreamWriter:
    """Resolves (or creates) the table and checks the schema, as a batch write does."""
    if overwrite:
        raise ConfigError("the sleeper streaming sink supports outputMode('append') only; "
                          "'complete' would replace the table on every micro-batch")
    settings = parse_stream_write(options)
    if settings.app_id is not None or settings.app_version is not None:
        raise ConfigError("the streaming sink sets app_id (the query id) and app_version (the batch id) "
                          "itself; remove those options")
    batch_writer = plan_write(options, data_schema, overwrite=False)
    return SleeperStreamWriter(batch_writer.target, batch_writer.metadata)


class SleeperStreamWriter(DataSourceStreamArrowWriter):
    """Stages each micro-batch like a batch write and commits it once per (query, batch)."""

    def __init__(self, target: WriteTarget, metadata: dict[str, str]) -> None:
        self.target = target
        self.metadata = metadata

    # -- executors -----------------------------------------------------------------------

    def write(self, iterator: Iterator[pa.RecordBatch]) -> StreamCommitMessage:
        staged = stage_files(self.target, iterator)
        context = TaskContext.get()
        query_id = context.getLocalProperty(QUERY_ID_PROPERTY) if context else None
        return StreamCommitMessage(files=staged.files, partition_id=staged.partition_id, attempt=staged.attempt,
                                   query_id=query_id)

    # -- driver --------------------------------------------------------------------------

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        files = files_of(messages)
        if not files:
            log.info("table %s: micro-batch %d staged no rows; nothing to commit", self.target.table, batchId)
            return
        query_id = self._query_id(messages, batchId)
        metadata = {**self.metadata, QUERY_ID_KEY: query_id, BATCH_ID_KEY: str(batchId)}
        result = commit_messages(self.target, messages, "append", metadata, new_write_id(), query_id, batchId)
        if not result.committed:
            log.info("table %s: micro-batch %d of query %s was committed before (version %d); the replay "
                     "committed nothing", self.target.table, batchId, query_id, result.snapshot.version)

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        abort_messages(self.target, messages, f"micro-batch {batchId}")

    def _query_id(self, messages: list[WriterCommitMessage | None], batch_id: int) -> str:
        ids = {m.query_id for m in messages if isinstance(m, StreamCommitMessage)}
        if len(ids) == 1 and None not in ids:
            return str(ids.pop())
        # Without the query id no commit can be made exactly once: refuse rather than risk a duplicate.
        store = open_catalog(dict(self.target.options)).backend.store
        delete_staged(store, self.target.root, files_of(messages))
        raise ConfigError(f"table {self.target.table}: micro-batch {batch_id} cannot be committed exactly once: "
                          f"its tasks reported streaming query ids {sorted(map(str, ids))}, expected one "
                          f"(Spark's task property {QUERY_ID_PROPERTY}); nothing was committed")
