"""Min and max of a file the Python writer wrote, read from the footer its Parquet writer made.

pyarrow's Parquet writer keeps each row group's min and max of every column while it encodes it;
for the types below they are exact, and turned into Arrow scalars of the column's own type they
give exactly what :class:`~sleeper_spark.datafiles.stats.StatsAccumulator` computes from the rows
(its ``include`` takes the last step for both: nanoseconds rounded outward to the microsecond,
the Python value, its stored form), so the rows need no second pass:

* booleans, integers, dates, timestamps (any unit, with or without a zone) and decimals: the
  footer's value is the column's, in its physical form (a timestamp in the unit the file stores,
  seconds being stored as milliseconds; a decimal as its unscaled big-endian integer);
* strings, where every value of the row group is at most :data:`FOOTER_STRING_BYTES` long: the
  writer drops a bound longer than its statistics limit rather than cut it, and it compares
  strings by their UTF-8 bytes, as Arrow does.

Floats are not read from here: the footer cannot say which zero a file holds (the writer gives a
zero lower bound as -0.0), while the rows' own min/max keep the one the data has. Their bounds,
and those of strings longer than the limit, come from the rows.
"""

from __future__ import annotations

import json
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from sleeper_spark.storage.arrow_buffers import arrow_owned

# pyarrow's writer keeps statistics of up to 4096 bytes (parquet's max_statistics_size); a string
# bound longer than that is left out of the footer. Strings up to this length are always kept.
FOOTER_STRING_BYTES = 4096
_TIME_UNITS = {"milliseconds": "ms", "microseconds": "us", "nanoseconds": "ns"}


def exact_in_footer(arrow_type: pa.DataType) -> bool:
    """Whether the footer's bounds of a column of this type are exact (strings: see
    :func:`strings_fit_footer`, for each row group)."""
    return bool(pa.types.is_boolean(arrow_type) or pa.types.is_integer(arrow_type) or pa.types.is_date32(arrow_type)
                or pa.types.is_timestamp(arrow_type) or pa.types.is_decimal128(arrow_type)
                or pa.types.is_string(arrow_type))


def strings_fit_footer(column: pa.ChunkedArray | pa.Array) -> bool:
    """Whether every value of a string column is short enough for the footer to keep its bounds
    (from the offsets alone: no string is read)."""
    longest = pc.max(pc.binary_length(column)).as_py()
    return longest is None or longest <= FOOTER_STRING_BYTES


def leaf_indices(metadata: pq.FileMetaData) -> dict[str, int]:
    """The footer's column index of each flat top-level column, by name. A leaf of a nested
    column has a path longer than its own name (a struct ``p`` with a field ``x``: ``p.x``), so
    it is never taken for a flat column named ``p.x``."""
    schema = metadata.schema
    columns = (schema.column(index) for index in range(len(schema)))
    return {column.name: index for index, column in enumerate(columns) if column.path == column.name}


def footer_bounds(metadata: pq.FileMetaData, index: int, arrow_type: pa.DataType,
                  groups: list[int]) -> tuple[pa.Scalar, pa.Scalar] | None:
    """The smallest min and largest max, as scalars of ``arrow_type``, that the footer gives for
    the flat column at ``index`` (see :func:`leaf_indices`) over the row groups ``groups``; None if
    none of them holds a value."""
    unit = _stored_unit(metadata, index, arrow_type)
    lows, highs = [], []
    for group in groups:
        statistics = metadata.row_group(group).column(index).statistics
        if statistics is None or not statistics.has_min_max:
            if statistics is not None and statistics.has_null_count \
                    and statistics.null_count == metadata.row_group(group).num_rows:
                continue  # nulls only: nothing to bound
            raise AssertionError(f"the Parquet writer left out the bounds of column {index} in row group {group}")
        lows.append(statistics.min_raw)
        highs.append(statistics.max_raw)
    if not lows:
        return None
    bounds = pc.min_max(_typed(lows + highs, arrow_type, unit))
    return bounds["min"], bounds["max"]


def _stored_unit(metadata: pq.FileMetaData, index: int, arrow_type: pa.DataType) -> str | None:
    if not pa.types.is_timestamp(arrow_type):
        return None
    logical = json.loads(metadata.schema.column(index).logical_type.to_json())
    return _TIME_UNITS[logical["timeUnit"]]


def _typed(raw: list[Any], arrow_type: pa.DataType, unit: str | None) -> pa.Array:
    """The footer's physical values as an array of ``arrow_type``."""
    if pa.types.is_string(arrow_type):
        return pa.array([value.decode() for value in raw], arrow_type)
    if pa.types.is_timestamp(arrow_type):
        assert unit is not None
        return pa.array(raw, pa.int64()).cast(pa.timestamp(unit, arrow_type.tz)).cast(arrow_type)
    if pa.types.is_date32(arrow_type):
        return pa.array(raw, pa.int32()).cast(arrow_type)
    if pa.types.is_decimal128(arrow_type):
        unscaled = [int.from_bytes(v, "big", signed=True) if isinstance(v, bytes) else int(v) for v in raw]
        data = b"".join(v.to_bytes(16, "little", signed=True) for v in unscaled)
        return pa.Array.from_buffers(arrow_type, len(unscaled), [None, arrow_owned(data)])
    return pa.array(raw, arrow_type)
