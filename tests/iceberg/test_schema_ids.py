"""Iceberg field ids of a sleeper schema: assigned depth first, stable across schema changes,
never reused, and readable back from a published schema."""

from __future__ import annotations

import pytest
from pyiceberg.table.name_mapping import MappedField, parse_mapping_from_json
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
    StringType,
    StructType,
    TimestampType,
    TimestamptzType,
)

from sleeper_spark.errors import IcebergPublishError
from sleeper_spark.iceberg.schema import field_ids, iceberg_schema, iceberg_type, name_mapping_json
from sleeper_spark.models.schema import DataType, Field, TableSchema


def column(name: str, type_name: str, nullable: bool = True, **params: object) -> Field:
    return Field(name=name, type=DataType(name=type_name, **params), nullable=nullable)


def nested_schema() -> TableSchema:
    point = DataType(name="struct", fields=(column("x", "int64", nullable=False), column("y", "float64")))
    tags = DataType(name="list", element=column("element", "string", nullable=False))
    attributes = DataType(name="map", key=column("key", "string", nullable=False), value=Field(name="value", type=point))
    return TableSchema(fields=(column("id", "int64", nullable=False), Field(name="point", type=point),
                               Field(name="tags", type=tags), Field(name="attributes", type=attributes)))


def test_a_new_schema_numbers_every_field_depth_first() -> None:
    # Given a schema with a struct, a list and a map of structs, published for the first time
    schema, ids, last_id = iceberg_schema(nested_schema(), 0, {}, 0)

    # Then each column's id comes before its children's, in field order
    assert ids == {"id": 1, "point": 2, "point.x": 3, "point.y": 4, "tags": 5, "tags.element": 6,
                   "attributes": 7, "attributes.key": 8, "attributes.value": 9, "attributes.value.x": 10,
                   "attributes.value.y": 11}
    assert last_id == 11
    assert schema.schema_id == 0 and schema.identifier_field_ids == []
    assert schema.highest_field_id == 11
    # And the pyiceberg schema uses those ids
    assert schema.find_field("point.y").field_id == 4
    tags = schema.find_field("tags").field_type
    assert isinstance(tags, ListType) and tags.element_id == 6
    attributes = schema.find_field("attributes").field_type
    assert isinstance(attributes, MapType) and (attributes.key_id, attributes.value_id) == (8, 9)


def test_required_follows_nullability_at_every_level() -> None:
    # Given fields nullable and not, at the top and nested
    schema, _, _ = iceberg_schema(nested_schema(), 0, {}, 0)

    # Then required is the opposite of nullable for columns, struct children, elements and values
    assert schema.find_field("id").required and not schema.find_field("point").required
    assert schema.find_field("point.x").required and not schema.find_field("point.y").required
    tags = schema.find_field("tags").field_type
    attributes = schema.find_field("attributes").field_type
    assert isinstance(tags, ListType) and tags.element_required
    assert isinstance(attributes, MapType) and not attributes.value_required


def test_ids_survive_every_schema_change_and_are_never_reused() -> None:
    # Given a table with three columns
    v0 = TableSchema(fields=(column("a", "int32", nullable=False), column("b", "string"), column("c", "float32")))
    s0, ids0, last0 = iceberg_schema(v0, 0, {}, 0)
    assert (ids0, last0) == ({"a": 1, "b": 2, "c": 3}, 3)

    # When a column is added at the end
    v1 = TableSchema(fields=(*v0.fields, column("d", "date")))
    s1, ids1, last1 = iceberg_schema(v1, 1, ids0, last0)
    # Then the old ids stay and the new column gets the next one
    assert (ids1, last1) == ({"a": 1, "b": 2, "c": 3, "d": 4}, 4)

    # When a column is dropped
    v2 = TableSchema(fields=(v1.fields[0], v1.fields[2], v1.fields[3]))
    s2, ids2, last2 = iceberg_schema(v2, 2, ids1, last1)
    # Then its id leaves the schema but the last id stays, so it is never given again
    assert (ids2, last2) == ({"a": 1, "c": 3, "d": 4}, 4)

    # When columns are widened and made nullable
    v3 = TableSchema(fields=(column("a", "int64"), column("c", "float64"), column("d", "date")))
    s3, ids3, last3 = iceberg_schema(v3, 3, ids2, last2)
    # Then they keep their ids with their new types
    assert (ids3, last3) == (ids2, 4)
    assert s3.find_field("a").field_type == LongType() and not s3.find_field("a").required
    assert s3.find_field("c").field_type == DoubleType()

    # When a nested column is added after the drop
    v4 = TableSchema(fields=(*v3.fields, Field(name="e", type=DataType(name="list", element=column("element", "int8")))))
    s4, ids4, last4 = iceberg_schema(v4, 4, ids3, last3)
    # Then it and its element get ids after every id ever given, never the dropped column's
    assert (ids4, last4) == ({"a": 1, "c": 3, "d": 4, "e": 5, "e.element": 6}, 6)
    assert [s.schema_id for s in (s0, s1, s2, s3, s4)] == [0, 1, 2, 3, 4]
    assert [f.field_id for f in s4.fields] == [1, 3, 4, 5]


