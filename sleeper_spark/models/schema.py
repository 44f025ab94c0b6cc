"""The table schema as stored in the log, and its conversions.

The stored form is plain JSON (golden-tested), not Arrow's binary IPC, so that the log stays
readable by any tool. Spark's ``StructType`` is accepted through its JSON form, which keeps
pyspark out of every layer but ``spark``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
from pydantic import BaseModel, ConfigDict

from sleeper_spark.errors import SchemaMismatchError

_PRIMITIVES: dict[str, pa.DataType] = {
    "bool": pa.bool_(),
    "int8": pa.int8(),
    "int16": pa.int16(),
    "int32": pa.int32(),
    "int64": pa.int64(),
    "float32": pa.float32(),
    "float64": pa.float64(),
    "string": pa.string(),
    "binary": pa.binary(),
    "date": pa.date32(),
}

# Spark's type names in StructType.jsonValue() and the stored name each maps to.
_SPARK_PRIMITIVES = {
    "boolean": "bool",
    "byte": "int8",
    "short": "int16",
    "integer": "int32",
    "long": "int64",
    "float": "float32",
    "double": "float64",
    "string": "string",
    "binary": "binary",
    "date": "date",
}
_SPARK_DECIMAL = re.compile(r"decimal\((\d+),\s*(\d+)\)")


class DataType(BaseModel):
    """A column type: a primitive name, or a parameterised/nested type."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str  # one of _PRIMITIVES, or "timestamp", "decimal", "list", "struct", "map"
    unit: str | None = None  # timestamp
    tz: str | None = None  # timestamp; None means "no time zone" (Spark's timestamp_ntz)
    precision: int | None = None  # decimal
    scale: int | None = None  # decimal
    element: Field | None = None  # list
    fields: tuple[Field, ...] | None = None  # struct
    key: Field | None = None  # map
    value: Field | None = None  # map

    def nested(self) -> Iterator[DataType]:
        """This type and every type inside it (struct fields, list elements, map keys and values)."""
        yield self
        for child in (*(self.fields or ()), self.element, self.key, self.value):
            if child is not None:
                yield from child.type.nested()


class Field(BaseModel):
    """A named column."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    type: DataType
    nullable: bool = True


class TableSchema(BaseModel):
    """The ordered columns of a table."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    fields: tuple[Field, ...]

    @property
    def names(self) -> list[str]:
        return [f.name for f in self.fields]

    def field(self, name: str) -> Field:
        for candidate in self.fields:
            if candidate.name == name:
                return candidate
        raise KeyError(name)

    def to_arrow(self) -> pa.Schema:
        return pa.schema([_field_to_arrow(f) for f in self.fields])

    @classmethod
    def from_arrow(cls, schema: pa.Schema) -> TableSchema:
        return cls(fields=tuple(_field_from_arrow(f) for f in schema))

    @classmethod
    def from_spark_json(cls, struct: dict[str, Any]) -> TableSchema:
        """From ``StructType.jsonValue()``."""
        return cls(fields=tuple(_field_from_spark(f) for f in struct["fields"]))

    @classmethod
    def from_any(cls, schema: object) -> TableSchema:
        """Accepts a ``pyarrow.Schema``, a Spark ``StructType`` or a ``TableSchema``."""
        if isinstance(schema, TableSchema):
            return schema
        if isinstance(schema, pa.Schema):
            return cls.from_arrow(schema)
        json_value = getattr(schema, "jsonValue", None)
        if callable(json_value):
            return cls.from_spark_json(json_value())
        raise SchemaMismatchError(
            f"a table schema must be a pyarrow.Schema or a pyspark StructType, not {type(schema).__name__}"
        )


DataType.model_rebuild()


def _field_to_arrow(f: Field) -> pa.Field:
    return pa.field(f.name, _type_to_arrow(f.type), nullable=f.nullable)


def _type_to_arrow(t: DataType) -> pa.DataType:
    if t.name in _PRIMITIVES:
        return _PRIMITIVES[t.name]
    if t.name == "timestamp":
        return pa.timestamp(t.unit or "us", tz=t.tz)
    if t.name == "decimal":
        assert t.precision is not None and t.scale is not None
        return pa.decimal128(t.precision, t.scale)
    if t.name == "list":
        assert t.element is not None
        return pa.list_(_field_to_arrow(t.element))
    if t.name == "struct":
        return pa.struct([_field_to_arrow(f) for f in t.fields or ()])
    if t.name == "map":
        assert t.key is not None and t.value is not None
        return pa.map_(_field_to_arrow(t.key), _field_to_arrow(t.value))
    raise SchemaMismatchError(f"unknown stored column type {t.name!r}")


def _field_from_arrow(f: pa.Field) -> Field:
    return Field(name=f.name, type=_type_from_arrow(f.type, f.name), nullable=f.nullable)


