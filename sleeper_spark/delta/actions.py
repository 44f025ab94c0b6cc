"""What one sleeper version is in Delta's log: its actions, built from the table states alone.

Delta version ``v`` is sleeper version ``v``. Version 0 holds the protocol and the first
metadata (the empty table as created); version 1, the creation, a ``commitInfo`` only; every
later version the ``add`` and ``remove`` actions of the files it changed, a ``metaData`` action
when it changed the schema or the properties, a ``protocol`` action when the schema needs a
newer one, and a ``commitInfo`` naming the sleeper operation and version. No data file is read:
paths, sizes, partition values and statistics are in the files table.

Everything is a function of the states, never of the clock, so two processes publishing one
version write the same bytes.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

import pyarrow as pa
import pyarrow.compute as pc

from sleeper_spark.delta.schema import protocol, schema_string
from sleeper_spark.delta.stats import StatsEncoder
from sleeper_spark.errors import DeltaPublishError
from sleeper_spark.models import TableSchema
from sleeper_spark.state import TableState

Action = dict[str, Any]
# commitInfo keys: the sleeper operation and version a Delta version is.
SLEEPER_OPERATION = "sleeper.operation"
SLEEPER_VERSION = "sleeper.version"
# The metaData configuration key naming the sleeper table: a _delta_log without it is not ours.
SLEEPER_TABLE_ID = "sleeper.tableId"
# Operations that move rows between files without changing them: Delta's dataChange=false, so
# that Delta streaming readers do not deliver their rows again.
_REARRANGING = frozenset({"compact"})
# Characters a Delta path (a relative URI) keeps as they are; every other one is %-escaped.
_PATH_SAFE = "/=-_.~!$&'()*+,;:@"


def version_lines(actions: list[Action]) -> bytes:
    """A Delta commit file: one JSON action a line."""
    return "".join(json.dumps(a, separators=(",", ":"), ensure_ascii=False) + "\n" for a in actions).encode()


def created(state: TableState, created_at: dt.datetime) -> list[Action]:
    """Delta version 0: the protocol and the metadata of the table as created."""
    return [{"protocol": protocol(state.schema)}, {"metaData": metadata(state, created_at)}]


def metadata(state: TableState, created_at: dt.datetime) -> Action:
    configuration = {key: value for key, value in state.properties.items() if not key.startswith("delta.")}
    configuration[SLEEPER_TABLE_ID] = state.table_id
    return {"id": _uuid(state.table_id), "name": state.name, "format": {"provider": "parquet", "options": {}},
            "schemaString": schema_string(state.schema), "partitionColumns": list(state.partition_by),
            "configuration": dict(sorted(configuration.items())), "createdTime": _millis(created_at)}


def version(previous: TableState, state: TableState, created_at: dt.datetime) -> list[Action]:
    """The actions of sleeper version ``state.version`` (``previous.version + 1``); ``created_at``:
    when the table was created (the time of version 1, which has no snapshot of its own)."""
    latest = state.latest
    actions: list[Action] = []
    if latest is None or latest.version != state.version:
        return [_commit_info(state.version, "create", created_at, previous.version)]
    actions.append(_commit_info(state.version, latest.operation, latest.committed_at, previous.version))
    if protocol(state.schema) != protocol(previous.schema):
        actions.append({"protocol": protocol(state.schema)})
    if (state.schema, dict(state.properties), state.partition_by) != \
            (previous.schema, dict(previous.properties), previous.partition_by):
        actions.append({"metaData": metadata(state, created_at)})
    at = _millis(latest.committed_at)
    data_change = latest.operation not in _REARRANGING
    new_rows = state.files.table()
    if latest.files_removed:
        old_rows = previous.files.table()
        removed = old_rows.filter(pc.invert(pc.is_in(old_rows.column("path"), value_set=new_rows.column("path"))))
        added = new_rows.filter(pc.invert(pc.is_in(new_rows.column("path"), value_set=old_rows.column("path"))))
        actions.extend(removes(previous, removed, at, data_change))
    else:
        added = new_rows.filter(pc.equal(new_rows.column("added_version"), state.version))
    actions.extend(adds(state, added, {state.version: at}, data_change))
    return actions


def adds(state: TableState, rows: pa.Table, added_at: Mapping[int, int], data_change: bool = True) -> list[Action]:
    """``add`` actions for rows of ``state``'s files table; ``added_at`` maps versions to their
    commit times (a file's ``modificationTime``: that of the version that added it, or 0)."""
    encoder = StatsEncoder(state.schema, state.partition_by)
    values = _PartitionValues(state.schema, state.partition_by)
    return [{"add": {"path": delta_path(ref.path), "partitionValues": values.of(ref.partition), "size": ref.size_bytes,
                     "modificationTime": added_at.get(added, 0), "dataChange": data_change,
                     "stats": encoder.stats(ref.column_stats, ref.row_count)}}
            for ref, added in zip(state.layout.file_refs(_conformed(state, rows)),
                                  rows.column("added_version").to_pylist(), strict=True)]


def removes(state: TableState, rows: pa.Table, at: int, data_change: bool = True) -> list[Action]:
    values = _PartitionValues(state.schema, state.partition_by)
    return [{"remove": {"path": delta_path(ref.path), "deletionTimestamp": at, "dataChange": data_change,
                        "extendedFileMetadata": True, "partitionValues": values.of(ref.partition),
                        "size": ref.size_bytes}}
            for ref in state.layout.file_refs(_conformed(state, rows))]


def commit_times(state: TableState) -> dict[int, int]:
    """Each version the state's history holds, with its commit time in milliseconds."""
    history = state.history.table()
    times = pc.divide(history.column("committed_at").cast(pa.int64()), 1000).to_pylist()
    return dict(zip(history.column("version").to_pylist(), times, strict=True))


def _commit_info(number: int, operation: str, at: dt.datetime, read_version: int) -> Action:
    return {"commitInfo": {"timestamp": _millis(at), "operation": operation.upper(), "operationParameters": {},
                           "readVersion": read_version, "isBlindAppend": operation == "append",
                           SLEEPER_OPERATION: operation, SLEEPER_VERSION: number, "engineInfo": "sleeper-spark"}}


def _conformed(state: TableState, rows: pa.Table) -> pa.Table:
    # Rows of an older state (removed files) may lack a column added since: conform them.
    batches = [state.layout.conformed(batch) for batch in rows.to_batches()]
    return pa.Table.from_batches(batches, schema=state.layout.arrow) if batches else rows


def delta_path(path: str) -> str:
    """A file's path as Delta actions name it: relative to the table root, as a URI (%-escaped)."""
    return quote(path, safe=_PATH_SAFE)


def _millis(at: dt.datetime) -> int:
    return (at - dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)) // dt.timedelta(milliseconds=1)


