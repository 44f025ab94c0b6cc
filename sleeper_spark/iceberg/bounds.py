"""A data file's column statistics as Iceberg metrics, published only where they are exact and safe.

Counts are :mod:`sleeper_spark.iceberg.counts`' job; the bounds are this module's.

The rules (:mod:`sleeper_spark.datafiles.bound_values`, which the Delta publisher shares) err on
the side of a wider bound, or of none: a reader that skips a file on a bound one step off drops
rows silently. Beyond them, for Iceberg:

* only top-level columns of primitive type, never partition columns (their values are not in
  the files: readers take them from the partition);
* a min above its max: no bounds for that column; a null count above the row count: nothing for
  that column (readers would take it as all null);
* floats: Iceberg orders -0.0 below 0.0, which is why a zero min is published as -0.0;
* binary columns: counts only.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from pyiceberg.conversions import to_bytes
from pyiceberg.types import DoubleType, FloatType, PrimitiveType

from sleeper_spark.datafiles.bound_values import (
    MAX_STRING_BOUND_BYTES,
    UNUSABLE,
    days_since_epoch,
    float_bound,
    micros_since_epoch,
    parse_stat,
    string_lower,
    string_upper,
)
from sleeper_spark.iceberg.counts import CountsEncoder
from sleeper_spark.iceberg.schema import iceberg_type
from sleeper_spark.models import ColumnStats, TableSchema
from sleeper_spark.models.files import StatValue
from sleeper_spark.models.schema import DataType

_NESTED = ("list", "struct", "map")
# Imported from here by the Iceberg entries and the tests.
__all__ = ["MAX_STRING_BOUND_BYTES", "FileMetrics", "MetricsEncoder", "days_since_epoch", "micros_since_epoch"]


@dataclass(frozen=True)
class FileMetrics:
    """The column metrics of one Iceberg data file, keyed by field id."""

    value_counts: dict[int, int]
    null_value_counts: dict[int, int]
    nan_value_counts: dict[int, int]
    lower_bounds: dict[int, bytes]
    upper_bounds: dict[int, bytes]


class _Column(NamedTuple):
    name: str
    field_id: int
    data_type: DataType
    iceberg: PrimitiveType


class MetricsEncoder:
    """Iceberg metrics of data files of one schema (``ids`` maps column names to field ids)."""

    def __init__(self, schema: TableSchema, ids: Mapping[str, int], partition_by: Sequence[str]) -> None:
        self._counts = CountsEncoder(schema, ids, partition_by)
        self._columns: list[_Column] = []
        for f in schema.fields:
            if f.type.name in _NESTED or f.name in partition_by or f.name not in ids:
                continue
            iceberg = iceberg_type(f.type)
            assert isinstance(iceberg, PrimitiveType)
            self._columns.append(_Column(f.name, ids[f.name], f.type, iceberg))

    @property
    def counted(self) -> frozenset[int]:
        """The field ids whose counts every file of this schema gets (but one with a false stat)."""
        return self._counts.expected

    def metrics(self, stats: Mapping[str, ColumnStats], row_count: int,
                partition: Mapping[str, str | None]) -> FileMetrics:
        """The metrics of a file with ``row_count`` rows, these column statistics and partition values."""
        counts = self._counts.counts(stats, row_count, partition)
        metrics = FileMetrics(counts.value_counts, counts.null_value_counts, counts.nan_value_counts, {}, {})
        for column in self._columns:
            stat = stats.get(column.name)
            # A null count above the row count is a false stat: it would let readers skip the file.
            if stat is None or stat.null_count > row_count:
                continue
            lower, upper = _bounds(column, stat.min, stat.max)
            if lower is not None:
                metrics.lower_bounds[column.field_id] = lower
            if upper is not None:
                metrics.upper_bounds[column.field_id] = upper
        return metrics


def _bounds(column: _Column, low_stat: StatValue, high_stat: StatValue) -> tuple[bytes | None, bytes | None]:
    """The encoded lower and upper bound; ``None`` for a bound that is not exact and safe."""
    if low_stat is None or high_stat is None or column.data_type.name == "binary":
        return None, None
    try:
        low, high = parse_stat(low_stat, column.data_type), parse_stat(high_stat, column.data_type)
        if low is None or high is None or low > high:
            return None, None
        return _encode(low, column, up=False), _encode(high, column, up=True)
    except UNUSABLE:
        return None, None


def _encode(value: Any, column: _Column, up: bool) -> bytes | None:
    if isinstance(column.iceberg, (FloatType, DoubleType)):
        return to_bytes(column.iceberg, float_bound(value, single=isinstance(column.iceberg, FloatType), up=up))
    if column.data_type.name == "string":
        bound = string_upper(value) if up else string_lower(value)
        return None if bound is None else bound.encode()
    return to_bytes(column.iceberg, value)
