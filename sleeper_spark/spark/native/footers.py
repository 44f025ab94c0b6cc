"""A FileRef for a Parquet file that Spark's own writer made, from its bytes and footer.

The statistics must mean what :class:`~sleeper_spark.datafiles.stats.StatsAccumulator` means for
files the Python writer makes, since pruning and the JVM file index read both alike: min/max over
the non-null, non-NaN values of each orderable column, and a null count for every top-level
column. The footer gives them for most columns at no cost; where it cannot (nested columns, whose
footer counts are per leaf; floats, whose footer may count NaN in; values too long for the footer;
timestamps Spark wrote as INT96), those columns are read and computed the Python writer's way.

The checksum is SHA-256 of the whole file, as for every other data file: ``verify()`` and the
Python reader check it, so a damaged or truncated file is caught whoever wrote it. The bytes are
read once for both the checksum and the footer.
"""

from __future__ import annotations

import hashlib
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from sleeper_spark.datafiles.stats import StatsAccumulator, partition_value_to_string
from sleeper_spark.errors import SchemaMismatchError
from sleeper_spark.models import ColumnStats, FileRef, TableSchema
from sleeper_spark.models.stat_values import to_stat
from sleeper_spark.storage.arrow_buffers import arrow_reader

_FOOTER_TYPES = frozenset({"bool", "int8", "int16", "int32", "int64", "float32", "float64", "string", "date",
                           "decimal", "timestamp"})


def file_ref(data: bytes, path: str, schema: TableSchema, partition_by: tuple[str, ...], table: str) -> FileRef:
    """The FileRef of the Parquet file ``data`` found at ``path`` (relative to the table root)."""
    return described_file(pq.ParquetFile(arrow_reader(data)), path, len(data),
                          f"sha256:{hashlib.sha256(data).hexdigest()}", schema, partition_by, table)


def described_file(parquet: pq.ParquetFile, path: str, size: int, checksum: str, schema: TableSchema,
                   partition_by: tuple[str, ...], table: str) -> FileRef:
    """The FileRef of an open Parquet file whose size and checksum are known: its footer gives the
    rest (and its data, for the columns the footer cannot describe, see the module doc)."""
    metadata = parquet.metadata
    stats, missing = _footer_stats(metadata, schema)
    if missing:
        stats.update(_computed_stats(parquet, schema, missing))
    for field in schema.fields:
        if not field.nullable and stats[field.name].null_count:
            raise SchemaMismatchError(
                f"column {field.name!r} of table {table!r} is not nullable, but the data holds nulls; "
                "nothing was written"
            )
    partition = {column: _partition_value(parquet, stats[column], metadata.num_rows, column)
                 for column in partition_by}
    return FileRef(path=path, partition=partition, size_bytes=size, row_count=metadata.num_rows,
                   checksum=checksum, column_stats=stats)


def _footer_stats(metadata: pq.FileMetaData, schema: TableSchema) -> tuple[dict[str, ColumnStats], list[str]]:
    """Stats of the flat columns the footer describes fully; the names of those it cannot."""
    leaves: dict[str, list[tuple[Any, int]]] = {}
    for group in range(metadata.num_row_groups):
        row_group = metadata.row_group(group)
        for index in range(row_group.num_columns):
            column = row_group.column(index)
            leaves.setdefault(column.path_in_schema, []).append((column.statistics, row_group.num_rows))
    stats: dict[str, ColumnStats] = {}
    missing: list[str] = []
    for field in schema.fields:
        parts = leaves.get(field.name)
        if parts is None and metadata.num_rows == 0:
            stats[field.name] = ColumnStats(min=None, max=None, null_count=0)
            continue
        column_stats = None if parts is None or field.type.name not in _FOOTER_TYPES else _merged(parts)
        if column_stats is None:
            missing.append(field.name)
        else:
            stats[field.name] = column_stats
    return stats, missing


def _merged(parts: list[tuple[Any, int]]) -> ColumnStats | None:
    """One flat column's stats over its row groups' footer stats, or None where the footer cannot
    give them exactly.

    A row group holds values unless its null count is its row count (a flat column has one value
    or null per row; pyarrow's ``num_values`` counts non-null values only, so it cannot tell).
    Every row group with values must have a min and a max, and neither may be NaN: parquet-mr
    starts a float's bounds at its first value, so a row group that starts with NaN has NaN
    bounds that hide the rest (and Python's ``min``/``max`` ignore a NaN depending on where it
    stands). Those columns are computed from the data instead.
    """
    nulls = 0
    low: Any = None
    high: Any = None
    for statistics, rows in parts:
        if statistics is None or not statistics.has_null_count or statistics.null_count > rows:
            return None
        nulls += statistics.null_count
        if statistics.null_count == rows:
            continue  # only nulls: no bounds to merge
        if not statistics.has_min_max or _is_nan(statistics.min) or _is_nan(statistics.max):
            return None  # a value the footer could not hold (e.g. a very long string), or NaN
        if low is None or statistics.min < low:
            low = statistics.min
        if high is None or statistics.max > high:
            high = statistics.max
    return ColumnStats(min=to_stat(low), max=to_stat(high), null_count=nulls)


def _is_nan(value: Any) -> bool:
    return isinstance(value, float) and value != value


def _computed_stats(parquet: pq.ParquetFile, schema: TableSchema, columns: list[str]) -> dict[str, ColumnStats]:
    arrow_schema = schema.to_arrow()
    # Nullable here: nulls in a required column are refused by the caller, with a clear message.
    wanted = pa.schema([arrow_schema.field(name).with_nullable(True) for name in columns])
    table = parquet.read(columns=columns).select(columns)
    # Spark's INT96 timestamps come back in nanoseconds, lists and maps with other child names.
    table = table.cast(wanted)
    accumulator = StatsAccumulator(wanted)
    accumulator.update(table)
    return accumulator.result()


def _partition_value(parquet: pq.ParquetFile, stats: ColumnStats, rows: int, column: str) -> str | None:
    """The one value a file of one partition holds in ``column``, as FileRef.partition records it."""
    if stats.null_count == rows:
        return None
    if stats.min is not None and stats.min == stats.max and stats.null_count == 0:
        values = [stats.min]
    else:
        values = parquet.read(columns=[column]).column(column).unique().to_pylist()
    if len(values) != 1:
        raise SchemaMismatchError(f"a file Spark wrote for one partition holds {len(values)} values of {column!r}")
    # The stored form of a statistic (an ISO string for a date) prints as the partition value does.
    return partition_value_to_string(values[0])
