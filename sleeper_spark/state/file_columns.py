"""The live files of a state as Arrow columns, and FileRefs to and from rows.

One row per live file. Columns, in this order:

==========================  ==================  ===================================================
``path_hash``               uint64              first 8 bytes of BLAKE2b(path), little-endian: finds
                                                a path without hashing every string (internal; not
                                                part of :meth:`Table.files_table`)
``path``                    string              relative to the table root
``size_bytes``              int64
``row_count``               int64
``checksum``                string              ``"<algo>:<hex>"``
``added_version``           int64, nullable     the version (transaction number) that added the file;
                                                null if unknown (read from a format-1 state snapshot)
``partition.<column>``      string, nullable    one per partition column, the value as in the path
``min.<column>``            the column's type   one per orderable column (bool, integers, floats,
``max.<column>``            the column's type   string, date, timestamp, decimal); null = unknown
``null_count.<column>``     int64, nullable     one per column; null = the file has no statistics
                                                for that column
==========================  ==================  ===================================================

A statistic that cannot be held in its column's type (a stat written by some other tool in
another form) is kept as null, i.e. unknown, which only makes pruning read more.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from sleeper_spark.models import FileRef, TableSchema
from sleeper_spark.models.stat_values import from_stat, to_stat

PATH_HASH = "path_hash"
_FIXED = pa.schema([
    (PATH_HASH, pa.uint64()), ("path", pa.string()), ("size_bytes", pa.int64()), ("row_count", pa.int64()),
    ("checksum", pa.string()), ("added_version", pa.int64()),
])
EVENT_TIME = pa.timestamp("us", "UTC")
ORDERABLE = frozenset({"bool", "int8", "int16", "int32", "int64", "float32", "float64", "string", "date",
                       "timestamp", "decimal"})
_CONVERTED = frozenset({"date", "timestamp", "decimal"})  # stored as text, read back with from_stat


def path_hash(path: str) -> int:
    return int.from_bytes(hashlib.blake2b(path.encode("utf-8", "surrogatepass"), digest_size=8).digest(), "little")


@dataclass(frozen=True)
class FileLayout:
    """Which columns the files table of a table with this schema and partitioning has."""

    schema: TableSchema
    partition_by: tuple[str, ...]

    @cached_property
    def arrow(self) -> pa.Schema:
        arrow_schema = self.schema.to_arrow()
        fields = list(_FIXED)
        fields += [pa.field(f"partition.{name}", pa.string()) for name in self.partition_by]
        ordered = [f for f in self.schema.fields if f.type.name in ORDERABLE]
        fields += [pa.field(f"min.{f.name}", arrow_schema.field(f.name).type) for f in ordered]
        fields += [pa.field(f"max.{f.name}", arrow_schema.field(f.name).type) for f in ordered]
        fields += [pa.field(f"null_count.{f.name}", pa.int64()) for f in self.schema.fields]
        return pa.schema(fields)

    def batch(self, files: Sequence[FileRef], added_versions: Sequence[int | None]) -> pa.RecordBatch:
        """``files`` as rows, with the version that added each (Python work per file)."""
        schema = self.arrow
        columns: dict[str, Any] = {
            PATH_HASH: pa.array([path_hash(f.path) for f in files], pa.uint64()),
            "path": [f.path for f in files],
            "size_bytes": [f.size_bytes for f in files],
            "row_count": [f.row_count for f in files],
            "checksum": [f.checksum for f in files],
            "added_version": list(added_versions),
        }
        for name in self.partition_by:
            columns[f"partition.{name}"] = [f.partition.get(name) for f in files]
        for field in self.schema.fields:
            stats = [f.column_stats.get(field.name) for f in files]
            if field.type.name in ORDERABLE:
                arrow_type = schema.field(f"min.{field.name}").type
                # Booleans, numbers and strings are stored as themselves: no conversion per value.
                stored_as_is = field.type.name not in _CONVERTED
                columns[f"min.{field.name}"] = typed_array(
                    [(s.min if stored_as_is else from_stat(s.min, field.type)) if s else None for s in stats],
                    arrow_type)
                columns[f"max.{field.name}"] = typed_array(
                    [(s.max if stored_as_is else from_stat(s.max, field.type)) if s else None for s in stats],
                    arrow_type)
            columns[f"null_count.{field.name}"] = [s.null_count if s else None for s in stats]
        arrays = [value if isinstance(value := columns[f.name], pa.Array) else pa.array(value, f.type) for f in schema]
        return pa.RecordBatch.from_arrays(arrays, schema=schema)

    def conformed(self, rows: pa.RecordBatch) -> pa.RecordBatch:
        """``rows`` of a files table in this layout: a column it lacks is null (unknown), one this
        layout lacks goes, one of another type is cast (a widened column)."""
        if rows.schema.equals(self.arrow):
            return rows
        arrays = [rows.column(f.name).cast(f.type) if f.name in rows.schema.names else pa.nulls(rows.num_rows, f.type)
                  for f in self.arrow]
        return pa.RecordBatch.from_arrays(arrays, schema=self.arrow)

    def file_refs(self, rows: pa.Table | pa.RecordBatch) -> list[FileRef]:
        """Rows back as FileRefs (pydantic's validator from plain dicts: quicker than model_construct)."""
        if rows.num_rows == 0:
            return []
        column = {name: rows.column(name).to_pylist() for name in rows.schema.names if name != PATH_HASH}
        stats = [(f.name, column.get(f"min.{f.name}"), column.get(f"max.{f.name}"), column[f"null_count.{f.name}"])
                 for f in self.schema.fields if f"null_count.{f.name}" in column]
        partitions = [(name, column[f"partition.{name}"]) for name in self.partition_by]
        build = FileRef.model_validate
        files = []
        for i, path in enumerate(column["path"]):
            column_stats = {
                name: {"min": to_stat(lows[i]) if lows else None, "max": to_stat(highs[i]) if highs else None,
                       "null_count": nulls[i]}
                for name, lows, highs, nulls in stats if nulls[i] is not None
            }
            files.append(build({
                "path": path, "partition": {name: values[i] for name, values in partitions},
                "size_bytes": column["size_bytes"][i], "row_count": column["row_count"][i],
                "checksum": column["checksum"][i], "column_stats": column_stats,
            }))
        return files


def typed_array(values: list[Any], arrow_type: pa.DataType) -> pa.Array:
    """Values as an array of ``arrow_type``; a value that does not fit becomes null (unknown)."""
    try:
        return pa.array(values, arrow_type)
    except (pa.ArrowException, TypeError, ValueError, OverflowError):
        return pa.array([_fits(v, arrow_type) for v in values], arrow_type)


def _fits(value: Any, arrow_type: pa.DataType) -> Any:
    try:
        pa.array([value], arrow_type)
    except (pa.ArrowException, TypeError, ValueError, OverflowError):
        return None
    return value


def public_view(table: pa.Table) -> pa.Table:
    """The files table without its internal columns (zero-copy)."""
    return table.drop_columns([PATH_HASH]) if PATH_HASH in table.column_names else table


def with_event_time(table: pa.Table, event_time_column: str | None, schema: TableSchema) -> pa.Table:
    """Adds ``min_event_time`` / ``max_event_time``: the event-time column's bounds, as UTC timestamps."""
    bounds = []
    for side in ("min", "max"):
        name = f"{side}.{event_time_column}"
        if event_time_column is not None and name in table.column_names and \
                schema.field(event_time_column).type.name == "timestamp":
            bounds.append(pc.cast(table.column(name), EVENT_TIME, safe=False))  # ns: truncated
        else:
            bounds.append(pa.nulls(table.num_rows, EVENT_TIME))
    return table.append_column("min_event_time", bounds[0]).append_column("max_event_time", bounds[1])

