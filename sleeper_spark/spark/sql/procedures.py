"""The SQL catalog's procedures: ``CALL lake.system.<name>(table => 'db.t', ...)``.

Each is the table operation the Python API and the ``sleeper-spark`` command run, answering
rows: ``compact``, ``vacuum``, ``restore``, ``verify``, ``create_state_snapshot`` and ``truncate_log``. The JVM
asks for a procedure's parameters when Spark binds a ``CALL`` (``spec``), and runs it with the
arguments given (``run``); an argument left out arrives as null and takes the Python API's default.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from pyspark.sql.types import BooleanType, LongType, StringType, StructField, StructType

from sleeper_spark.errors import ConfigError
from sleeper_spark.models import Snapshot
from sleeper_spark.table import Catalog, Table

NAMESPACE = "system"

_SNAPSHOT = StructType([
    StructField("version", LongType()), StructField("operation", StringType()),
    StructField("rows_added", LongType()), StructField("rows_removed", LongType()),
    StructField("files_added", LongType()), StructField("files_removed", LongType()),
])
_VACUUM = StructType([
    StructField("dry_run", BooleanType(), False), StructField("data_files_deleted", LongType(), False),
    StructField("bodies_deleted", LongType(), False), StructField("state_snapshots_deleted", LongType(), False),
    StructField("temporaries_deleted", LongType(), False), StructField("bytes_deleted", LongType(), False),
])
_VERIFY = StructType([
    StructField("version", LongType(), False), StructField("files_checked", LongType(), False),
    StructField("bytes_checked", LongType(), False), StructField("path", StringType()),
    StructField("problem", StringType()), StructField("detail", StringType()),
])
_STATE_SNAPSHOT = StructType([StructField("transaction", LongType(), False)])
_TRUNCATE = StructType([
    StructField("dry_run", BooleanType(), False), StructField("up_to", LongType()),
    StructField("transactions_deleted", LongType(), False), StructField("bodies_deleted", LongType(), False),
    StructField("first_transaction", LongType()),
])


@dataclass(frozen=True)
class Procedure:
    """One procedure: its parameters after ``table`` (name, Spark type name), its result and its work."""

    parameters: tuple[tuple[str, str], ...]
    result: StructType
    run: Callable[[Any, Table, Mapping[str, Any]], list[list[Any]]]
    description: str


def spec(name: str) -> dict[str, Any] | None:
    """``{"parameters": [{"name", "type", "required"}], "description"}`` of a procedure, or None;
    for the name ``""``, ``{"names": [...]}``, every procedure's."""
    if not name:
        return {"names": sorted(PROCEDURES)}
    found = PROCEDURES.get(name)
    if found is None:
        return None
    parameters = [{"name": "table", "type": "string", "required": True}]
    parameters += [{"name": n, "type": t, "required": False} for n, t in found.parameters]
    return {"parameters": parameters, "description": found.description}


def run(spark: Any, catalog: Catalog, name: str, arguments: Mapping[str, Any]) -> dict[str, Any]:
    """Runs procedure ``name`` on the table ``arguments["table"]``: ``{"schema", "rows"}``."""
    found = PROCEDURES.get(name)
    if found is None:
        raise ConfigError(f"there is no procedure {name!r}; the procedures: {sorted(PROCEDURES)}")
    if not arguments.get("table"):
        raise ConfigError(f"CALL ...{name} needs the table: {name}(table => 'db.t')")
    table = catalog.table(str(arguments["table"]))
    return {"schema": found.result.json(), "rows": found.run(spark, table, arguments)}


def _snapshot_row(snapshot: Snapshot | None) -> list[list[Any]]:
    if snapshot is None:
        return [[None, None, 0, 0, 0, 0]]  # nothing to do: no version committed
    return [[snapshot.version, snapshot.operation, snapshot.rows_added, snapshot.rows_removed,
             snapshot.files_added, snapshot.files_removed]]


def _compact(spark: Any, table: Table, args: Mapping[str, Any]) -> list[list[Any]]:
    target = args.get("target_file_bytes")
    snapshot = table.compact(spark, **({"target_file_bytes": int(target)} if target is not None else {}),
                             where=args.get("where"))
    return _snapshot_row(snapshot)


def _vacuum(spark: Any, table: Table, args: Mapping[str, Any]) -> list[list[Any]]:
    hours = args.get("older_than_hours")
    report = table.vacuum(older_than=timedelta(hours=int(hours)) if hours is not None else timedelta(hours=24),
                          dry_run=bool(args.get("dry_run")))
    return [[report.dry_run, report.data_files_deleted, report.bodies_deleted, report.state_snapshots_deleted,
             report.temporaries_deleted, report.bytes_deleted]]


def _restore(spark: Any, table: Table, args: Mapping[str, Any]) -> list[list[Any]]:
    if args.get("version") is None:
        raise ConfigError(f"CALL ...restore needs the version to restore: restore(table => {table.name!r}, "
                          "version => n)")
    return _snapshot_row(table.restore(int(args["version"])))


def _verify(spark: Any, table: Table, args: Mapping[str, Any]) -> list[list[Any]]:
    version = args.get("version")
    report = table.verify(version=int(version) if version is not None else None, deep=bool(args.get("deep")))
    head = [report.version, report.files_checked, report.bytes_checked]
    if not report.problems:
        return [[*head, None, None, None]]
    return [[*head, p.path, p.problem, p.detail] for p in report.problems]


def _state_snapshot(spark: Any, table: Table, args: Mapping[str, Any]) -> list[list[Any]]:
    return [[table.create_state_snapshot()]]


def _truncate_log(spark: Any, table: Table, args: Mapping[str, Any]) -> list[list[Any]]:
    hours, version = args.get("keep_hours"), args.get("keep_version")
    if hours is not None and version is not None:
        raise ConfigError("CALL ...truncate_log keeps a time window (keep_hours) or the versions from one on "
                          "(keep_version), not both")
    keep: timedelta | int = int(version) if version is not None else timedelta(hours=int(hours if hours is not None
                                                                                         else 24))
    margin = args.get("safety_margin")
    report = table.truncate_log(keep, int(margin) if margin is not None else 10, dry_run=bool(args.get("dry_run")))
    return [[report.dry_run, report.up_to, report.transactions_deleted, report.bodies_deleted,
             report.first_transaction]]


PROCEDURES: dict[str, Procedure] = {
    "compact": Procedure((("target_file_bytes", "long"), ("where", "string")), _SNAPSHOT, _compact,
                         "rewrites small files into files of about target_file_bytes (t.compact)"),
    "vacuum": Procedure((("older_than_hours", "long"), ("dry_run", "boolean")), _VACUUM, _vacuum,
                        "deletes files no version in the retention window needs (t.vacuum)"),
    "restore": Procedure((("version", "long"),), _SNAPSHOT, _restore,
                         "commits a version with exactly the files of an earlier one (t.restore)"),
    "verify": Procedure((("version", "long"), ("deep", "boolean")), _VERIFY, _verify,
                        "checks every file of a version: present, size, checksum; deep also statistics (t.verify)"),
    "create_state_snapshot": Procedure(
        (), _STATE_SNAPSHOT, _state_snapshot,
        "writes a state snapshot so that readers replay less log (t.create_state_snapshot)"),
    "truncate_log": Procedure(
        (("keep_hours", "long"), ("keep_version", "long"), ("safety_margin", "long"), ("dry_run", "boolean")),
        _TRUNCATE, _truncate_log,
        "deletes log transactions a state snapshot covers, outside the time-travel window (t.truncate_log)"),
}
