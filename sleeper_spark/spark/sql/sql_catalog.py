"""The Python side of the SQL catalog (the jar's ``sleeper.spark.SleeperCatalog``).

Spark's catalog API runs in the JVM; the tables, their log and the catalog's registry stay here.
The JVM sends one JSON request a call through the bridge ``format("sleeper")`` uses
(:mod:`sleeper_spark.spark.bridge.format_bridge`), with the catalog's options (those of
:meth:`Catalog.options`) under ``"options"``, and gets one JSON object back:

- ``load`` ``{table, version?, timestampMicros?}``: the table's Spark schema, partition columns,
  properties, current (or selected) version, and whether Spark's own Parquet reader and writer can
  reach it (``native``; else the JVM reads through the Python data source and writes fall back to
  it too); ``{"missing": <why>}`` for a table that does not exist.
- ``list`` ``{namespace}``: the tables directly in a namespace.
- ``create`` ``{table, schema, partitionColumns, properties}``: the new table, as ``load``
  answers, or ``{"exists": true}``.
- ``metadata`` ``{table, kind, version?, timestampMicros?}``: the metadata table ``kind``
  (``history``, ``files``) of a table, see :mod:`sleeper_spark.spark.sql.metadata_tables`.
- ``procedure`` ``{name}`` and ``call`` ``{name, arguments}``: the procedures of ``CALL``, see
  :mod:`sleeper_spark.spark.sql.procedures`.
- ``alter`` ``{table, changes}``: ``ALTER TABLE``'s changes, each ``{"kind", ...}``; all are checked
  before the first is committed, and each kind commits once (added columns together).
- ``drop`` ``{table, purge}``.
- ``namespaces`` ``{namespace}``: whether it exists and its child namespaces; ``namespace``
  ``{namespace}``: its metadata (properties, and its comment as ``comment``);
  ``createNamespace`` ``{namespace, metadata}``; ``alterNamespace`` ``{namespace, set, unset}``;
  ``dropNamespace`` ``{namespace, cascade}``: see :mod:`sleeper_spark.spark.sql.sql_namespaces`.
- ``changelog`` ``{table, range, deduplicationMode, computeUpdates}``: the columns and row identity
  of a changes read, see :mod:`sleeper_spark.spark.changes` (the bridge's ``changes`` gives its rows).
- ``adopt`` ``{table, location?}``: the existing table that the session catalog's ``CREATE TABLE
  db.t USING sleeper [LOCATION ...]`` registers in the metastore, as ``load`` answers.
- ``stage`` ``{stage}``: a ``CREATE OR REPLACE TABLE`` with no rows, see
  :mod:`sleeper_spark.spark.sql.table_replacement`.

Names: a namespace is a prefix of a table's name, so Spark's ``lake.sales.orders`` is the
table ``sales.orders`` (see :func:`namespace_of`). A namespace exists once ``CREATE NAMESPACE``
records it, or while a table's name has it as a prefix (see :mod:`sleeper_spark.table.namespaces`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from pyspark.sql.types import StructField, StructType
from pyspark.sql.types import _parse_datatype_json_value as _parse_type

from sleeper_spark.errors import (
    ConfigError,
    SchemaMismatchError,
    SnapshotNotFoundError,
    TableAlreadyExistsError,
    TableNotFoundError,
)
from sleeper_spark.models.clustering import check_clustering
from sleeper_spark.spark.changes import describe_changelog
from sleeper_spark.spark.common.conversions import spark_schema
from sleeper_spark.spark.common.jvm import native_entry
from sleeper_spark.spark.common.options import open_catalog
from sleeper_spark.spark.native.native_read import native_root
from sleeper_spark.spark.sql import procedures, sql_namespaces
from sleeper_spark.spark.sql.definitions import PROVIDER, create_table
from sleeper_spark.spark.sql.metadata_tables import metadata_table
from sleeper_spark.table import Catalog, Table


@dataclass(frozen=True)
class _Request:
    spark: Any
    catalog: Catalog
    body: Mapping[str, Any]


def answer(spark: Any, request: Mapping[str, Any]) -> dict[str, Any]:
    """The answer to one request of the JVM catalog in ``spark`` (see the module's docstring)."""
    operation = _OPERATIONS.get(str(request.get("op")))
    if operation is None:
        raise ConfigError(f"the SQL catalog asked for {request.get('op')!r}, which this version of sleeper_spark "
                          "does not know: the jar and the Python package must be the same version")
    return operation(_Request(spark, open_catalog(request["options"]), request))


def namespace_of(table: str) -> tuple[str, ...]:
    """The Spark namespace of a table name: every part but the last (``a.b.t`` is in ``a.b``)."""
    return tuple(table.split(".")[:-1])


def _load(request: _Request) -> dict[str, Any]:
    try:
        table = request.catalog.table(request.body["table"])
    except TableNotFoundError as missing:
        return {"missing": str(missing)}
    version = _version(table, request.body)
    return _described(request.spark, table, version, pinned=version is not None)


def _version(table: Table, request: Mapping[str, Any]) -> int | None:
    """The version ``VERSION AS OF`` or ``TIMESTAMP AS OF`` selects (checked to exist), or None for the current one."""
    version = request.get("version")
    if version is not None and not str(version).isdigit():
        raise SnapshotNotFoundError(f"table {table.name!r} has versions numbered 2, 3, ...; "
                                    f"VERSION AS OF {version!r} is not one")
    micros = request.get("timestampMicros")
    at = None if micros is None else datetime.fromtimestamp(int(micros) / 1_000_000, tz=timezone.utc)
    return table.resolve_version(None if version is None else int(version), at)


def _described(spark: Any, table: Table, version: int | None, pinned: bool) -> dict[str, Any]:
    state = table.state(version)
    properties = {**state.properties, "provider": PROVIDER, "location": table.location,
                  "current-version": str(state.version)}
    entry = native_entry(spark)
    native = entry is not None and native_root(table, spark, entry, state.schema) is not None
    return {"schema": spark_schema(state.schema, guarded=False).json(), "partitionColumns": list(state.partition_by),
            "properties": properties, "version": state.version, "pinned": pinned, "native": native}


def _list(request: _Request) -> dict[str, Any]:
    namespace = tuple(request.body["namespace"])
    tables = [name for name in request.catalog.tables() if namespace_of(name) == namespace]
    exists = not namespace or bool(tables) or sql_namespaces.exists(request.catalog, ".".join(namespace))
    return {"tables": tables, "exists": exists}


def _create(request: _Request) -> dict[str, Any]:
    try:
        table = create_table(request.catalog, request.body)
    except TableAlreadyExistsError:
        return {"exists": True}
    return _described(request.spark, table, None, pinned=False)


def _adopt(request: _Request) -> dict[str, Any]:
    """The existing table a session catalog's ``CREATE TABLE db.t USING sleeper [LOCATION '<root>']``
    registers: the catalog's table of that name, which must live at ``location`` when one is given."""
    name = str(request.body["table"])
    location = request.body.get("location")
    try:
        table = request.catalog.table(name)
    except TableNotFoundError:
        table = None
    if location is None:
        if table is None:
            raise TableNotFoundError(
                f"CREATE TABLE {name} USING sleeper without columns registers the sleeper table {name!r}, and the "
                f"catalog at {request.catalog.config.warehouse} has none: give the columns to create it, or "
                "LOCATION '<root>' of an existing table of that catalog")
        return _described(request.spark, table, None, pinned=False)
    if table is not None and same_location(table.location, str(location)):
        return _described(request.spark, table, None, pinned=False)
    for other in request.catalog.tables():
        found = request.catalog.table(other)
        if same_location(found.location, str(location)):
            raise ConfigError(
                f"LOCATION {location!r} is the root of the sleeper table {other!r}, and a session catalog's table "
                f"is the sleeper table of its own name: register it as CREATE TABLE {other} USING sleeper; "
                "nothing was registered")
    hint = (f"its table {name!r} lives at {table.location}" if table is not None
            else "give the root of one of its tables, or leave LOCATION out to create a new one")
    raise TableNotFoundError(
        f"LOCATION {location!r} is not the root of a table of the sleeper catalog at "
        f"{request.catalog.config.warehouse} (the one spark.sql.catalog.spark_catalog.* names); nothing was "
        f"registered: {hint}")


def same_location(a: str, b: str) -> bool:
    """Whether two spellings of a folder (a path, ``file:/...``, ``file:///...``, a trailing slash) are one."""
    return _normal_location(a) == _normal_location(b)


def _normal_location(location: str) -> str:
    text = location.rstrip("/")
    if text.startswith("file:"):
        text = "/" + text[len("file:"):].lstrip("/")
    return text


def _stage(request: _Request) -> dict[str, Any]:
    from sleeper_spark.spark.sql.table_replacement import commit_definition

    commit_definition(request.spark, request.catalog, request.body["stage"])
    return {}


def _metadata(request: _Request) -> dict[str, Any]:
    try:
        table = request.catalog.table(request.body["table"])
    except TableNotFoundError as missing:
        return {"missing": str(missing)}
    found = metadata_table(table, str(request.body["kind"]), _version(table, request.body))
    return found if found is not None else {"missing": f"no metadata table {request.body['kind']!r}"}


def _procedure(request: _Request) -> dict[str, Any]:
    name = str(request.body["name"])
    found = procedures.spec(name)
    if found is None:
        return {"missing": f"there is no procedure {name!r}; the procedures: {sorted(procedures.PROCEDURES)}"}
    return found


def _call(request: _Request) -> dict[str, Any]:
    return procedures.run(request.spark, request.catalog, str(request.body["name"]), request.body["arguments"])


def _alter(request: _Request) -> dict[str, Any]:
    table = request.catalog.table(request.body["table"])
    changes = list(request.body["changes"])
    for change in changes:
        _check_change(table, change)
    added = [StructField(c["name"], _spark_type(c["type"]), True) for c in changes if c["kind"] == "addColumn"]
    if added:
        table.add_columns(StructType(added))
    for change in changes:
        if change["kind"] == "widenColumn":
            table.widen_column(change["name"], _spark_type(change["type"]))
        elif change["kind"] == "dropColumn" and change["name"] in table.schema.names:
            table.drop_column(change["name"])
    set_ = {c["key"]: c["value"] for c in changes if c["kind"] == "setProperty"}
    unset = tuple(c["key"] for c in changes if c["kind"] == "removeProperty")
    if set_ or unset:
        table.set_properties(set_, unset)
    for change in changes:
        if change["kind"] == "clusterBy":  # ALTER TABLE ... CLUSTER BY (a, b) / CLUSTER BY NONE
            table.set_clustering(list(change["columns"]))
    return _described(request.spark, table, None, pinned=False)


def _check_change(table: Table, change: Mapping[str, Any]) -> None:
    """Refuses, before anything is committed, a change a sleeper table cannot make, saying what to do."""
    kind = change["kind"]
    if kind not in ("addColumn", "widenColumn", "dropColumn", "setProperty", "removeProperty", "clusterBy"):
        raise ConfigError(f"table {table.name!r}: ALTER TABLE ... {kind} is not supported for sleeper tables; they "
                          "take ADD COLUMNS, ALTER COLUMN ... TYPE (a widening), DROP COLUMN, SET/UNSET "
                          "TBLPROPERTIES and CLUSTER BY; nothing was changed")
    if kind == "clusterBy":
        state = table.state()
        check_clustering(table.name, state.schema, state.partition_by, list(change["columns"]))
        return
    if change.get("nested"):
        raise ConfigError(f"table {table.name!r}: {change['name']!r} is a nested field; sleeper tables change "
                          "top-level columns only; nothing was changed")
    if kind == "addColumn" and (not change["nullable"] or change.get("positioned") or change.get("hasDefault")):
        raise ConfigError(f"table {table.name!r}: a column is added as a nullable column at the end, with no "
                          f"default (older files read it as null); {change['name']!r} asks for more; nothing was "
                          "changed")
    if kind == "dropColumn" and change["name"] not in table.schema.names and not change.get("ifExists"):
        raise SchemaMismatchError(f"table {table.name!r} has no column {change['name']!r}; its columns: "
                                  f"{table.schema.names}; nothing was changed")


def _spark_type(text: str) -> Any:
    return _parse_type(json.loads(text))


def _drop(request: _Request) -> dict[str, Any]:
    try:
        request.catalog.drop_table(request.body["table"], purge=bool(request.body.get("purge")))
    except TableNotFoundError:
        return {"dropped": False}
    return {"dropped": True}


def _changelog(request: _Request) -> dict[str, Any]:
    try:
        table = request.catalog.table(request.body["table"])
    except TableNotFoundError as missing:
        return {"missing": str(missing)}
    return describe_changelog(table, request.body)


def _on_namespaces(operation: sql_namespaces.NamespaceRequest) -> Callable[[_Request], dict[str, Any]]:
    return lambda request: operation(request.catalog, request.body)


_OPERATIONS: dict[str, Callable[[_Request], dict[str, Any]]] = {
    "load": _load, "changelog": _changelog,
    "list": _list, "create": _create, "alter": _alter, "drop": _drop,
    "metadata": _metadata, "procedure": _procedure, "call": _call, "stage": _stage,
    "adopt": _adopt,
    **{op: _on_namespaces(operation) for op, operation in sql_namespaces.OPERATIONS.items()},
}