def _type_from_arrow(t: pa.DataType, column: str) -> DataType:
    for name, arrow_type in _PRIMITIVES.items():
        if t == arrow_type:
            return DataType(name=name)
    if pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return DataType(name="string")
    if pa.types.is_large_binary(t) or pa.types.is_binary_view(t):
        return DataType(name="binary")
    if pa.types.is_timestamp(t):
        return DataType(name="timestamp", unit=t.unit, tz=normalise_tz(t.tz))
    if pa.types.is_decimal(t):
        return DataType(name="decimal", precision=t.precision, scale=t.scale)
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return DataType(name="list", element=_field_from_arrow(t.value_field))
    if pa.types.is_struct(t):
        return DataType(name="struct", fields=tuple(_field_from_arrow(t.field(i)) for i in range(t.num_fields)))
    if pa.types.is_map(t):
        return DataType(name="map", key=_field_from_arrow(t.key_field), value=_field_from_arrow(t.item_field))
    raise SchemaMismatchError(f"column {column!r} has type {t}, which sleeper_spark tables do not support")


def normalise_tz(tz: str | None) -> str | None:
    """Spark's Arrow batches say ``Etc/UTC`` where Arrow says ``UTC``: one name for one zone."""
    if tz in ("Etc/UTC", "UTC", "+00:00", "Z"):
        return "UTC"
    return tz


def _field_from_spark(f: dict[str, Any]) -> Field:
    return Field(name=f["name"], type=_type_from_spark(f["type"], f["name"]), nullable=f.get("nullable", True))


def _type_from_spark(t: Any, column: str) -> DataType:
    if isinstance(t, str):
        if t in _SPARK_PRIMITIVES:
            return DataType(name=_SPARK_PRIMITIVES[t])
        if t == "timestamp":
            return DataType(name="timestamp", unit="us", tz="UTC")
        if t == "timestamp_ntz":
            return DataType(name="timestamp", unit="us", tz=None)
        decimal = _SPARK_DECIMAL.fullmatch(t)
        if decimal:
            return DataType(name="decimal", precision=int(decimal.group(1)), scale=int(decimal.group(2)))
    elif t.get("type") == "array":
        element = {"name": "element", "type": t["elementType"], "nullable": t.get("containsNull", True)}
        return DataType(name="list", element=_field_from_spark(element))
    elif t.get("type") == "struct":
        return DataType(name="struct", fields=tuple(_field_from_spark(f) for f in t["fields"]))
    elif t.get("type") == "map":
        key = {"name": "key", "type": t["keyType"], "nullable": False}
        value = {"name": "value", "type": t["valueType"], "nullable": t.get("valueContainsNull", True)}
        return DataType(name="map", key=_field_from_spark(key), value=_field_from_spark(value))
    raise SchemaMismatchError(f"column {column!r} has Spark type {t}, which sleeper_spark tables do not support")


def same_type(a: DataType, b: DataType) -> bool:
    """Type equality that ignores the names Arrow and Spark give to list/map children."""
    if a.name != b.name or a.unit != b.unit or a.tz != b.tz or (a.precision, a.scale) != (b.precision, b.scale):
        return False
    if a.name == "list":
        assert a.element is not None and b.element is not None
        return same_type(a.element.type, b.element.type)
    if a.name == "map":
        assert a.key and b.key and a.value and b.value
        return same_type(a.key.type, b.key.type) and same_type(a.value.type, b.value.type)
    if a.name == "struct":
        af, bf = a.fields or (), b.fields or ()
        if len(af) != len(bf):
            return False
        return all(x.name == y.name and same_type(x.type, y.type) for x, y in zip(af, bf, strict=True))
    return True


def check_data_schema(data: TableSchema, table: TableSchema, table_name: str, missing_ok: bool = False) -> None:
    """Refuses data whose columns differ from the table's by name or type (order is free).

    Nullability is checked on the values while writing, since Spark marks most columns
    nullable even when they hold no nulls. ``missing_ok`` (a write with ``merge_schema``): the
    data may lack nullable columns, which the writer fills with nulls.
    """
    problems: list[str] = []
    data_fields = {f.name: f for f in data.fields}
    for column in table.fields:
        if column.name not in data_fields:
            if not (missing_ok and column.nullable):
                problems.append(f"missing column {column.name!r}")
        elif not same_type(data_fields[column.name].type, column.type):
            problems.append(
                f"column {column.name!r} is {describe(data_fields[column.name].type)}, "
                f"the table has {describe(column.type)}"
            )
    extra = [name for name in data_fields if name not in table.names]
    if extra:
        problems.append(f"columns not in the table: {', '.join(map(repr, extra))}")
    if problems:
        raise SchemaMismatchError(
            f"the data does not fit table {table_name!r}: {'; '.join(problems)}. "
            "Cast or select the columns to the table's schema; nothing was written."
        )


def describe(t: DataType) -> str:
    return str(_type_to_arrow(t))