def test_field_ids_reads_back_the_ids_of_a_published_schema() -> None:
    # Given a nested schema as published
    schema, ids, last_id = iceberg_schema(nested_schema(), 7, {}, 0)

    # When its ids are read back from the pyiceberg schema (as when publishing resumes)
    read_back = field_ids(schema)

    # Then they are the ids assigned, and converting again from them changes nothing
    assert read_back == ids
    again, ids_again, last_again = iceberg_schema(nested_schema(), 7, read_back, last_id)
    assert (again, ids_again, last_again) == (schema, ids, last_id)


@pytest.mark.parametrize(("data_type", "expected"), [
    (DataType(name="bool"), BooleanType()),
    (DataType(name="int8"), IntegerType()),
    (DataType(name="int16"), IntegerType()),
    (DataType(name="int32"), IntegerType()),
    (DataType(name="int64"), LongType()),
    (DataType(name="float32"), FloatType()),
    (DataType(name="float64"), DoubleType()),
    (DataType(name="string"), StringType()),
    (DataType(name="binary"), BinaryType()),
    (DataType(name="date"), DateType()),
    (DataType(name="timestamp", unit="us", tz=None), TimestampType()),
    (DataType(name="timestamp", unit="ns", tz=None), TimestampType()),
    (DataType(name="timestamp", unit="s", tz="UTC"), TimestamptzType()),
    (DataType(name="timestamp", unit="ns", tz="Europe/Paris"), TimestamptzType()),
    (DataType(name="decimal", precision=38, scale=10), DecimalType(38, 10)),
    (DataType(name="struct", fields=(column("x", "int32"),)), StructType()),
])
def test_each_stored_type_has_its_iceberg_type(data_type: DataType, expected: IcebergType) -> None:
    converted = iceberg_type(data_type)
    if isinstance(expected, StructType):
        assert isinstance(converted, StructType) and converted.fields[0].field_type == IntegerType()
    else:
        assert converted == expected


@pytest.mark.parametrize("data_type", [
    DataType(name="interval"),
    DataType(name="decimal", precision=76, scale=2),
    DataType(name="list", element=column("element", "large_utf8")),
])
def test_a_type_without_an_iceberg_form_is_refused_with_a_clear_error(data_type: DataType) -> None:
    schema = TableSchema(fields=(column("ok", "int32"), Field(name="bad", type=data_type)))
    with pytest.raises(IcebergPublishError, match=r"no Iceberg v2 form.*cannot be published") as raised:
        iceberg_schema(schema, 0, {}, 0)
    assert "bad" in str(raised.value)


def test_two_fields_with_one_path_are_refused() -> None:
    # Given a column named "a.b" next to a struct a with a child b: one path, two fields
    struct = DataType(name="struct", fields=(column("b", "int32"),))
    schema = TableSchema(fields=(Field(name="a", type=struct), column("a.b", "string")))

    # Then publishing refuses it rather than giving two fields one id
    with pytest.raises(IcebergPublishError, match=r"'a\.b'"):
        iceberg_schema(schema, 0, {}, 0)


def test_the_name_mapping_names_every_field_with_its_id() -> None:
    # Given a nested schema as published
    schema, ids, _ = iceberg_schema(nested_schema(), 0, {}, 0)

    # When its name mapping is written and parsed back by pyiceberg
    mapping = parse_mapping_from_json(name_mapping_json(schema))

    # Then every path finds its field's id
    assert mapped_ids(list(mapping), "") == ids
    assert [m.names for m in mapping] == [["id"], ["point"], ["tags"], ["attributes"]]


def mapped_ids(fields: list[MappedField], parent: str) -> dict[str, int | None]:
    found: dict[str, int | None] = {}
    for mapped in fields:
        (name,) = mapped.names
        path = f"{parent}.{name}" if parent else name
        found[path] = mapped.field_id
        found.update(mapped_ids(mapped.fields, path))
    return found
