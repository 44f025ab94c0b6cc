"""A data file's statistics as the ``stats`` JSON of a Delta ``add`` action, exact and safe only.

``numRecords`` is the file's row count. ``nullCount`` follows the Iceberg counts' rules
(:mod:`sleeper_spark.iceberg.counts`): a column the file lacks (one added since) is null in every
row; a null count above the row count is a false stat, and the column gets no stats at all.
Partition columns have none (Delta readers take them from ``partitionValues``), nor do nested
columns (the log does not hold their leaves' counts).

``minValues`` / ``maxValues`` follow :mod:`sleeper_spark.datafiles.bound_values`, and in Delta's
JSON forms: numbers, strings, dates as ``YYYY-MM-DD``, timestamps with a time zone as UTC
instants in milliseconds (``...T10:00:00.123Z``: what Delta writers write and every reader
parses), the minimum rounded down and the maximum up. Left out:

* a float column's maximum: the log's float bounds leave NaN out, and Delta readers (Spark,
  DuckDB, DataFusion) order NaN above every number, so a maximum without it would let them skip
  a file whose NaN rows match ``x > 5``. The minimum stays a lower bound in that order.
* naive timestamps, decimals, booleans and binary columns: counts only.
"""

from __future__ import annotations

import datetime as dt
import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

from sleeper_spark.datafiles.bound_values import UNUSABLE, float_bound, parse_stat, string_lower, string_upper
from sleeper_spark.models import ColumnStats, TableSchema
from sleeper_spark.models.schema import DataType

_BOUNDED = ("int8", "int16", "int32", "int64", "float32", "float64", "string", "date", "timestamp")
_NESTED = ("list", "struct", "map")
_EPOCH_DATE = dt.date(1970, 1, 1)
_EPOCH_UTC = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
_MICROS_PER_MILLI = 1000


class StatsEncoder:
    """The ``stats`` JSON of data files of one schema."""

    def __init__(self, schema: TableSchema, partition_by: Sequence[str]) -> None:
        self._counted = [f.name for f in schema.fields if f.name not in partition_by and f.type.name not in _NESTED]
        self._bounded = [(f.name, f.type) for f in schema.fields
                         if f.name in self._counted and f.type.name in _BOUNDED
                         and not (f.type.name == "timestamp" and f.type.tz is None)]

    def stats(self, column_stats: Mapping[str, ColumnStats], row_count: int) -> str:
        nulls: dict[str, int] = {}
        for name in self._counted:
            stat = column_stats.get(name)
            count = row_count if stat is None else stat.null_count
            if count <= row_count:
                nulls[name] = count
        lows: dict[str, Any] = {}
        highs: dict[str, Any] = {}
        for name, data_type in self._bounded:
            stat = column_stats.get(name)
            if stat is None or name not in nulls or stat.min is None or stat.max is None:
                continue
            try:
                low, high = parse_stat(stat.min, data_type), parse_stat(stat.max, data_type)
                if low is None or high is None or low > high:
                    continue
                lower, upper = _bound(low, data_type, up=False), _bound(high, data_type, up=True)
            except UNUSABLE:
                continue
            if lower is not None:
                lows[name] = lower
            if upper is not None:
                highs[name] = upper
        return json.dumps({"numRecords": row_count, "minValues": lows, "maxValues": highs, "nullCount": nulls},
                          separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def _bound(value: Any, data_type: DataType, up: bool) -> Any:
    name = data_type.name
    if name in ("float32", "float64"):
        if up:
            return None  # see the module docstring: NaN sorts above it
        bound = float_bound(value, single=name == "float32", up=False)
        return bound if math.isfinite(bound) else None
    if name == "string":
        return string_upper(value) if up else string_lower(value)
    if name == "date":
        return (_EPOCH_DATE + dt.timedelta(days=value)).isoformat()
    if name == "timestamp":
        millis = -(-value // _MICROS_PER_MILLI) if up else value // _MICROS_PER_MILLI
        moment = _EPOCH_UTC + dt.timedelta(milliseconds=millis)
        return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")
    return value
