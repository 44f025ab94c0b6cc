"""The streaming source's changes mode (``readChanges=true``, what ``readStream.changes`` reads).

Offsets, checkpoints and triggers are the streaming source's (:mod:`sleeper_spark.spark.streaming.stream_reader`):
an offset is a version, a micro-batch from N to M delivers the changes of versions N+1..M, and
each version's changes are in exactly one micro-batch. What differs is what a version delivers:
its changes as :mod:`sleeper_spark.table.changes` computes them, so overwrites, deletes, merges
and updates no longer stop the query. The files of an append are spread over tasks as a batch
read spreads them; a version that removed files is one task, which compares its removed and
added rows. Rows are read with pyarrow in the Python workers.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import InputPartition
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import StructType

from sleeper_spark.models import FileRef
from sleeper_spark.spark.common.conversions import conform
from sleeper_spark.spark.common.options import StreamReadOptions
from sleeper_spark.spark.source.reader import ReadTarget
from sleeper_spark.spark.streaming.stream_reader import SleeperStreamReader, check_kept_schema, contiguous_groups
from sleeper_spark.table.changes import CHANGE_COLUMNS, ChangePlan, VersionChanges, plan_changes, read_changes


class ChangesPartition(InputPartition):
    """Changes one task reads: a version that removed files, or some files of appending versions."""

    def __init__(self, index: int, changes: tuple[VersionChanges, ...]) -> None:
        super().__init__(index)
        self.changes = changes


class ChangesStreamReader(SleeperStreamReader):
    """The streaming source delivering changes; ``requested`` holds the change columns last."""

    def __init__(self, target: ReadTarget, requested: StructType, settings: StreamReadOptions) -> None:
        columns = StructType([f for f in requested.fields if f.name not in CHANGE_COLUMNS.names])
        super().__init__(target, columns, settings)
        self.requested = requested

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> Sequence[InputPartition]:
        plan = self._plan(self._version(start), self._version(end))
        if plan is None:
            return []
        compared = [(change,) for change in plan.versions if change.compared]
        appended = [(change, file) for change in plan.versions if not change.compared for file in change.inserted]
        parts: list[tuple[VersionChanges, ...]] = list(compared)
        if appended:
            total = sum(f.size_bytes for _, f in appended)
            wanted = max(2 * self.target.parallelism, math.ceil(total / self.target.max_partition_bytes))
            by_file = {id(file): change for change, file in appended}
            for group in contiguous_groups([f for _, f in appended], wanted):
                parts.append(_per_version([(by_file[id(f)], f) for f in group]))
        return [ChangesPartition(index, part) for index, part in enumerate(parts)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        changes = partition.changes if isinstance(partition, ChangesPartition) else ()
        if not changes:
            return
        table = self._table()
        schema = self.target.schema
        plan = ChangePlan(table=table.name, schema=schema, partition_by=table.state().partition_by,
                          first=changes[0].version, last=changes[-1].version, versions=changes)
        expected = to_arrow_schema(self.requested, timezone="UTC")
        yield from conform(read_changes(table, plan).select(expected.names), expected).to_batches()

    def _changes(self, after: int, up_to: int) -> Iterator[tuple[int, tuple[FileRef, ...]]]:
        """Each version with the files its changes read (for ``maxFilesPerTrigger``)."""
        plan = self._plan(after, up_to)
        for change in plan.versions if plan is not None else ():
            yield change.version, change.inserted + change.removed + change.added

    def _plan(self, after: int, up_to: int) -> ChangePlan | None:
        if up_to <= after:
            return None
        plan = plan_changes(self._table(), after + 1, up_to)
        check_kept_schema(f"a version up to {up_to}", self.target.schema, plan.schema, self.target.table)
        return plan


def _per_version(files: list[tuple[VersionChanges, FileRef]]) -> tuple[VersionChanges, ...]:
    """Files of appending versions as one VersionChanges per version, in order."""
    grouped: dict[int, tuple[VersionChanges, list[FileRef]]] = {}
    for change, file in files:
        grouped.setdefault(change.version, (change, []))[1].append(file)
    return tuple(VersionChanges(c.version, c.committed_at, c.operation, inserted=tuple(fs))
                 for c, fs in grouped.values())
