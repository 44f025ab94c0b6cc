"""``CREATE TABLE ... AS SELECT`` and ``[CREATE OR] REPLACE TABLE [... AS SELECT]`` on the SQL catalog.

Spark stages these statements (the jar's ``StagedSleeperTable``): nothing changes when it stages
one; the definition travels with the rows Spark then writes (the write option ``__sleeper_stage``),
and the table is made or replaced here, together with its rows:

- A new table (``CREATE ... AS SELECT``, or ``CREATE OR REPLACE`` of a name not in use) is created
  and its rows appended; if writing them fails, the table is dropped again, so a failed statement
  leaves nothing behind.
- A replacement that keeps the table's partitioning and its columns (names, types, order; new
  columns may follow them) is one ``overwrite`` snapshot: every old file out, the new rows in, and
  the new columns added in the same commit (a write with ``merge_schema``). The history stays:
  ``VERSION AS OF`` still reads the versions before, and a reader sees the old rows or the new,
  never an empty or a missing table. Properties the new definition changes follow in one
  ``properties`` snapshot.
- Any other replacement (a column dropped, retyped, renamed or moved; other partitioning) is
  refused with a ``ConfigError`` before anything changes: a sleeper table's columns only evolve
  (see ``widen_column``), and making a new table would drop the old one, history and rows, before
  the new rows were safe. ``DROP TABLE`` then ``CREATE TABLE ... AS SELECT`` does it, knowingly.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sleeper_spark.errors import ConfigError, TableAlreadyExistsError, TableNotFoundError
from sleeper_spark.models import TableSchema
from sleeper_spark.models.clustering import CLUSTERING_COLUMNS, clustering_value
from sleeper_spark.models.schema_evolution import DROPPED_COLUMNS, dropped_columns
from sleeper_spark.spark.sql.definitions import checked_properties, create_table
from sleeper_spark.table import Catalog, Table

# Properties a definition carries that are not table properties (Spark's, or derived from the table).
_NOT_PROPERTIES = frozenset({"provider", "location", "current-version", "owner", "is_managed_location"})


@dataclass(frozen=True)
class Prepared:
    """A staged table made ready for its rows: write them to ``table`` with ``mode``."""

    table: Table
    mode: str  # "append" into a table made for them, or "overwrite" of a table replaced in place
    created: bool  # the table was made for these rows: drop it if they fail
    properties: Mapping[str, str]  # the definition's properties, set once the rows are in


def prepare(catalog: Catalog, definition: Mapping[str, Any]) -> Prepared:
    """Makes the staged ``definition`` (``{kind, table, schema, partitionColumns, properties}``) ready."""
    name = str(definition["table"])
    kind = str(definition["kind"])
    properties = {k: v for k, v in checked_properties(definition).items() if k not in _NOT_PROPERTIES}
    if definition.get("clusterColumns"):  # CLUSTER BY: the replaced table clusters by these from now on
        properties[CLUSTERING_COLUMNS] = clustering_value(list(definition["clusterColumns"]))
    try:
        existing: Table | None = catalog.table(name)
    except TableNotFoundError:
        existing = None
    if existing is None:
        if kind == "replace":
            raise TableNotFoundError(f"table {name!r} does not exist, so REPLACE TABLE has nothing to replace: "
                                     "use CREATE OR REPLACE TABLE")
        return Prepared(create_table(catalog, definition), "append", True, {})
    if kind == "create":
        raise TableAlreadyExistsError(f"table {name!r} exists: CREATE OR REPLACE TABLE replaces it, "
                                      "CREATE TABLE IF NOT EXISTS leaves it")
    why = _why_not_in_place(existing, definition)
    if why is not None:
        raise ConfigError(f"table {name!r} cannot be replaced in place: {why}. A sleeper table's columns only "
                          "evolve (new columns after the old ones, widened types), and a replacement by a new table "
                          "would drop its history before the new rows were safe. Drop it first (DROP TABLE), then "
                          "CREATE TABLE ... AS SELECT; nothing was changed")
    return Prepared(existing, "overwrite", False, properties)


def finish(prepared: Prepared) -> None:
    """Once the rows are committed: the definition's properties, in one snapshot if any changed."""
    if prepared.created:
        return
    current = prepared.table.state().properties
    set_ = {k: v for k, v in prepared.properties.items() if current.get(k) != v}
    unset = tuple(k for k in current if k not in prepared.properties and k not in _NOT_PROPERTIES
                  and not k.startswith("sleeper."))
    if set_ or unset:
        prepared.table.set_properties(set_, unset)


def abandon(catalog: Catalog, prepared: Prepared) -> None:
    """The rows failed: a table made for them goes again (a replaced one never changed)."""
    if prepared.created:
        try:
            catalog.drop_table(prepared.table.name)
        except TableNotFoundError:
            pass


def commit_definition(spark: Any, catalog: Catalog, definition: Mapping[str, Any]) -> None:
    """A staged table Spark wrote no rows into (``CREATE OR REPLACE TABLE t (...)``): the definition alone."""
    from pyspark.sql.types import StructType

    prepared = prepare(catalog, definition)
    if prepared.mode == "overwrite":
        schema = StructType.fromJson(json.loads(definition["schema"]))
        prepared.table.write(spark.createDataFrame([], schema), mode="overwrite", merge_schema=True)
    finish(prepared)


def _why_not_in_place(table: Table, definition: Mapping[str, Any]) -> str | None:
    """Why the definition cannot replace ``table`` in one overwrite (see the module doc); None when it can."""
    from pyspark.sql.types import StructType

    state = table.state()
    new = TableSchema.from_any(StructType.fromJson(json.loads(definition["schema"])))
    partition_by = tuple(definition["partitionColumns"])
    if partition_by != state.partition_by:
        return f"partitioned by {list(partition_by)}, not {list(state.partition_by)}"
    old = [(f.name, f.type) for f in state.schema.fields]
    kept = [(f.name, f.type) for f in new.fields[:len(old)]]
    if kept != old:
        return f"the columns {state.schema.names} do not all stay, with their types and order"
    retired = set(dropped_columns(state.properties)).intersection(new.names)
    if retired:
        return f"the column(s) {sorted(retired)} were dropped before ({DROPPED_COLUMNS})"
    return None
