"""Spark and Arrow, one to the other: a table's Spark schema, the columns of a changes read, Arrow
data cast to Spark's Arrow schema, and a column name as Spark SQL text."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.pandas.types import from_arrow_schema
from pyspark.sql.types import BooleanType, LongType, StringType, StructField, StructType, TimestampType

from sleeper_spark.models import TableSchema
from sleeper_spark.spark.common.options import GUARD_COLUMN
from sleeper_spark.table.changes import CHANGE_TYPE, COMMIT_TIMESTAMP, COMMIT_VERSION


def spark_schema(schema: TableSchema, guarded: bool) -> StructType:
    """The table's columns as Spark types (time zone-less timestamps become timestamp_ntz)."""
    struct = from_arrow_schema(schema.to_arrow(), prefer_timestamp_ntz=True)
    return struct.add(StructField(GUARD_COLUMN, BooleanType(), False)) if guarded else struct


def with_change_columns(schema: StructType) -> StructType:
    """``schema`` followed by the columns of a changes read (see ``sleeper_spark.table.changes``)."""
    added = StructType(list(schema.fields))
    for name, type_ in ((CHANGE_TYPE, StringType()), (COMMIT_VERSION, LongType()), (COMMIT_TIMESTAMP, TimestampType())):
        added = added.add(StructField(name, type_, True))
    return added


def conform(data: pa.Table, expected: pa.Schema) -> pa.Table:
    """The table cast to Spark's Arrow schema, column by column.

    Timestamps are cast unsafely: Spark keeps microseconds, and a file written with
    nanoseconds is truncated the way Spark truncates them everywhere else.
    """
    if data.schema.equals(expected):
        return data
    columns = []
    for field in expected:
        column = data.column(field.name)
        if not column.type.equals(field.type):
            column = pc.cast(column, field.type, safe=not pa.types.is_timestamp(field.type))
        columns.append(column)
    return pa.Table.from_arrays(columns, schema=expected)


def quoted_column(name: str) -> str:
    """``name`` as a Spark column reference, backquoted (names may hold dots and spaces)."""
    return "`" + name.replace("`", "``") + "`"