def _uuid(table_id: str) -> str:
    """Delta's metadata id is a UUID string; a table id of 32 hex digits is written as one."""
    if len(table_id) == 32 and all(c in "0123456789abcdef" for c in table_id):
        return f"{table_id[:8]}-{table_id[8:12]}-{table_id[12:16]}-{table_id[16:20]}-{table_id[20:]}"
    return table_id


class _PartitionValues:
    """A file's partition values as Delta writes them: text, null for null, timestamps in Delta's form."""

    def __init__(self, schema: TableSchema, partition_by: tuple[str, ...]) -> None:
        self._timestamps = {name: schema.field(name).type.tz is not None for name in partition_by
                            if schema.field(name).type.name == "timestamp"}
        self._names = partition_by

    def of(self, partition: Mapping[str, str | None]) -> dict[str, str | None]:
        values: dict[str, str | None] = {}
        for name in self._names:
            value = partition.get(name)
            if value is not None and name in self._timestamps:
                value = _timestamp_text(value, aware=self._timestamps[name], column=name)
            values[name] = value
        return values


def _timestamp_text(text: str, aware: bool, column: str) -> str:
    try:
        moment = dt.datetime.fromisoformat(text)
    except ValueError:
        raise DeltaPublishError(f"partition column {column!r}: {text!r} does not read as a timestamp; the table "
                                "cannot be published as Delta") from None
    if aware:  # Delta's form of an instant: ISO 8601 in UTC
        return moment.astimezone(dt.timezone.utc).replace(tzinfo=None).isoformat(timespec="microseconds") + "Z"
    return moment.isoformat(sep=" ", timespec="microseconds")

