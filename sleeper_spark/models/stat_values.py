"""The stored form of a column statistic and its Python value.

A file's min and max are stored as JSON scalars (:data:`~sleeper_spark.models.files.StatValue`):
dates and times as ISO text, decimals as text, bytes as base64. The writer turns the values it
computed into that form with :func:`to_stat`; pruning and the columnar file state turn them back
with :func:`from_stat`, so that what is compared is of the column's own type.
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
from typing import Any

from sleeper_spark.models.files import StatValue
from sleeper_spark.models.schema import DataType

# The types whose values have an order, and so a min and a max worth keeping.
ORDERED_TYPES = ("bool", "int8", "int16", "int32", "int64", "float32", "float64", "string", "date",
                 "timestamp", "decimal")


def to_stat(value: Any) -> StatValue:
    """A computed bound in its stored form; ``None`` for a value that has no stored form."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (dt.datetime, dt.date)):
        return value.isoformat()
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, bytes):
        return base64.b64encode(value).decode()
    return None


def from_stat(value: StatValue, type_: DataType) -> Any:
    """A stored statistic as a Python value comparable with the column's values."""
    if value is None or type_.name not in ORDERED_TYPES:
        return None
    if type_.name == "date" and isinstance(value, str):
        return dt.date.fromisoformat(value)
    if type_.name == "timestamp" and isinstance(value, str):
        parsed = dt.datetime.fromisoformat(value)
        return parsed.replace(tzinfo=None) if parsed.tzinfo is None else parsed.astimezone(dt.timezone.utc)
    if type_.name == "decimal" and isinstance(value, str):
        return decimal.Decimal(value)
    return value
