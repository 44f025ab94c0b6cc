"""The metadata tables of the SQL catalog: ``lake.db.t.history`` and ``lake.db.t.files``.

Spark names them as a table ``history`` or ``files`` in the namespace ``db.t``; the catalog asks
for them only when no table has that name. Each is a small local table: its Spark schema and its
rows as JSON values, which the JVM turns into Spark's rows (timestamps as microseconds since the
epoch, maps as JSON objects). Time travel (``VERSION AS OF``) selects the version they describe.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from pyspark.sql.types import (
    LongType,
    MapType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from sleeper_spark.models import FileRef, Snapshot
from sleeper_spark.models.files import StatValue
from sleeper_spark.table import Table

_STRINGS = MapType(StringType(), StringType())
_COUNTS = MapType(StringType(), LongType())
_STATS = MapType(StringType(), StructType([StructField("min", StringType()), StructField("max", StringType()),
                                          StructField("null_count", LongType())]))

HISTORY = StructType([
    StructField("version", LongType(), False), StructField("committed_at", TimestampType(), False),
    StructField("operation", StringType(), False), StructField("snapshot_id", StringType(), False),
    StructField("parent_id", StringType()), StructField("rows_added", LongType(), False),
    StructField("rows_removed", LongType(), False), StructField("files_added", LongType(), False),
    StructField("files_removed", LongType(), False), StructField("bytes_added", LongType(), False),
    StructField("app_id", StringType()), StructField("app_version", LongType()),
    StructField("metadata", _STRINGS, False), StructField("operation_metrics", _COUNTS, False),
    StructField("members", StringType()),  # a JSON list of the appends a group commit holds; null for one writer
])

FILES = StructType([
    StructField("path", StringType(), False), StructField("partition", _STRINGS, False),
    StructField("row_count", LongType(), False), StructField("size_bytes", LongType(), False),
    StructField("checksum", StringType(), False), StructField("column_stats", _STATS, False),
])


def metadata_table(table: Table, kind: str, version: int | None) -> dict[str, Any] | None:
    """``{"schema", "rows"}`` of the metadata table ``kind`` at ``version`` (None: current), or
    None when ``kind`` names none."""
    found = _KINDS.get(kind)
    if found is None:
        return None
    schema, rows = found
    return {"schema": schema.json(), "rows": rows(table, version)}


def _history(table: Table, version: int | None) -> list[list[Any]]:
    return [_history_row(s) for s in table.history() if version is None or s.version <= version]


def _history_row(s: Snapshot) -> list[Any]:
    members = json.dumps([m.model_dump(mode="json") for m in s.members]) if s.members else None
    micros = int(s.committed_at.timestamp()) * 1_000_000 + s.committed_at.microsecond
    return [s.version, micros, s.operation, s.snapshot_id, s.parent_id, s.rows_added, s.rows_removed,
            s.files_added, s.files_removed, s.bytes_added, s.app_id, s.app_version, dict(s.metadata),
            dict(s.operation_metrics), members]


def _files(table: Table, version: int | None) -> list[list[Any]]:
    return [_file_row(f) for f in table.files(version)]


def _file_row(f: FileRef) -> list[Any]:
    stats = {name: [_text(s.min), _text(s.max), s.null_count] for name, s in f.column_stats.items()}
    return [f.path, dict(f.partition), f.row_count, f.size_bytes, f.checksum, stats]


def _text(value: StatValue) -> str | None:
    """A bound as text, in its stored form (dates and times ISO, decimals exact, bytes base64)."""
    if value is None:
        return None
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


_KINDS: dict[str, tuple[StructType, Callable[[Table, int | None], list[list[Any]]]]] = {
    "history": (HISTORY, _history), "files": (FILES, _files),
}
