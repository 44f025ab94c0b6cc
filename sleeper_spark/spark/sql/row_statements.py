"""``MERGE INTO``, ``UPDATE`` and ``DELETE FROM`` on a SQL catalog's table, run by the Python builders.

The jar's session extension (``sleeper.spark.SleeperExtensions``) hands each such statement, once
Spark has resolved it, to this module through the bridge's ``changeRows``: the request names the
table and carries the statement's conditions and values as Spark SQL over the builders' names
(``target.<column>`` and ``source.<column>`` in a merge, bare columns in an update or delete),
and a merge's source rows come as a DataFrame. Each statement then runs exactly as
``t.merge(...).when_...().execute()``, ``t.update`` and ``t.delete_where`` do: the same file
pruning, isolation check, cardinality rule and ``operation_metrics``.

The answer is one row of counts, with the columns Delta's statements answer
(``num_affected_rows`` and, for a merge, updated, deleted and inserted rows).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sleeper_spark.errors import ConfigError
from sleeper_spark.models import Snapshot
from sleeper_spark.spark.common.options import open_catalog
from sleeper_spark.spark.rows.row_changes import delete_rows
from sleeper_spark.table import Table

_MERGE_COUNTS = ("num_affected_rows", "num_updated_rows", "num_deleted_rows", "num_inserted_rows")


def answer(spark: Any, request: Mapping[str, Any], source: Any) -> dict[str, Any]:
    """Runs one statement (see the module doc); its counts as rows of a procedure's answer."""
    table = open_catalog(request["options"]).table(str(request["table"]))
    op = request.get("op")
    if op == "merge":
        snapshot = _merge(table, source, request)
        metrics = snapshot.operation_metrics
        counts = [metrics.get("rows_updated", 0), metrics.get("rows_deleted", 0), metrics.get("rows_inserted", 0)]
        return _rows(_MERGE_COUNTS, [sum(counts), *counts])
    if op == "update":
        snapshot = table.update(spark, dict(request["values"]), request.get("condition"))
        return _rows(_MERGE_COUNTS[:1], [snapshot.operation_metrics.get("rows_updated", 0)])
    if op == "delete":
        condition = request.get("condition")
        snapshot = delete_rows(table, spark, condition if condition is not None else "true")
        return _rows(_MERGE_COUNTS[:1], [snapshot.operation_metrics.get("rows_deleted", 0)])
    raise ConfigError(f"the SQL catalog asked for a row change {op!r}, which this version of sleeper_spark does "
                      "not know: the jar and the Python package must be the same version")


def _merge(table: Table, source: Any, request: Mapping[str, Any]) -> Snapshot:
    builder = table.merge(source, str(request["condition"]))
    for clause in _clauses(request, "matched"):
        if clause["kind"] == "update":
            builder.when_matched_update(clause["values"], clause.get("condition"))
        else:
            builder.when_matched_delete(clause.get("condition"))
    for clause in _clauses(request, "notMatched"):
        builder.when_not_matched_insert(clause["values"], clause.get("condition"))
    for clause in _clauses(request, "notMatchedBySource"):
        if clause["kind"] == "update":
            builder.when_not_matched_by_source_update(clause["values"], clause.get("condition"))
        else:
            builder.when_not_matched_by_source_delete(clause.get("condition"))
    snapshot: Snapshot = builder.execute()
    return snapshot


def _clauses(request: Mapping[str, Any], kind: str) -> Sequence[Mapping[str, Any]]:
    return list(request.get(kind) or [])


def _rows(columns: Sequence[str], values: Sequence[int]) -> dict[str, Any]:
    from pyspark.sql.types import LongType, StructField, StructType

    schema = StructType([StructField(name, LongType(), False) for name in columns])
    return {"schema": schema.json(), "rows": [list(values)]}
