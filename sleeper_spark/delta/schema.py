"""A table schema as Delta's ``schemaString``, and the protocol a Delta reader needs for it.

Columns are mapped by name, as the data files name them: a dropped column's name is retired
(``sleeper_spark.models.schema_evolution``), so no later column brings its old values back and
Delta's column mapping is not needed. A widened column is the wider type in the schema; readers
cast the narrower values of older files (delta-rs and DuckDB do; tests/delta checks them).
"""

from __future__ import annotations

import json
from typing import Any

from sleeper_spark.errors import DeltaPublishError
from sleeper_spark.models import TableSchema
from sleeper_spark.models.schema import DataType, Field

_PRIMITIVES = {
    "bool": "boolean",
    "int8": "byte",
    "int16": "short",
    "int32": "integer",
    "int64": "long",
    "float32": "float",
    "float64": "double",
    "string": "string",
    "binary": "binary",
    "date": "date",
}
# The table feature a naive timestamp (Spark's timestamp_ntz) needs: reader 3 and writer 7.
TIMESTAMP_NTZ = "timestampNtz"


def schema_string(schema: TableSchema) -> str:
    """The schema as the JSON string a Delta ``metaData`` action holds."""
    return json.dumps({"type": "struct", "fields": [_field(f) for f in schema.fields]}, separators=(",", ":"))


def protocol(schema: TableSchema) -> dict[str, Any]:
    """The lowest protocol that expresses ``schema``: 1/2, or 3/7 with ``timestampNtz`` if it has a naive timestamp."""
    naive = any(t.name == "timestamp" and t.tz is None for f in schema.fields for t in f.type.nested())
    if not naive:
        return {"minReaderVersion": 1, "minWriterVersion": 2}
    return {"minReaderVersion": 3, "minWriterVersion": 7, "readerFeatures": [TIMESTAMP_NTZ],
            "writerFeatures": [TIMESTAMP_NTZ]}


def _field(f: Field) -> dict[str, Any]:
    return {"name": f.name, "type": _type(f.type, f.name), "nullable": f.nullable, "metadata": {}}


def _type(t: DataType, column: str) -> Any:
    if t.name in _PRIMITIVES:
        return _PRIMITIVES[t.name]
    if t.name == "timestamp":
        return "timestamp" if t.tz is not None else "timestamp_ntz"
    if t.name == "decimal":
        return f"decimal({t.precision},{t.scale})"
    if t.name == "list" and t.element is not None:
        return {"type": "array", "elementType": _type(t.element.type, column), "containsNull": t.element.nullable}
    if t.name == "map" and t.key is not None and t.value is not None:
        return {"type": "map", "keyType": _type(t.key.type, column), "valueType": _type(t.value.type, column),
                "valueContainsNull": t.value.nullable}
    if t.name == "struct":
        return {"type": "struct", "fields": [_field(child) for child in t.fields or ()]}
    raise DeltaPublishError(f"column {column!r}: type {t.name!r} has no Delta type; the table cannot be published "
                            "as Delta")
