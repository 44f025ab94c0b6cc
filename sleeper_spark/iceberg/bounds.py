"""A data file's column statistics as Iceberg metrics, published only where they are exact and safe.

Counts are :mod:`sleeper_spark.iceberg.counts`' job; the bounds are this module's.

Iceberg readers skip a file when its bounds prove no row can match, so a bound that is off by
one step in the wrong direction makes them silently drop rows. Every rule below therefore errs
on the side of a wider bound, or of no bound at all (a reader then reads the file):

* only top-level columns of primitive type, never partition columns (their values are not in
  the files: readers take them from the partition);
* a stat that does not parse, or a min above its max: no bounds for that column (never an error);
  a null count above the row count: nothing for that column (readers would take it as all null);
* floats: a NaN stat drops the column's bounds, infinities are kept; a zero min is published as
  -0.0 and a zero max as +0.0 (Iceberg orders -0.0 below 0.0, and the stats do not tell which
  zero the file holds); float32 bounds round outward to float32;
* strings: only when both bounds hold code points below U+D800 only. Iceberg's Java readers
  compare strings by UTF-16 code units, which orders supplementary characters differently from
  code point order; with such bounds every value between them in code point order is between
  them in UTF-16 order too. A bound longer than :data:`MAX_STRING_BOUND_BYTES` is shortened: a
  lower bound to a prefix, an upper bound to a prefix with its last character incremented;
* timestamps in exact integer microseconds (aware values as UTC instants, naive ones as they
  are); a stat whose awareness differs from the column's is left out;
* decimals only when the value has the column's scale and precision exactly;
* binary columns: counts only.
"""

from __future__ import annotations

import datetime as dt
import decimal
import math
import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from pyiceberg.conversions import to_bytes
from pyiceberg.types import DoubleType, FloatType, IntegerType, PrimitiveType

from sleeper_spark.iceberg.counts import CountsEncoder
from sleeper_spark.iceberg.schema import iceberg_type
from sleeper_spark.models import ColumnStats, TableSchema
from sleeper_spark.models.files import StatValue
from sleeper_spark.models.schema import DataType

# Iceberg writers keep bounds short; 64 bytes keeps pruning on realistic keys.
MAX_STRING_BOUND_BYTES = 64
# Below the surrogates, a code point's order is its UTF-16 order (see the module docstring).
_FIRST_SURROGATE = 0xD800
_EPOCH_DATE = dt.date(1970, 1, 1)
_EPOCH = dt.datetime(1970, 1, 1)
_EPOCH_UTC = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
_MICROSECOND = dt.timedelta(microseconds=1)
_INT_RANGE = (-(2**31), 2**31 - 1)
_LONG_RANGE = (-(2**63), 2**63 - 1)
_SMALLEST_FLOAT32 = float(struct.unpack("<f", struct.pack("<I", 1))[0])
# What a stat that cannot be parsed or encoded raises; it costs the column its bounds, nothing more.
_UNUSABLE = (ValueError, TypeError, ArithmeticError, struct.error)
_NESTED = ("list", "struct", "map")
_DECIMAL_DIGITS_ROOM = 100


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
        low, high = _parse(low_stat, column), _parse(high_stat, column)
        if low is None or high is None or low > high:
            return None, None
        return _encode(low, column, up=False), _encode(high, column, up=True)
    except _UNUSABLE:
        return None, None


def _parse(value: StatValue, column: _Column) -> Any:
    """A stat as a value of the column's kind that compares exactly; ``None`` when it is unusable."""
    name = column.data_type.name
    if name == "bool":
        return value if isinstance(value, bool) else None
    if isinstance(value, bool):
        return None  # a bool is an int in Python, but not a value of any other column type
    if name in ("float32", "float64"):
        return value if isinstance(value, (int, float)) and not math.isnan(value) else None
    if name.startswith("int"):
        low, high = _INT_RANGE if isinstance(column.iceberg, IntegerType) else _LONG_RANGE
        return value if isinstance(value, int) and low <= value <= high else None
    if name == "string":
        return value if isinstance(value, str) and all(ord(c) < _FIRST_SURROGATE for c in value) else None
    if name == "date" and isinstance(value, str):
        return days_since_epoch(dt.date.fromisoformat(value))
    if name == "timestamp" and isinstance(value, str):
        return _micros(dt.datetime.fromisoformat(value), aware=column.data_type.tz is not None)
    if name == "decimal" and isinstance(value, (str, int)):
        return _decimal(decimal.Decimal(value), column.data_type)
    return None


