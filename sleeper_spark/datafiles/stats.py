"""Column statistics computed from Arrow data while it is written.

Values are stored as JSON scalars; :mod:`sleeper_spark.models.stat_values` converts between
Python values and that stored form, so pruning compares like with like.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from sleeper_spark.models import ColumnStats
from sleeper_spark.models.stat_values import to_stat


class StatsAccumulator:
    """Running min/max/null count per column over the batches of one file."""

    def __init__(self, schema: pa.Schema) -> None:
        self._columns = [f.name for f in schema if _orderable(f.type)]
        self._nested = [f.name for f in schema if not _orderable(f.type)]
        self._min: dict[str, Any] = {}
        self._max: dict[str, Any] = {}
        self._nulls: dict[str, int] = {name: 0 for name in schema.names}

    def update(self, batch: pa.RecordBatch | pa.Table) -> None:
        for name in self._columns:
            column = batch.column(name)
            self._nulls[name] += column.null_count
            if column.null_count == len(column):
                continue
            if pa.types.is_floating(column.type):
                column = pc.filter(column, pc.invert(pc.is_nan(column)))
                if len(column) == 0 or column.null_count == len(column):
                    continue
            bounds = pc.min_max(column)
            low, high = _python(bounds["min"], up=False), _python(bounds["max"], up=True)
            if name not in self._min or low < self._min[name]:
                self._min[name] = low
            if name not in self._max or high > self._max[name]:
                self._max[name] = high
        for name in self._nested:
            self._nulls[name] += batch.column(name).null_count

    def result(self) -> dict[str, ColumnStats]:
        return {
            name: ColumnStats(min=to_stat(self._min.get(name)), max=to_stat(self._max.get(name)),
                              null_count=nulls)
            for name, nulls in self._nulls.items()
        }


def _python(bound: pa.Scalar, up: bool) -> Any:
    """A bound as a Python value; nanoseconds, which a datetime cannot hold, round outward to
    the microsecond, so the bounds still enclose every value."""
    if not (pa.types.is_timestamp(bound.type) and bound.type.unit == "ns"):
        return bound.as_py()
    micros, nanos = divmod(bound.value, 1000)
    return pa.scalar(micros + (1 if up and nanos else 0), pa.timestamp("us", bound.type.tz)).as_py()


def _orderable(t: pa.DataType) -> bool:
    return bool(pa.types.is_boolean(t) or pa.types.is_integer(t) or pa.types.is_floating(t)
            or pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_date(t)
            or pa.types.is_timestamp(t) or pa.types.is_decimal(t))


def partition_value_to_string(value: Any) -> str | None:
    """How a partition value is recorded in FileRef.partition (and in its directory name)."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (dt.datetime, dt.date)):
        return value.isoformat()
    return str(value)
