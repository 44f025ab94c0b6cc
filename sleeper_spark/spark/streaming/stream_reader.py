"""The streaming source of the ``sleeper`` data source: the rows each new version appends.

Where each step runs (PySpark 4.3, verified by running it): ``SleeperDataSource.streamReader()``
is called in a Python worker of the driver when the query plans its scan (the reader made there
is pickled into the tasks, which call ``read()``), and again in one long-lived driver worker
that serves ``initialOffset()``, ``latestOffset()``, ``partitions()`` and ``commit()`` for the
whole run of the query. Offsets travel through the JVM as JSON and are kept in the checkpoint.

An offset is ``{"table_id": ..., "version": N}``: every row appended up to version N has been
delivered. A micro-batch from N to M reads the log entries N+1..M and delivers the files they
add, in version order. Appends deliver their files; compactions rewrite rows that were
delivered already and are skipped; a version that removes rows otherwise (an overwrite, a
delete) cannot be expressed as new rows, so it fails the query with a ``ConfigError`` unless
``ignoreChanges`` is set, in which case the files it adds are delivered (rows it kept are
delivered again). A version range whose log entries were truncated fails with a
``SnapshotNotFoundError``.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxFiles,
    SupportsTriggerAvailableNow,
)
from pyspark.sql.types import StructType

from sleeper_spark.errors import ConfigError, SchemaMismatchError, SnapshotNotFoundError, StorageError
from sleeper_spark.log import LogThrottledError
from sleeper_spark.models import (
    AddFiles,
    AppendGroup,
    FileRef,
    FoldedTransaction,
    ReplaceFiles,
    SetSchema,
    TableSchema,
)
from sleeper_spark.models.schema import same_type
from sleeper_spark.spark.common.options import StreamReadOptions, open_catalog
from sleeper_spark.spark.source.reader import FilesPartition, ReadTarget, SleeperReader
from sleeper_spark.table import Table

Offset = dict[str, Any]


class SleeperStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Plans micro-batches from the log between two versions; reads files like a batch read."""

    def __init__(self, target: ReadTarget, requested: StructType, settings: StreamReadOptions) -> None:
        # The files are read exactly as a batch read reads them (the same casts to Spark's types).
        self.files = SleeperReader(target, requested)
        self.target = target
        self.settings = settings
        self.until: int | None = None  # the last version of a Trigger.AvailableNow run

    # -- the driver's long-lived worker ---------------------------------------------------

    def initialOffset(self) -> Offset:
        current = self._table().state().version
        settings = self.settings
        if settings.starting_latest:
            return self._offset(current)
        if settings.starting_version is None:
            return self._offset(1)  # transaction 1 creates the table and holds no rows
        if settings.starting_version > current:
            raise SnapshotNotFoundError(f"table {self.target.table!r} has no version {settings.starting_version} "
                                        f"(latest: {current}); startingVersion must name a committed version")
        return self._offset(settings.starting_version - 1)

    def prepareForTriggerAvailableNow(self) -> None:
        self.until = self._table().state().version

    def getDefaultReadLimit(self) -> ReadLimit:
        limit = self.settings.max_files_per_trigger
        return ReadMaxFiles(limit) if limit else ReadAllAvailable()

    def latestOffset(self, start: Offset, limit: ReadLimit) -> Offset:
        after = self._version(start)
        newest = self._table().state().version
        if self.until is not None:
            newest = min(newest, self.until)
        if newest <= after:
            return start
        if isinstance(limit, ReadMaxFiles):
            newest = self._capped(after, newest, limit.max_files)
        return self._offset(newest)

    def partitions(self, start: Offset, end: Offset) -> Sequence[InputPartition]:
        files = [file for _, added in self._changes(self._version(start), self._version(end)) for file in added]
        if not files:
            return []
        total = sum(f.size_bytes for f in files)
        wanted = max(2 * self.target.parallelism, math.ceil(total / self.target.max_partition_bytes))
        return [FilesPartition(index, group) for index, group in enumerate(contiguous_groups(files, wanted))]

    # -- executors ------------------------------------------------------------------------

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return self.files.read(partition)

    # -- helpers --------------------------------------------------------------------------

    def _table(self) -> Table:
        table = open_catalog(dict(self.target.options)).table(self.target.table)
        if table.table_id != self.target.table_id:
            raise ConfigError(f"table {self.target.table!r} was dropped and created again since this streaming "
                              "query started; start the query again with a new checkpoint")
        return table

    def _offset(self, version: int) -> Offset:
        return {"table_id": self.target.table_id, "version": version}

    def _version(self, offset: Offset) -> int:
        if offset.get("table_id") != self.target.table_id:
            raise ConfigError(f"the checkpoint of this streaming query belongs to another table "
                              f"{offset.get('table_id')!r} than {self.target.table!r} ({self.target.table_id}); "
                              "a dropped and re-created table needs a new checkpoint")
        return int(offset["version"])

    def _capped(self, after: int, newest: int, max_files: int) -> int:
        """The last version up to which the files added stay within ``max_files`` (at least one version)."""
        count, last = 0, after
        for number, added in self._changes(after, newest):
            if count and count + len(added) > max_files:
                return last
            count, last = count + len(added), number
            if count >= max_files:
                return number
        return newest

    def _changes(self, after: int, up_to: int) -> Iterator[tuple[int, tuple[FileRef, ...]]]:
        """Each version in ``after+1 .. up_to`` with the files it delivers, read from the log."""
        if up_to <= after:
            return
        head = self._table().head
        expected = after + 1
        try:
            # A log read stops at the first number it lacks, or skips to the first it holds.
            for entry in head.entries(after=after, up_to=up_to):
                if entry.number != expected:
                    break
                txn = entry.transaction()
                check_stream_schema(entry.number, txn, self.target.schema, self.target.table)
                yield entry.number, delivered_files(entry.number, txn, self.settings.ignore_changes,
                                                    self.target.table)
                expected += 1
            first = head.first_number() if expected <= up_to else None
        except LogThrottledError as error:
            raise StorageError(f"table {self.target.table!r}: reading the log was throttled: {error}") from None
        if expected <= up_to:
            missing = f"{expected}..{min(up_to, first - 1)}" if first is not None and first > expected else \
                f"{expected}..{up_to}"
            raise SnapshotNotFoundError(
                f"table {self.target.table!r}: versions {missing} are no longer in the log (it was truncated), so "
                f"this stream cannot deliver them; start a new query (new checkpoint) with startingVersion=latest "
                f"or a version the log still holds"
            )


