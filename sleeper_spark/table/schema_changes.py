"""Changing a table's schema and properties: ``t.add_columns``, ``t.widen_column``,
``t.drop_column``, ``t.set_properties``, ``t.set_clustering``.

A change is one ``SetSchema`` transaction, committed with the same conditional put as a write,
and a snapshot of its own in the history (operation ``"schema"``, no rows; its metadata says
what changed). No data file is touched: the rules in
:mod:`sleeper_spark.models.schema_evolution` keep every old file readable under the new schema.
The new schema is worked out again from the newest state on each commit attempt, so a racing
change is kept (or, if the two cannot both hold, this one fails with ``SchemaMismatchError``).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from sleeper_spark.commit import utc_now
from sleeper_spark.errors import SchemaMismatchError
from sleeper_spark.models import Field, SetProperties, SetSchema, Snapshot, TableSchema, Transaction
from sleeper_spark.models.clustering import (
    CLUSTERING_COLUMNS,
    check_auto_compaction,
    check_clustering,
    check_write_distribution,
    clustering_columns,
    clustering_value,
    parse_clustering,
)
from sleeper_spark.models.schema import describe, same_type
from sleeper_spark.state import TableState
from sleeper_spark.table.writes import new_write_id

if TYPE_CHECKING:
    from sleeper_spark.table import Table

log = logging.getLogger(__name__)

SCHEMA_OPERATION = "schema"
PROPERTIES_OPERATION = "properties"
# Properties the table's own facts answer to (what SQL's DESCRIBE shows), never stored.
RESERVED_PROPERTIES = frozenset({"provider", "location", "current-version"})


def add_columns(table: Table, fields: Any) -> Snapshot:
    """Adds nullable columns after the existing ones; ``fields``: a ``pyarrow.Schema``, a list of
    ``pyarrow.Field`` or a Spark ``StructType``."""
    added = _fields(fields)
    if not added:
        raise SchemaMismatchError(f"table {table.name!r}: add_columns needs at least one column")

    def change(schema: TableSchema) -> TableSchema:
        taken = [f.name for f in added if f.name in schema.names]
        if taken:
            raise SchemaMismatchError(
                f"table {table.name!r} has a column {taken[0]!r} already; the schema is unchanged")
        return TableSchema(fields=(*schema.fields, *added))

    return _commit(table, change, {"added": ",".join(f.name for f in added)})


def widen_column(table: Table, name: str, new_type: Any) -> Snapshot:
    """Changes column ``name`` to a wider type (a pyarrow or Spark type, or a pyarrow alias such as ``"int64"``)."""
    wanted = _type(name, new_type)

    def change(schema: TableSchema) -> TableSchema:
        _require(table, schema, name)
        if same_type(schema.field(name).type, wanted):
            raise SchemaMismatchError(f"column {name!r} of table {table.name!r} is {describe(wanted)} already")
        return TableSchema(fields=tuple(f.model_copy(update={"type": wanted}) if f.name == name else f
                                        for f in schema.fields))

    return _commit(table, change, {"widened": name, "type": describe(wanted)})


def drop_column(table: Table, name: str) -> Snapshot:
    """Removes column ``name`` from the schema; its data stays in the old files, and the name is retired."""

    if name in clustering_columns(table.state().properties):
        raise SchemaMismatchError(f"table {table.name!r}: {name!r} is a clustering column; change the clustering "
                                  "first (t.set_clustering([...]) or ALTER TABLE ... CLUSTER BY), then drop it")

    def change(schema: TableSchema) -> TableSchema:
        _require(table, schema, name)
        if len(schema.fields) == 1:
            raise SchemaMismatchError(f"table {table.name!r}: {name!r} is its only column and cannot be dropped")
        return TableSchema(fields=tuple(f for f in schema.fields if f.name != name))

    return _commit(table, change, {"dropped": name})


def set_properties(table: Table, set: dict[str, str], unset: tuple[str, ...] = ()) -> Snapshot:
    """Sets and removes table properties in one snapshot (operation ``"properties"``, no rows)."""
    reserved = sorted(RESERVED_PROPERTIES.intersection((*set, *unset)))
    if reserved:
        raise SchemaMismatchError(f"table {table.name!r}: {reserved[0]!r} is not a property that can be set; it "
                                  "follows from the table itself")
    check_write_distribution(table.name, set)
    check_auto_compaction(table.name, set)
    if CLUSTERING_COLUMNS in set:
        state = table.state()
        check_clustering(table.name, state.schema, state.partition_by,
                         clustering_text_columns(table.name, set[CLUSTERING_COLUMNS]))
    snapshot_id, write_id = uuid.uuid4().hex, new_write_id()
    metadata = {key: "set" for key in set} | {key: "unset" for key in unset}

    def build(state: TableState) -> Transaction:
        return SetProperties(snapshot_id=snapshot_id, committed_at=utc_now(), operation=PROPERTIES_OPERATION,
                             metadata=metadata, write_id=write_id, set=dict(set), unset=tuple(unset))

    snapshot = table.head.commit(build).snapshot
    log.info("table %s: properties changed (%s) at version %d", table.name, metadata, snapshot.version)
    return snapshot


def set_clustering(table: Table, columns: Sequence[str] | None) -> Snapshot:
    """Clusters the table by ``columns`` from its next compaction on (empty or None: unclustered)."""
    state = table.state()
    chosen = check_clustering(table.name, state.schema, state.partition_by, () if columns is None else columns)
    if chosen:
        return set_properties(table, {CLUSTERING_COLUMNS: clustering_value(chosen)})
    return set_properties(table, {}, (CLUSTERING_COLUMNS,))


def clustering_text_columns(table: str, text: str) -> list[str]:
    """The column names a ``clustering.columns`` value lists; a clear error for anything else."""
    columns = parse_clustering(text)
    if columns is None:
        raise SchemaMismatchError(f"table {table!r}: {CLUSTERING_COLUMNS} holds a JSON list of column names, e.g. "
                                  f'["a","b"], not {text!r}; t.set_clustering(["a", "b"]) sets it')
    return list(columns)


def clustering_properties(table: str, schema: TableSchema, partition_by: Sequence[str],
                          properties: Mapping[str, str], cluster_by: Sequence[str]) -> dict[str, str]:
    """A new table's properties with its clustering columns, both checked against its schema."""
    chosen = dict(properties)
    check_write_distribution(table, chosen)
    check_auto_compaction(table, chosen)
    if CLUSTERING_COLUMNS in chosen:
        check_clustering(table, schema, partition_by, clustering_text_columns(table, chosen[CLUSTERING_COLUMNS]))
    if cluster_by:
        if CLUSTERING_COLUMNS in chosen:
            raise SchemaMismatchError(f"table {table!r}: clustering columns given twice (cluster_by and the "
                                      f"{CLUSTERING_COLUMNS} property): give cluster_by only")
        chosen[CLUSTERING_COLUMNS] = clustering_value(check_clustering(table, schema, partition_by, cluster_by))
    return chosen


