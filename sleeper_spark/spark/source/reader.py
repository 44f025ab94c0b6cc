"""The read side of the ``sleeper`` data source.

Where each step runs (PySpark 4.3): ``SleeperDataSource.schema()`` in a Python worker of the
driver when the DataFrame is loaded; ``reader()``, ``pushFilters()`` and ``partitions()``
together in another driver worker each time a query is planned; ``read()`` in the executors,
once per input partition. The data source object travels between them pickled, so the version
resolved in ``schema()`` stays pinned for every query on that DataFrame.
"""

from __future__ import annotations

import heapq
import math
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import pyarrow as pa
from pyspark.sql.datasource import DataSourceReader, Filter, InputPartition
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import StructType

from sleeper_spark.models import FileRef, TableSchema
from sleeper_spark.models.schema import check_data_schema
from sleeper_spark.spark.common.conversions import conform
from sleeper_spark.spark.common.messages import short_traceback
from sleeper_spark.spark.common.options import GUARD_COLUMN, open_catalog
from sleeper_spark.spark.conditions.filters import any_of, prune_expression
from sleeper_spark.spark.source.scans import is_guard, record_scan
from sleeper_spark.table.reading import planned_files, read_file


@dataclass(frozen=True)
class ReadTarget:
    """One table at one version, resolved on the driver; plain data, safe to pickle."""

    options: tuple[tuple[str, str], ...]
    table: str
    table_id: str
    root: str
    version: int  # a transaction number
    schema: TableSchema
    parallelism: int
    max_partition_bytes: int
    relation: str  # one id per loaded DataFrame: the scans that share Spark's read plan
    guarded: bool  # the DataFrame carries the always-true filter on GUARD_COLUMN


class FilesPartition(InputPartition):
    """The data files one task reads."""

    def __init__(self, index: int, files: Sequence[FileRef]) -> None:
        super().__init__(index)
        self.files = tuple(files)


class SleeperReader(DataSourceReader):
    """Prunes files by the pushed filters, spreads them over tasks and reads them as Arrow."""

    def __init__(self, target: ReadTarget, requested: StructType) -> None:
        columns = StructType([f for f in requested.fields if f.name != GUARD_COLUMN])
        check_data_schema(TableSchema.from_any(columns), target.schema, target.table)
        self.target = target
        self.requested = requested
        self.scans: list[list[Filter]] | None = None  # None: read every file

    def pushFilters(self, filters: list[Filter]) -> list[Filter]:
        # Every filter but the guard goes back to Spark: see sleeper_spark.spark.source.scans.
        arrow_schema = self.target.schema.to_arrow()
        guarded = self.target.guarded and any(is_guard(f) for f in filters)
        if guarded:
            usable = [f for f in filters if not is_guard(f) and prune_expression(f, arrow_schema) is not None]
            self.scans = record_scan(self.target.relation, usable)
        return [f for f in filters if not (guarded and is_guard(f))]

    def planned_files(self) -> list[FileRef]:
        """The files a scan reads after pruning (what :meth:`partitions` spreads over tasks)."""
        catalog = open_catalog(dict(self.target.options))
        state = catalog.table(self.target.table).state(self.target.version)
        if self.scans is None:
            return planned_files(state, None)
        arrow_schema = self.target.schema.to_arrow()
        alternatives = [[e for f in scan if (e := prune_expression(f, arrow_schema)) is not None]
                        for scan in self.scans]
        return planned_files(state, any_of(alternatives))

    def partitions(self) -> list[InputPartition]:
        files = self.planned_files()
        if not files:
            return []  # Spark then runs a single read(InputPartition(None))
        total = sum(f.size_bytes for f in files)
        wanted = max(2 * self.target.parallelism, math.ceil(total / self.target.max_partition_bytes))
        return [FilesPartition(i, group) for i, group in enumerate(bin_pack(files, wanted))]

    @short_traceback
    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        files = partition.files if isinstance(partition, FilesPartition) else ()
        target = self.target
        store = open_catalog(dict(target.options)).backend.store
        table_schema = target.schema.to_arrow()
        # Spark checks the batches against exactly this schema: UTC zone, string not large_string.
        expected = to_arrow_schema(self.requested, timezone="UTC")
        for file in files:
            data = read_file(store, target.root, file, table_schema, None, None)
            if GUARD_COLUMN in expected.names:
                data = data.append_column(GUARD_COLUMN, pa.repeat(pa.scalar(True), data.num_rows))
            yield from conform(data, expected).to_batches()


def bin_pack(files: Sequence[FileRef], bins: int) -> list[list[FileRef]]:
    """Spreads files over at most ``bins`` groups of similar total size (largest first)."""
    bins = max(1, min(bins, len(files)))
    heap = [(0, index) for index in range(bins)]
    groups: list[list[tuple[int, FileRef]]] = [[] for _ in range(bins)]
    order = sorted(range(len(files)), key=lambda i: files[i].size_bytes, reverse=True)
    for position in order:
        size, index = heapq.heappop(heap)
        groups[index].append((position, files[position]))
        heapq.heappush(heap, (size + files[position].size_bytes, index))
    # Inside a task, files keep their commit order.
    return [[file for _, file in sorted(group, key=lambda item: item[0])] for group in groups if group]


def default_parallelism() -> int:
    return os.cpu_count() or 2