def _encode(value: Any, column: _Column, up: bool) -> bytes | None:
    if isinstance(column.iceberg, (FloatType, DoubleType)):
        return to_bytes(column.iceberg, _float_bound(value, single=isinstance(column.iceberg, FloatType), up=up))
    if column.data_type.name == "string":
        return _string_upper(value) if up else _string_lower(value)
    return to_bytes(column.iceberg, value)


def _micros(value: dt.datetime, aware: bool) -> int | None:
    """Microseconds since the epoch, in integers only (exact for any date); ``None`` when the
    value's awareness is not the column's (which instant a naive value means is unknown)."""
    if (value.tzinfo is not None) != aware:
        return None
    return micros_since_epoch(value)


def micros_since_epoch(value: dt.datetime) -> int:
    """Iceberg's form of a timestamp: integer microseconds since the epoch (UTC for an aware
    value), exact for any date, before 1970 too."""
    return (value - (_EPOCH if value.tzinfo is None else _EPOCH_UTC)) // _MICROSECOND


def days_since_epoch(value: dt.date) -> int:
    """Iceberg's form of a date."""
    return (value - _EPOCH_DATE).days


def _decimal(value: decimal.Decimal, data_type: DataType) -> decimal.Decimal | None:
    """``value`` with exactly the column's scale, or ``None`` if it has more digits than fit."""
    assert data_type.precision is not None and data_type.scale is not None
    if not value.is_finite():
        return None
    # Room for more digits than any column holds: the quantizing itself never rounds the integer
    # part, and a value too large for it raises InvalidOperation (so it is left out).
    wide = decimal.Context(prec=_DECIMAL_DIGITS_ROOM)
    quantized = value.quantize(decimal.Decimal(1).scaleb(-data_type.scale, context=wide), context=wide)
    if quantized != value or len(quantized.as_tuple().digits) > data_type.precision:
        return None
    return quantized


def _float_bound(value: int | float, single: bool, up: bool) -> float:
    """``value`` as a float (float32 if ``single``) rounded outward: down for a lower bound, up for
    an upper one. A zero lower bound is -0.0 and a zero upper bound +0.0."""
    bound = float(value)  # an int may not be exact as a double; the comparisons below are exact
    if bound < value if up else bound > value:
        bound = math.nextafter(bound, math.inf if up else -math.inf)
    if single:
        wide = bound
        try:
            bound = float(struct.unpack("<f", struct.pack("<f", wide))[0])
        except OverflowError:  # beyond float32's range
            bound = math.copysign(math.inf, wide)
        if bound < wide if up else bound > wide:
            bound = _next_float32(bound, up)
    if bound == 0.0:
        return 0.0 if up else -0.0
    return bound


def _next_float32(value: float, up: bool) -> float:
    """The float32 next to ``value`` (a float32, not NaN, not the infinity it moves away from)."""
    if value == 0.0:
        return _SMALLEST_FLOAT32 if up else -_SMALLEST_FLOAT32
    bits: int = struct.unpack("<I", struct.pack("<f", value))[0]
    # Sign and magnitude: a step up is a larger magnitude for a positive value, a smaller one below 0.
    bits += 1 if (value > 0) == up else -1
    return float(struct.unpack("<f", struct.pack("<I", bits))[0])


def _string_lower(value: str) -> bytes:
    """A prefix of ``value`` of at most the bound length: below or equal to it in any order."""
    return _utf8_prefix(value).encode()


def _string_upper(value: str) -> bytes | None:
    """``value`` if short enough; else a prefix whose last character is incremented, which is
    above every string that starts with the prefix (``None`` if no character can be incremented
    below the surrogates within the length)."""
    if len(value.encode()) <= MAX_STRING_BOUND_BYTES:
        return value.encode()
    prefix = _utf8_prefix(value)
    for end in range(len(prefix), 0, -1):
        following = ord(prefix[end - 1]) + 1
        if following < _FIRST_SURROGATE:
            candidate = (prefix[: end - 1] + chr(following)).encode()
            if len(candidate) <= MAX_STRING_BOUND_BYTES:
                return candidate
    return None


def _utf8_prefix(value: str) -> str:
    """The longest prefix of ``value`` (whole characters) that is at most the bound length in UTF-8."""
    size = 0
    for i, char in enumerate(value):
        size += len(char.encode())
        if size > MAX_STRING_BOUND_BYTES:
            return value[:i]
    return value