def _commit(table: Table, change: Callable[[TableSchema], TableSchema], metadata: dict[str, str]) -> Snapshot:
    snapshot_id, write_id = uuid.uuid4().hex, new_write_id()
    change(table.state().schema)  # a mistake fails here, before the commit loop starts

    def build(state: TableState) -> Transaction:
        return SetSchema(snapshot_id=snapshot_id, committed_at=utc_now(), operation=SCHEMA_OPERATION,
                         metadata=metadata, write_id=write_id, schema_=change(state.schema))

    snapshot = table.head.commit(build).snapshot
    log.info("table %s: schema changed (%s) at version %d", table.name, metadata, snapshot.version)
    return snapshot


def _require(table: Table, schema: TableSchema, name: str) -> None:
    if name not in schema.names:
        raise SchemaMismatchError(f"table {table.name!r} has no column {name!r}; its columns: {schema.names}")


def _fields(fields: Any) -> tuple[Field, ...]:
    if isinstance(fields, (list, tuple)) and all(isinstance(f, pa.Field) for f in fields):
        fields = pa.schema(list(fields))
    return TableSchema.from_any(fields).fields


def _type(name: str, new_type: Any) -> Any:
    """The stored form of a column type given as pyarrow, Spark or a pyarrow alias."""
    if isinstance(new_type, str):
        try:
            new_type = pa.type_for_alias(new_type)
        except (ValueError, KeyError):
            raise SchemaMismatchError(f"{new_type!r} names no type; give a pyarrow type such as pa.int64() "
                                      "or pa.decimal128(20, 2)") from None
    if isinstance(new_type, pa.DataType):
        return TableSchema.from_arrow(pa.schema([pa.field(name, new_type)])).fields[0].type
    json_value = getattr(new_type, "jsonValue", None)
    if callable(json_value):  # a Spark DataType
        struct = {"type": "struct", "fields": [{"name": name, "type": json_value(), "nullable": True,
                                                "metadata": {}}]}
        return TableSchema.from_spark_json(struct).fields[0].type
    raise SchemaMismatchError(f"a column type must be a pyarrow or Spark type, not {type(new_type).__name__}")
