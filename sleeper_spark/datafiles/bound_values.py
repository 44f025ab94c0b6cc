"""A column statistic as a bound other engines may prune on: exact and safe, or nothing.

The Iceberg and Delta publishers (``sleeper_spark.iceberg.bounds``, ``sleeper_spark.delta.stats``)
share these rules. A reader skips a file when its bounds prove no row can match, so a bound off
by one step in the wrong direction makes it silently drop rows; every rule errs on the side of a
wider bound, or of none:

* a stat that does not parse as a value of the column's type: no bound (never an error);
* floats: NaN gives no bound, infinities are kept; rounding is outward (float32 bounds to
  float32), and a zero lower bound is -0.0, a zero upper bound +0.0 (the stats do not tell
  which zero the file holds);
* strings: only when they hold code points below U+D800 only (Java readers compare strings by
  UTF-16 code units, which orders supplementary characters differently from code point order;
  with such bounds every value between them in one order is between them in the other). A bound
  longer than :data:`MAX_STRING_BOUND_BYTES` is shortened: a lower bound to a prefix, an upper
  bound to a prefix with its last character incremented;
* timestamps in exact integer microseconds (aware values as UTC instants, naive ones as they
  are); a stat whose awareness differs from the column's is left out;
* decimals only when the value has the column's scale and precision exactly.
"""

from __future__ import annotations

import datetime as dt
import decimal
import math
import struct
from typing import Any

from sleeper_spark.models.files import StatValue
from sleeper_spark.models.schema import DataType

# Publishers keep bounds short; 64 bytes keeps pruning on realistic keys.
MAX_STRING_BOUND_BYTES = 64
# Below the surrogates, a code point's order is its UTF-16 order (see the module docstring).
_FIRST_SURROGATE = 0xD800
_EPOCH_DATE = dt.date(1970, 1, 1)
_EPOCH = dt.datetime(1970, 1, 1)
_EPOCH_UTC = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
_MICROSECOND = dt.timedelta(microseconds=1)
_INT_RANGES = {"int8": 8, "int16": 16, "int32": 32, "int64": 64}
_SMALLEST_FLOAT32 = float(struct.unpack("<f", struct.pack("<I", 1))[0])
_DECIMAL_DIGITS_ROOM = 100
# What a stat that cannot be parsed or encoded raises; it costs the column its bounds, nothing more.
UNUSABLE = (ValueError, TypeError, ArithmeticError, struct.error)


def parse_stat(value: StatValue, data_type: DataType) -> Any:
    """A stat as a value of the column's kind that compares exactly (dates as days and timestamps
    as microseconds since the epoch); ``None`` when it is unusable. May raise one of :data:`UNUSABLE`."""
    name = data_type.name
    if name == "bool":
        return value if isinstance(value, bool) else None
    if isinstance(value, bool):
        return None  # a bool is an int in Python, but not a value of any other column type
    if name in ("float32", "float64"):
        return value if isinstance(value, (int, float)) and not math.isnan(value) else None
    if name in _INT_RANGES:
        bits = _INT_RANGES[name]
        return value if isinstance(value, int) and -(2 ** (bits - 1)) <= value < 2 ** (bits - 1) else None
    if name == "string":
        return value if isinstance(value, str) and all(ord(c) < _FIRST_SURROGATE for c in value) else None
    if name == "date" and isinstance(value, str):
        return days_since_epoch(dt.date.fromisoformat(value))
    if name == "timestamp" and isinstance(value, str):
        moment = dt.datetime.fromisoformat(value)
        if (moment.tzinfo is not None) != (data_type.tz is not None):
            return None  # which instant a naive value means is unknown
        return micros_since_epoch(moment)
    if name == "decimal" and isinstance(value, (str, int)):
        return exact_decimal(decimal.Decimal(value), data_type)
    return None


def micros_since_epoch(value: dt.datetime) -> int:
    """Integer microseconds since the epoch (UTC for an aware value), exact for any date, before 1970 too."""
    return (value - (_EPOCH if value.tzinfo is None else _EPOCH_UTC)) // _MICROSECOND


def days_since_epoch(value: dt.date) -> int:
    return (value - _EPOCH_DATE).days


def exact_decimal(value: decimal.Decimal, data_type: DataType) -> decimal.Decimal | None:
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


def float_bound(value: int | float, single: bool, up: bool) -> float:
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


def string_lower(value: str) -> str:
    """A prefix of ``value`` of at most the bound length: below or equal to it in any order."""
    return _utf8_prefix(value)


def string_upper(value: str) -> str | None:
    """``value`` if short enough; else a prefix whose last character is incremented, which is
    above every string that starts with the prefix (``None`` if no character can be incremented
    below the surrogates within the length)."""
    if len(value.encode()) <= MAX_STRING_BOUND_BYTES:
        return value
    prefix = _utf8_prefix(value)
    for end in range(len(prefix), 0, -1):
        following = ord(prefix[end - 1]) + 1
        if following < _FIRST_SURROGATE:
            candidate = prefix[: end - 1] + chr(following)
            if len(candidate.encode()) <= MAX_STRING_BOUND_BYTES:
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
