"""Which schema changes a table may make, so that every file written before still reads.

Data files are never rewritten for a schema change, so a change is allowed only where each
reader can read the old files under the new schema:

- **add** a nullable column after the existing ones: old files lack it and read as nulls;
- **widen** a column: int8 -> int16 -> int32 -> int64, float32 -> float64, decimal(p, s) ->
  decimal(p', s) with p' > p; old files' values are cast, exactly;
- **drop** a column: old files keep its data, reads no longer show it. Its name is then
  retired: a later column of that name would bring the old files' values back to life, so it
  is refused (the retired names are kept in the table property :data:`DROPPED_COLUMNS`);
- a non-nullable column may become nullable.

Partition columns and the event-time column stay as they are: their values are in the log.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from sleeper_spark.errors import SchemaMismatchError
from sleeper_spark.models.schema import DataType, TableSchema, describe, same_type

# A table property: the JSON list of the names of every column the table has dropped.
DROPPED_COLUMNS = "sleeper.dropped_columns"

_INTEGERS = ("int8", "int16", "int32", "int64")


def widens(old: DataType, new: DataType) -> bool:
    """Whether every value of ``old`` converts exactly to ``new`` (and ``new`` is another type)."""
    if old.name in _INTEGERS and new.name in _INTEGERS:
        return _INTEGERS.index(new.name) > _INTEGERS.index(old.name)
    if (old.name, new.name) == ("float32", "float64"):
        return True
    if old.name == new.name == "decimal":
        assert old.precision is not None and new.precision is not None
        return old.scale == new.scale and new.precision > old.precision
    return False


def dropped_columns(properties: Mapping[str, str]) -> tuple[str, ...]:
    """The names a table has dropped, from its properties."""
    return tuple(json.loads(properties.get(DROPPED_COLUMNS, "[]")))


def with_dropped(properties: Mapping[str, str], old: TableSchema, new: TableSchema) -> dict[str, str]:
    """The properties after ``old`` became ``new``: the names it dropped are added to the retired ones."""
    removed = [name for name in old.names if name not in new.names]
    updated = dict(properties)
    if removed:
        updated[DROPPED_COLUMNS] = json.dumps([*dropped_columns(properties), *removed])
    return updated


def merged_schema(table: TableSchema, data: TableSchema, table_name: str) -> TableSchema:
    """The table's schema with the columns only ``data`` has appended, nullable (a write with
    ``merge_schema``). A column both have must have one type in both."""
    for field in data.fields:
        if field.name in table.names and not same_type(field.type, table.field(field.name).type):
            raise SchemaMismatchError(
                f"the data does not fit table {table_name!r}: column {field.name!r} is {describe(field.type)}, the "
                f"table has {describe(table.field(field.name).type)}; merge_schema adds columns, it changes no "
                "type (t.widen_column widens one). Nothing was written."
            )
    extra = [f.model_copy(update={"nullable": True}) for f in data.fields if f.name not in table.names]
    return TableSchema(fields=(*table.fields, *extra)) if extra else table


def check_evolution(old: TableSchema, new: TableSchema, table: str, dropped: tuple[str, ...] = (),
                    fixed: tuple[str, ...] = ()) -> None:
    """Raises :class:`SchemaMismatchError` naming each reason ``old`` may not become ``new``.

    ``dropped``: names retired earlier; ``fixed``: columns that may not change at all (partition
    and event-time columns).
    """
    problems: list[str] = []
    new_fields = {f.name: f for f in new.fields}
    kept = [name for name in new.names if name in old.names]
    if kept != [name for name in old.names if name in new_fields]:
        problems.append("the existing columns must keep their order")
    first_added = next((i for i, name in enumerate(new.names) if name not in old.names), len(new.names))
    if any(name in old.names for name in new.names[first_added:]):
        problems.append("new columns go after the existing ones")
    for column in old.fields:
        changed = new_fields.get(column.name)
        if changed is None:
            if column.name in fixed:
                problems.append(f"column {column.name!r} is a partition or event-time column and cannot be dropped")
            continue
        if not same_type(column.type, changed.type):
            if column.name in fixed:
                problems.append(f"column {column.name!r} is a partition or event-time column and keeps its type")
            elif not widens(column.type, changed.type):
                problems.append(f"column {column.name!r} cannot change from {describe(column.type)} to "
                                f"{describe(changed.type)} (allowed: int8 -> int16 -> int32 -> int64, "
                                "float32 -> float64, decimal(p, s) -> decimal(p', s) with p' > p)")
        if column.nullable and not changed.nullable:
            problems.append(f"column {column.name!r} is nullable and cannot become non-nullable")
    for column in new.fields[first_added:]:
        if column.name in dropped:
            problems.append(f"column {column.name!r} was dropped earlier, and its name cannot be used again: "
                            "old files still hold the dropped column's values")
        if not column.nullable:
            problems.append(f"new column {column.name!r} must be nullable: older files have no values for it")
    if problems:
        raise SchemaMismatchError(f"table {table!r}: {'; '.join(problems)}; the schema is unchanged")