def check_stream_schema(number: int, txn: FoldedTransaction, schema: TableSchema, table: str) -> None:
    """A query keeps the schema it started with: a version that adds columns is read without
    them, one that widens or drops a column of that schema stops the query with a clear error."""
    evolved = txn.schema_ if isinstance(txn, (SetSchema, AddFiles, ReplaceFiles)) else None
    if evolved is not None:
        check_kept_schema(f"version {number}", schema, evolved, table)


def check_kept_schema(where: str, schema: TableSchema, evolved: TableSchema, table: str) -> None:
    """Refuses ``evolved`` where it widened or dropped a column of the query's ``schema``."""
    changed = [f.name for f in schema.fields
               if f.name not in evolved.names or not same_type(f.type, evolved.field(f.name).type)]
    if changed:
        raise SchemaMismatchError(
            f"table {table!r}: {where} widened or dropped column(s) {changed} that this streaming query "
            "reads; a query keeps the schema it started with. Restart the query to read the new schema"
        )


def delivered_files(number: int, txn: FoldedTransaction, ignore_changes: bool, table: str) -> tuple[FileRef, ...]:
    """The files whose rows version ``number`` adds to a stream."""
    if isinstance(txn, (AddFiles, AppendGroup)):
        return txn.files
    if isinstance(txn, ReplaceFiles):
        if txn.operation == "compact":
            return ()  # the same rows, rewritten: they were delivered already
        if not txn.removed or ignore_changes:
            return txn.added  # nothing removed (an overwrite of an empty table), or changes allowed
        raise ConfigError(
            f"table {table!r}: version {number} ({txn.operation}) removed {len(txn.removed)} file(s); a streaming "
            f"read delivers appended rows only. Set the option ignoreChanges=true to deliver the files such "
            f"versions add (rows they keep are delivered again), or start a new query (new checkpoint) with "
            f"startingVersion={number + 1}"
        )
    return ()  # creating the table, schema and property changes add no rows


def contiguous_groups(files: Sequence[FileRef], groups: int) -> list[list[FileRef]]:
    """Splits ``files`` into at most ``groups`` runs of similar size, keeping their order.

    Unlike a batch read's bin packing, runs keep version order: task ``i`` holds rows of
    versions no later than task ``i + 1``.
    """
    groups = max(1, min(groups, len(files)))
    total = sum(max(f.size_bytes, 1) for f in files)
    runs: list[list[FileRef]] = [[] for _ in range(groups)]
    before = 0
    for file in files:
        size = max(file.size_bytes, 1)
        # The run whose share of the bytes holds the file's middle: runs stay in order and even.
        runs[min(groups - 1, (2 * before + size) * groups // (2 * total))].append(file)
        before += size
    return [run for run in runs if run]
