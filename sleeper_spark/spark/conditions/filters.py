"""Spark's pushed filters as Arrow expressions that decide which files a scan reads.

:func:`prune_expression` gives, for one pushed filter, an expression that is true for every
row Spark's predicate accepts (it may accept more); files are then skipped with
:func:`sleeper_spark.datafiles.pruning.prune_files`. Rows are never filtered here: every filter
goes back to Spark, which evaluates it after the scan (see :mod:`sleeper_spark.spark.source.scans`
for why claiming filters is unsafe in PySpark 4.3).

Spark uses SQL's three-valued logic: a comparison with a null column is NULL and a row is kept
only when the predicate is TRUE. ``NOT p`` is TRUE where ``p`` is FALSE, which for a comparison
means "not true and the column is not null"; that is what :func:`_false_set` builds, from the
exact TRUE set of ``p``.

Floating point columns get no exact sets: Spark orders NaN above every number and finds
``NaN = NaN`` true, Arrow does neither, and the statistics leave NaN out. They prune only where
NaN cannot match (``=``, ``IN``, ``<``, ``<=`` with a number).
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Callable, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.datasource import (
    EqualNullSafe,
    EqualTo,
    Filter,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    IsNotNull,
    IsNull,
    LessThan,
    LessThanOrEqual,
    Not,
    StringContains,
    StringEndsWith,
    StringStartsWith,
)

_COMPARISONS: dict[type[Filter], Callable[[pc.Expression, pa.Scalar], pc.Expression]] = {
    GreaterThan: lambda field, value: field > value,
    GreaterThanOrEqual: lambda field, value: field >= value,
    LessThan: lambda field, value: field < value,
    LessThanOrEqual: lambda field, value: field <= value,
}
_BELOW = (LessThan, LessThanOrEqual)
_EXACT_TYPES = (pa.types.is_boolean, pa.types.is_integer, pa.types.is_string, pa.types.is_large_string,
                pa.types.is_date, pa.types.is_timestamp, pa.types.is_decimal)
_UTF8_SURROGATES = range(0xD800, 0xE000)

# (expression, exact): exact means the expression is true exactly where Spark's predicate is TRUE.
_Leaf = tuple[pc.Expression, bool]


def prune_expression(spark_filter: Filter, schema: pa.Schema) -> pc.Expression | None:
    """An expression no matching row can fail, or ``None`` when the filter cannot prune."""
    if isinstance(spark_filter, Not):
        inner = _leaf(spark_filter.child, schema)
        column = _column(spark_filter.child, schema)
        if inner is None or not inner[1] or column is None:
            return None  # negating needs the exact TRUE set
        return _false_set(spark_filter.child, inner[0], pc.field(column[0]))
    leaf = _leaf(spark_filter, schema)
    return None if leaf is None else leaf[0]


def any_of(alternatives: Sequence[Sequence[pc.Expression]]) -> pc.Expression | None:
    """``OR`` over conjunctions; ``None`` (no pruning) if any conjunction is empty."""
    result = None
    for terms in alternatives:
        if not terms:
            return None
        conjunction = terms[0]
        for term in terms[1:]:
            conjunction = conjunction & term
        result = conjunction if result is None else result | conjunction
    return result


def _leaf(spark_filter: Filter, schema: pa.Schema) -> _Leaf | None:
    column = _column(spark_filter, schema)
    if column is None:
        return None
    name, type_ = column
    field = pc.field(name)
    floating = pa.types.is_floating(type_)
    if not floating and not any(check(type_) for check in _EXACT_TYPES):
        return None
    if isinstance(spark_filter, IsNull):
        return field.is_null(), True  # NaN is not null in Spark or in Arrow
    if isinstance(spark_filter, IsNotNull):
        return field.is_valid(), True
    if isinstance(spark_filter, EqualNullSafe) and spark_filter.value is None:
        return field.is_null(), True
    if isinstance(spark_filter, (EqualTo, EqualNullSafe)):
        value = _scalar(spark_filter.value, type_)
        if value is None or (floating and _is_nan(spark_filter.value)):
            return None
        return field == value, not floating
    if isinstance(spark_filter, In):
        values = [_scalar(v, type_) for v in spark_filter.value]
        if not values or any(v is None for v in values) or (floating and any(map(_is_nan, spark_filter.value))):
            return None  # a null in the list makes SQL's IN three-valued
        return field.isin(pa.array([v.as_py() for v in values if v is not None], type_)), not floating
    if isinstance(spark_filter, (GreaterThan, GreaterThanOrEqual, LessThan, LessThanOrEqual)):
        value = _scalar(spark_filter.value, type_)
        if value is None:
            return None
        expression = _COMPARISONS[type(spark_filter)](field, value)
        if floating:
            # NaN compares above every number in Spark: only "<" and "<=" cannot match it.
            safe = isinstance(spark_filter, _BELOW) and not _is_nan(spark_filter.value)
            return (expression, False) if safe else None
        return expression, True
    if not isinstance(spark_filter, (StringStartsWith, StringEndsWith, StringContains)):
        return None
    text = spark_filter.value
    if not (pa.types.is_string(type_) or pa.types.is_large_string(type_)) or not isinstance(text, str):
        return None
    if isinstance(spark_filter, StringStartsWith):
        # The range lets min/max statistics prune a LIKE 'abc%'; starts_with keeps it exact.
        return pc.starts_with(field, pattern=text) & _prefix_range(field, text), True
    if isinstance(spark_filter, StringEndsWith):
        return pc.ends_with(field, pattern=text), True
    return pc.match_substring(field, pattern=text), True


def _false_set(spark_filter: Filter, true_set: pc.Expression, field: pc.Expression) -> pc.Expression:
    """Where ``spark_filter`` is FALSE (not NULL), given the expression for where it is TRUE."""
    if isinstance(spark_filter, EqualNullSafe) and spark_filter.value is not None:
        return ~true_set | field.is_null()
    if isinstance(spark_filter, (IsNull, IsNotNull, EqualNullSafe)):
        return ~true_set  # these are never NULL
    return ~true_set & field.is_valid()


def _column(spark_filter: Filter, schema: pa.Schema) -> tuple[str, pa.DataType] | None:
    attribute = getattr(spark_filter, "attribute", None)
    if not isinstance(attribute, tuple) or len(attribute) != 1:
        return None  # nested fields are not pruned
    name = attribute[0]
    index = schema.get_field_index(name)
    if index < 0:
        return None
    return name, schema.field(index).type


def _scalar(value: Any, type_: pa.DataType) -> pa.Scalar | None:
    """The literal as a scalar of the column's own type, or ``None`` if it does not fit exactly."""
    if value is None:
        return None
    try:
        if pa.types.is_timestamp(type_) and isinstance(value, dt.datetime):
            value = _timestamp_value(value, type_)
        if pa.types.is_boolean(type_) != isinstance(value, bool):
            return None
        if pa.types.is_date(type_) and (not isinstance(value, dt.date) or isinstance(value, dt.datetime)):
            return None
        scalar = pa.scalar(value, type_)
    except (pa.ArrowException, TypeError, ValueError, OverflowError):
        return None
    if scalar.as_py() != value:
        return None  # rounded or cut to the column's type (a decimal's scale, a timestamp's unit): another literal
    return scalar


def _timestamp_value(value: dt.datetime, type_: pa.TimestampType) -> dt.datetime:
    # Spark sends timestamps as UTC-aware datetimes and timestamp_ntz ones as naive datetimes.
    if type_.tz is None:
        if value.tzinfo is not None:
            raise ValueError("a zoned literal for a timestamp_ntz column")
        return value
    if value.tzinfo is None:
        raise ValueError("a naive literal for a zoned timestamp column")
    return value.astimezone(dt.timezone.utc)


def _is_nan(value: Any) -> bool:
    return isinstance(value, float) and math.isnan(value)


def _prefix_range(field: pc.Expression, prefix: str) -> pc.Expression:
    """``prefix <= field < successor``."""
    if not prefix:
        return field.is_valid()
    lower = field >= pc.scalar(prefix)
    # UTF-8 byte order is code point order, so bumping the last code point bounds the range.
    head = prefix
    while head:
        code = ord(head[-1]) + 1
        if code in _UTF8_SURROGATES:
            code = _UTF8_SURROGATES.stop
        if code <= 0x10FFFF:
            return lower & (field < pc.scalar(head[:-1] + chr(code)))
        head = head[:-1]
    return lower
