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

_FOOTER_TYPES = frozenset({"bool", "int8", "int16", "int32", "int64", "float32", "float64", "string", "date",
                           "decimal", "timestamp"})


def file_ref(data: bytes, path: str, schema: TableSchema, partition_by: tuple[str, ...], table: str) -> FileRef:
    """The FileRef of the Parquet file ``data`` found at ``path`` (relative to the table root)."""
    parquet = pq.ParquetFile(pa.BufferReader(data))
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
    return FileRef(path=path, partition=partition, size_bytes=len(data), row_count=metadata.num_rows,
                   checksum=f"sha256:{hashlib.sha256(data).hexdigest()}", column_stats=stats)


def _footer_stats(metadata: pq.FileMetaData, schema: TableSchema) -> tuple[dict[str, ColumnStats], list[str]]:
    """Stats of the flat columns the footer describes fully; the names of those it cannot."""
    leaves: dict[str, list[Any]] = {}
    for group in range(metadata.num_row_groups):
        row_group = metadata.row_group(group)
        for index in range(row_group.num_columns):
            column = row_group.column(index)
            leaves.setdefault(column.path_in_schema, []).append(column.statistics)
    stats: dict[str, ColumnStats] = {}
    missing: list[str] = []
    for field in schema.fields:
        parts = leaves.get(field.name)
        if parts is None and metadata.num_rows == 0:
            stats[field.name] = ColumnStats(min=None, max=None, null_count=0)
            continue
        if parts is None or field.type.name not in _FOOTER_TYPES or any(s is None or not s.has_null_count
                                                                         for s in parts):
            missing.append(field.name)
            continue
        nulls = sum(s.null_count for s in parts)
        with_values = [s for s in parts if s.null_count < s.num_values]
        if any(not s.has_min_max for s in with_values):
            missing.append(field.name)  # a value the footer could not hold (e.g. a very long string)
            continue
        low = min((s.min for s in with_values), default=None)
        high = max((s.max for s in with_values), default=None)
        if _is_nan(low) or _is_nan(high):
            missing.append(field.name)  # the footer counted NaN in: compute without it
            continue
        stats[field.name] = ColumnStats(min=to_stat(low), max=to_stat(high), null_count=nulls)
    return stats, missing


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
