"""A sleeper table schema as an Iceberg schema, with field ids that stay stable across versions.

Iceberg names every field (columns, struct children, list elements, map keys and values) by an
id, and readers match a data file's columns to the schema by those ids (through the name mapping,
since sleeper's Parquet files carry no ids). A field keeps its id for as long as it exists, and
an id is never given to another field, so every published schema reads every file.

A field is known by its path: ``"a"`` for a column, ``"a.b"`` for a struct child, ``"a.element"``
for a list's element, ``"m.key"`` / ``"m.value"`` for a map's key and value, nested recursively
(``"m.value.x"``). Sleeper never renames and never reuses a dropped column's name, so a path names
one field for the table's whole life.

Timestamps of every unit map to Iceberg's microsecond types (Iceberg v2 has no other): readers of
the Iceberg metadata read a nanosecond column at microsecond precision.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from pyiceberg.schema import Schema
from pyiceberg.table.name_mapping import create_mapping_from_schema
from pyiceberg.types import (
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IcebergType,
    IntegerType,
    ListType,
    LongType,
    MapType,
    NestedField,
    PrimitiveType,
    StringType,
    StructType,
    TimestampType,
    TimestamptzType,
)

from sleeper_spark.errors import IcebergPublishError
from sleeper_spark.models.schema import DataType, Field, TableSchema

FieldIds = dict[str, int]

# Iceberg's decimals hold at most 38 digits.
MAX_DECIMAL_PRECISION = 38

_PRIMITIVES: dict[str, PrimitiveType] = {
    "bool": BooleanType(),
    "int8": IntegerType(),
    "int16": IntegerType(),
    "int32": IntegerType(),
    "int64": LongType(),
    "float32": FloatType(),
    "float64": DoubleType(),
    "string": StringType(),
    "binary": BinaryType(),
    "date": DateType(),
}


def iceberg_type(data_type: DataType) -> IcebergType:
    """The Iceberg type of a stored type. The fields of a nested type are numbered from 1 here;
    :func:`iceberg_schema` gives them their table's ids."""
    return _IdAssigner({}, 0).type_of(data_type, "")


def iceberg_schema(schema: TableSchema, schema_id: int, known: Mapping[str, int], last_column_id: int
                   ) -> tuple[Schema, FieldIds, int]:
    """``schema`` as Iceberg schema ``schema_id``.

    A path in ``known`` keeps its id; every other path gets the next id after ``last_column_id``,
    in field order and depth first (a column's own id before its children's). Returns the
    schema, the ids of its paths and the new last column id.
    """
    assigner = _IdAssigner(known, last_column_id)
    fields = [assigner.field(f, "") for f in schema.fields]
    return Schema(*fields, schema_id=schema_id, identifier_field_ids=[]), assigner.ids, assigner.last_id


def field_ids(schema: Schema) -> FieldIds:
    """The path -> id map of an Iceberg schema (the inverse of :func:`iceberg_schema`)."""
    ids: FieldIds = {}
    for f in schema.fields:
        for path, field_id in _paths(f.name, f.field_id, f.field_type):
            ids[path] = field_id
    return ids


def name_mapping_json(schema: Schema) -> str:
    """The JSON of Iceberg's default name mapping (``schema.name-mapping.default``) for every
    field of ``schema``: how readers find the ids of the columns of files that carry none."""
    return create_mapping_from_schema(schema).model_dump_json()


class _IdAssigner:
    """Gives each path its known id or the next new one, and records the ids given."""

    def __init__(self, known: Mapping[str, int], last_id: int) -> None:
        self._known = known
        self.last_id = last_id
        self.ids: FieldIds = {}

    def field(self, f: Field, parent: str) -> NestedField:
        path = _join(parent, f.name)
        field_id = self._id(path)
        return NestedField(field_id, f.name, self.type_of(f.type, path), required=not f.nullable)

    def type_of(self, data_type: DataType, path: str) -> IcebergType:
        if data_type.name in _PRIMITIVES:
            return _PRIMITIVES[data_type.name]
        if data_type.name == "timestamp":
            return TimestampType() if data_type.tz is None else TimestamptzType()
        if data_type.name == "decimal":
            return _decimal(data_type, path)
        if data_type.name == "struct":
            return StructType(*[self.field(child, path) for child in data_type.fields or ()])
        if data_type.name == "list" and data_type.element is not None:
            element = data_type.element
            element_id = self._id(_join(path, "element"))
            return ListType(element_id, self.type_of(element.type, _join(path, "element")),
                            element_required=not element.nullable)
        if data_type.name == "map" and data_type.key is not None and data_type.value is not None:
            key_id = self._id(_join(path, "key"))
            key_type = self.type_of(data_type.key.type, _join(path, "key"))
            value_id = self._id(_join(path, "value"))
            value_type = self.type_of(data_type.value.type, _join(path, "value"))
            return MapType(key_id, key_type, value_id, value_type, value_required=not data_type.value.nullable)
        raise IcebergPublishError(
            f"{_which(path)} has type {data_type.name!r}, which has no Iceberg v2 form: "
            "the table cannot be published as Iceberg; set its table property iceberg.publish to false")

    def _id(self, path: str) -> int:
        if path in self.ids:
            # Only a name with a dot in it can make two fields one path ("a.b" and struct a's b).
            raise IcebergPublishError(
                f"two fields of the schema have the path {path!r}: the table cannot be published as Iceberg; "
                "rename one of the columns in a new table, or set its table property iceberg.publish to false")
        if path in self._known:
            field_id = self._known[path]
        else:
            self.last_id += 1
            field_id = self.last_id
        self.ids[path] = field_id
        return field_id


def _decimal(data_type: DataType, path: str) -> DecimalType:
    precision, scale = data_type.precision, data_type.scale
    if precision is None or scale is None or not 0 < precision <= MAX_DECIMAL_PRECISION or not 0 <= scale <= precision:
        raise IcebergPublishError(
            f"{_which(path)} has type decimal({precision}, {scale}), which has no Iceberg v2 form "
            f"(at most {MAX_DECIMAL_PRECISION} digits): the table cannot be published as Iceberg; "
            "set its table property iceberg.publish to false")
    return DecimalType(precision, scale)


def _paths(path: str, field_id: int, field_type: IcebergType) -> Iterator[tuple[str, int]]:
    yield path, field_id
    if isinstance(field_type, StructType):
        for child in field_type.fields:
            yield from _paths(_join(path, child.name), child.field_id, child.field_type)
    elif isinstance(field_type, ListType):
        yield from _paths(_join(path, "element"), field_type.element_id, field_type.element_type)
    elif isinstance(field_type, MapType):
        yield from _paths(_join(path, "key"), field_type.key_id, field_type.key_type)
        yield from _paths(_join(path, "value"), field_type.value_id, field_type.value_type)


def _which(path: str) -> str:
    return f"column {path!r}" if path else "a column"


def _join(parent: str, name: str) -> str:
    return f"{parent}.{name}" if parent else name
