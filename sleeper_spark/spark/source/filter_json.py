"""Spark's pushed filters as plain JSON, for the scan records of :mod:`sleeper_spark.spark.source.scans`.

Only data goes through here, never code: a record names one of the filter classes below, a
column path and tagged literals (``["date", "2024-01-05"]``), and decoding builds exactly those
classes back. Anything else (another filter, a literal of another type, a malformed record) is
:class:`FilterCodingError`, and the scan then reads every file rather than trust the record.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import decimal
import json
from collections.abc import Callable
from typing import Any

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

# The filters that can prune files (sleeper_spark.spark.conditions.filters), by a name that is stored.
_FILTERS: dict[str, type[Filter]] = {cls.__name__: cls for cls in (
    EqualNullSafe, EqualTo, GreaterThan, GreaterThanOrEqual, In, IsNotNull, IsNull, LessThan, LessThanOrEqual,
    Not, StringContains, StringEndsWith, StringStartsWith,
)}


class FilterCodingError(ValueError):
    """A filter or a record that this module does not encode or decode."""


def dumps_scans(scans: list[list[Filter]]) -> bytes:
    """Every scan's filters as one JSON document."""
    return json.dumps([[_encode_filter(f) for f in scan] for scan in scans]).encode()


def loads_scans(data: bytes) -> list[list[Filter]]:
    """The inverse of :func:`dumps_scans`; :class:`FilterCodingError` for anything else."""
    try:
        document = json.loads(data)
    except ValueError as error:
        raise FilterCodingError(f"not JSON: {error}") from None
    if not isinstance(document, list) or not all(isinstance(scan, list) for scan in document):
        raise FilterCodingError("a scan record is a list of lists of filters")
    return [[_decode_filter(item) for item in scan] for scan in document]


def _encode_filter(spark_filter: Filter) -> dict[str, Any]:
    name = type(spark_filter).__name__
    if _FILTERS.get(name) is not type(spark_filter):
        raise FilterCodingError(f"no JSON form for the filter {spark_filter!r}")
    encoded: dict[str, Any] = {"filter": name}
    for field in dataclasses.fields(spark_filter):
        value = getattr(spark_filter, field.name)
        if field.name == "attribute":
            encoded["attribute"] = list(value)
        elif field.name == "child":
            encoded["child"] = _encode_filter(value)
        elif isinstance(spark_filter, In):
            encoded["value"] = [_encode_literal(v) for v in value]
        else:
            encoded["value"] = _encode_literal(value)
    return encoded


def _decode_filter(item: Any) -> Filter:
    if not isinstance(item, dict) or item.get("filter") not in _FILTERS:
        raise FilterCodingError(f"not a known filter: {str(item)[:100]}")
    cls = _FILTERS[item["filter"]]
    arguments: dict[str, Any] = {}
    for field in dataclasses.fields(cls):
        if field.name not in item:
            raise FilterCodingError(f"filter {cls.__name__} lacks {field.name!r}")
        value = item[field.name]
        if field.name == "attribute":
            if not isinstance(value, list) or not all(isinstance(part, str) for part in value):
                raise FilterCodingError("a column path is a list of names")
            arguments["attribute"] = tuple(value)
        elif field.name == "child":
            arguments["child"] = _decode_filter(value)
        elif cls is In:
            if not isinstance(value, list):
                raise FilterCodingError("the values of In are a list")
            arguments["value"] = tuple(_decode_literal(v) for v in value)
        else:
            arguments["value"] = _decode_literal(value)
    return cls(**arguments)


def _encode_literal(value: Any) -> list[Any]:
    # bool before int (a bool is an int) and datetime before date (a datetime is a date).
    if value is None:
        return ["null"]
    if isinstance(value, bool):
        return ["bool", value]
    if isinstance(value, int):
        return ["int", str(value)]
    if isinstance(value, float):
        return ["float", repr(value)]  # repr keeps every bit, and nan / inf / -inf
    if isinstance(value, str):
        return ["str", value]
    if isinstance(value, decimal.Decimal):
        return ["decimal", str(value)]
    if isinstance(value, dt.datetime):
        return ["datetime", value.isoformat()]
    if isinstance(value, dt.date):
        return ["date", value.isoformat()]
    raise FilterCodingError(f"no JSON form for the literal {value!r} ({type(value).__name__})")


def _decode_literal(tagged: Any) -> Any:
    if not isinstance(tagged, list) or not tagged:
        raise FilterCodingError(f"not a tagged literal: {str(tagged)[:100]}")
    tag, rest = tagged[0], tagged[1:]
    if tag == "null" and not rest:
        return None
    if len(rest) != 1:
        raise FilterCodingError(f"a {tag} literal holds one value")
    value = rest[0]
    if tag == "bool" and isinstance(value, bool):
        return value
    parse = _PARSERS.get(tag) if isinstance(tag, str) else None
    if parse is None or not isinstance(value, str):
        raise FilterCodingError(f"not a tagged literal: {str(tagged)[:100]}")
    try:
        return parse(value)
    except (ValueError, ArithmeticError):
        raise FilterCodingError(f"cannot read the {tag} literal {value[:100]!r}") from None


_PARSERS: dict[str, Callable[[str], Any]] = {
    "int": int,
    "float": float,
    "str": str,
    "decimal": decimal.Decimal,
    "datetime": dt.datetime.fromisoformat,
    "date": dt.date.fromisoformat,
}
