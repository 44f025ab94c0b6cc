"""Column statistics of the rows of a data file, as they are written.

Values are stored as JSON scalars; :mod:`sleeper_spark.models.stat_values` converts between
Python values and that stored form, so pruning compares like with like. :class:`StatsAccumulator`
computes them from the rows; :class:`WrittenFileStats` gives the same for a file the Python writer
writes, reading from its Parquet footer the bounds the footer holds exactly.
"""

from __future__ import annotations

import bisect
import datetime as dt
from collections.abc import Collection
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from sleeper_spark.datafiles.footer_bounds import exact_in_footer, footer_bounds, leaf_indices, strings_fit_footer
from sleeper_spark.models import ColumnStats
from sleeper_spark.models.stat_values import to_stat


class StatsAccumulator:
    """Running min/max/null count per column over the batches of one file."""

    def __init__(self, schema: pa.Schema) -> None:
        self._columns = [f.name for f in schema if _orderable(f.type)]
        self._min: dict[str, Any] = {}
        self._max: dict[str, Any] = {}
        self._nulls: dict[str, int] = {name: 0 for name in schema.names}

    def update(self, batch: pa.RecordBatch | pa.Table, bounded: Collection[str] | None = None) -> None:
        """Adds ``batch``'s rows: the null count of every column, and the min and max of each
        orderable one (``bounded``: of these only, their bounds coming from elsewhere, see
        :meth:`include`)."""
        for name in self._nulls:
            self._nulls[name] += batch.column(name).null_count
        for name in self._columns if bounded is None else [c for c in self._columns if c in bounded]:
            column = batch.column(name)
            if column.null_count == len(column):
                continue
            bounds = pc.min_max(column)
            if pa.types.is_floating(column.type) and not _exact_float_bounds(bounds):
                column = pc.filter(column, pc.invert(pc.is_nan(column)))
                if len(column) == 0 or column.null_count == len(column):
                    continue
                bounds = pc.min_max(column)
            self.include(name, bounds["min"], bounds["max"])

    def include(self, name: str, low: pa.Scalar, high: pa.Scalar) -> None:
        """Widens column ``name``'s bounds to take in ``low`` and ``high`` (non-null, non-NaN values
        of the column's type)."""
        low_value, high_value = _python(low, up=False), _python(high, up=True)
        if name not in self._min or low_value < self._min[name]:
            self._min[name] = low_value
        if name not in self._max or high_value > self._max[name]:
            self._max[name] = high_value

    def result(self) -> dict[str, ColumnStats]:
        return {
            name: ColumnStats(min=to_stat(self._min.get(name)), max=to_stat(self._max.get(name)),
                              null_count=nulls)
            for name, nulls in self._nulls.items()
        }


class WrittenFileStats:
    """The statistics of one file the Python writer writes, batch by batch: the same as a
    :class:`StatsAccumulator` over its rows, with the bounds the file's Parquet footer holds exactly
    (see :mod:`~sleeper_spark.datafiles.footer_bounds`) read from it once the file is closed,
    instead of computed from the rows a second time."""

    def __init__(self, schema: pa.Schema) -> None:
        self._schema = schema
        self._rows = StatsAccumulator(schema)
        self._from_footer = {f.name: f.type for f in schema if _orderable(f.type) and exact_in_footer(f.type)}
        # Per column, the batches whose bounds the footer gives; each batch is written with one
        # write_table call, and so as row groups of its own, which start where it starts.
        self._footer_batches: dict[str, set[int]] = {name: set() for name in self._from_footer}
        self._batch_ends: list[int] = []

    def update(self, batch: pa.Table) -> None:
        """Adds the rows of the next batch written to the file."""
        from_rows = set(self._schema.names)
        for name, type_ in self._from_footer.items():
            if not pa.types.is_string(type_) or strings_fit_footer(batch.column(name)):
                self._footer_batches[name].add(len(self._batch_ends))
                from_rows.discard(name)
        self._rows.update(batch, bounded=from_rows)
        self._batch_ends.append((self._batch_ends[-1] if self._batch_ends else 0) + batch.num_rows)

    def result(self, footer: pq.FileMetaData) -> dict[str, ColumnStats]:
        """The file's statistics, given the footer of the closed file."""
        batch_of_group, start = [], 0
        for group in range(footer.num_row_groups):
            batch_of_group.append(bisect.bisect_right(self._batch_ends, start))
            start += footer.row_group(group).num_rows
        leaves = leaf_indices(footer)
        for name, batches in self._footer_batches.items():
            groups = [group for group, batch in enumerate(batch_of_group) if batch in batches]
            bounds = footer_bounds(footer, leaves[name], self._from_footer[name], groups) if groups else None
            if bounds is not None:
                self._rows.include(name, *bounds)
        return self._rows.result()


def _exact_float_bounds(bounds: pa.StructScalar) -> bool:
    """Whether a float column's min_max are exactly those of its values with the NaN filtered out.
    Arrow's min_max passes over NaN, and a bound that is neither NaN nor zero is the same value
    whatever else the column holds. A zero bound may be -0.0 or 0.0 depending on where the zeros
    stand (which the filter changes), and a column of nothing but NaN gives NaN bounds (pyarrow
    26) or a min above the max (+inf and -inf, pyarrow 22): only then is the column filtered, a
    second pass over it."""
    low, high = bounds["min"].as_py(), bounds["max"].as_py()
    return low is not None and high is not None and low != 0 and high != 0 and low <= high


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
