"""The files table's rows from the facts Spark's executors report about the files they wrote.

Each file of a helper's native write is written by the jar's ``FactsOutputWriter``, which counts
its rows, keeps each column's null count, min and max as the rows go by, and takes the file's size
and SHA-256 from its bytes as Spark's Parquet writer hands them to the file system (reading the
closed file back, in the same task, only where the file system cannot be wrapped). The facts
reach the driver through an accumulator (Spark applies the updates of each successful task
once), one JSON object a file::

    {"name": "part-….parquet", "dir": "__sleeper_partition=…" or "", "rows": 10,
     "size": 1234 or null, "sha256": "…" or null,
     "columns": {"c": {"nulls": 0, "min": "<text>" or null, "max": "<text>" or null}, …}}

The lines are parsed by Arrow's JSON reader into one table, and bounds come as text (see the
jar's ``ColumnFacts``), which is turned here, column by column, into the values the Python
writer's :class:`~sleeper_spark.datafiles.stats.StatsAccumulator` would have computed, so that
statistics mean the same whichever writer made a file. No Python object is made per file, but
for the partition values. A file reported without size and checksum (its file system could not
be wrapped, and the task could not read it back either, as under a committer that publishes
files only when the job commits) is the exception the driver reads itself.
"""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pa_json

from sleeper_spark.datafiles.stats import partition_value_to_string
from sleeper_spark.errors import SchemaMismatchError
from sleeper_spark.models import DataType, TableSchema
from sleeper_spark.models.stat_values import from_stat, to_stat
from sleeper_spark.state.file_columns import ORDERABLE, PATH_HASH, FileLayout, path_hash, typed_array
from sleeper_spark.storage.arrow_buffers import arrow_reader

_INTEGERS = frozenset({"int8", "int16", "int32", "int64"})
_BOUNDS = pa.struct([("nulls", pa.int64()), ("min", pa.string()), ("max", pa.string())])


def facts_table(lines: str, write_dir: str, schema: TableSchema) -> pa.Table:
    """The facts of a write whose files are under ``write_dir`` (relative to the table root), one
    row per file: ``path``, ``rows``, ``size``, ``sha256`` and a ``columns`` struct of each column's
    ``nulls``, ``min`` and ``max`` (text)."""
    reported = pa.schema([("name", pa.string()), ("dir", pa.string()), ("rows", pa.int64()), ("size", pa.int64()),
                          ("sha256", pa.string()),
                          ("columns", pa.struct([(field.name, _BOUNDS) for field in schema.fields]))])
    data = lines.encode()
    if not data.strip():
        table = reported.empty_table()
    else:
        # One block for all: a block must hold whole lines, and a string bound has no size limit.
        table = pa_json.read_json(arrow_reader(data), read_options=pa_json.ReadOptions(block_size=len(data) + 1),
                                  parse_options=pa_json.ParseOptions(explicit_schema=reported))
    folder = pc.if_else(pc.equal(table.column("dir"), ""), pa.scalar(write_dir),
                        pc.binary_join_element_wise(write_dir, table.column("dir"), "/"))
    path = pc.binary_join_element_wise(folder, table.column("name"), "/")
    return table.drop_columns(["name", "dir"]).add_column(0, "path", path)


def described_rows(facts: pa.Table, layout: FileLayout, table: str) -> tuple[pa.RecordBatch, dict[str, pa.Array]]:
    """The rows of the files table (``added_version`` null) for ``facts`` of files their tasks
    described fully (size and checksum known); and, by column name, the bounds the rows hold
    less exactly than a FileRef does (a timestamp column of seconds or milliseconds: FileRefs
    keep the microseconds reported), as microseconds, for :func:`~sleeper_spark.state.file_json.files_json`."""
    facts = facts.combine_chunks()
    count = facts.num_rows
    columns: dict[str, Any] = {
        PATH_HASH: pa.array([path_hash(p) for p in facts.column("path").to_pylist()], pa.uint64()),
        "path": facts.column("path"), "size_bytes": facts.column("size"), "row_count": facts.column("rows"),
        "checksum": pc.binary_join_element_wise("sha256:", facts.column("sha256"), ""),
        "added_version": pa.nulls(count, pa.int64()),
    }
    reported = facts.column("columns")
    arrow_schema = layout.arrow
    finer: dict[str, pa.Array] = {}
    for field in layout.schema.fields:
        bounds = pc.struct_field(reported, [layout.schema.names.index(field.name)])
        if bounds.null_count:
            raise ValueError(f"the facts of a file lack column {field.name!r}")
        nulls = pc.struct_field(bounds, [0])
        if not field.nullable and pc.max(nulls).as_py():
            raise SchemaMismatchError(
                f"column {field.name!r} of table {table!r} is not nullable, but the data holds nulls; "
                "nothing was written"
            )
        columns[f"null_count.{field.name}"] = nulls
        if field.type.name in ORDERABLE:
            arrow_type = arrow_schema.field(f"min.{field.name}").type
            for side, index in (("min", 1), ("max", 2)):
                columns[f"{side}.{field.name}"] = _bound(pc.struct_field(bounds, [index]), field.type, arrow_type)
                if field.type.name == "timestamp" and field.type.unit in ("s", "ms"):
                    finer[f"{side}.{field.name}"] = _bound(pc.struct_field(bounds, [index]), field.type,
                                                           pa.timestamp("us", field.type.tz))
    for name in layout.partition_by:
        field = layout.schema.field(name)
        bounds = pc.struct_field(reported, [layout.schema.names.index(name)])
        columns[f"partition.{name}"] = _partition_values(bounds, facts.column("rows"), field.type, name)
    arrays = [pa.array(columns[f.name], f.type) if not isinstance(columns[f.name], (pa.Array, pa.ChunkedArray))
              else columns[f.name] for f in arrow_schema]
    arrays = [a.combine_chunks() if isinstance(a, pa.ChunkedArray) else a for a in arrays]
    return pa.RecordBatch.from_arrays(arrays, schema=arrow_schema), finer


def _bound(text: pa.Array, type_: DataType, arrow_type: pa.DataType) -> pa.Array:
    """Bounds reported as text as a column of the files table (``arrow_type``), holding what
    ``from_stat`` makes of the stored form :func:`_stored_form` gives, value by value."""
    name = type_.name
    try:
        if name == "bool":
            return pc.equal(text, "true")
        if name in _INTEGERS or name == "string":
            return pc.cast(text, arrow_type)
        if name in ("float32", "float64"):
            # A float32 bound is reported as the double it is exactly: narrowing it loses nothing.
            return pc.cast(pc.cast(text, pa.float64()), arrow_type, safe=False)
        if name == "date":
            return pc.cast(pc.cast(text, pa.int32()), arrow_type)
        if name == "timestamp":  # microseconds, whatever the column's unit
            return pc.cast(pc.cast(pc.cast(text, pa.int64()), pa.timestamp("us", type_.tz)), arrow_type)
        if name == "decimal":
            return pc.cast(text, arrow_type)
    except (pa.ArrowException, ValueError):
        pass  # a bound Arrow will not convert exactly: value by value, as the stored form says
    stored = _stored_form(type_)
    values = [None if t is None else from_stat(stored(t), type_) for t in text.to_pylist()]
    return typed_array(values, arrow_type)


def _stored_form(type_: DataType) -> Callable[[str], Any]:
    """How a bound reported as text becomes its stored form (see :func:`to_stat`) for ``type_``:
    the value pyarrow would give for the column's type, in ``to_stat``'s form."""
    name = type_.name
    if name == "bool":
        return lambda text: text == "true"
    if name in _INTEGERS:
        return int
    if name in ("float32", "float64"):
        return float
    if name == "string":
        return str
    if name == "date":
        return lambda text: to_stat(pa.scalar(int(text), pa.date32()).as_py())
    if name == "timestamp":  # microseconds, whatever the column's unit
        unit = pa.timestamp("us", tz=type_.tz)
        return lambda text: to_stat(pa.scalar(int(text), unit).as_py())
    if name == "decimal":
        return lambda text: to_stat(Decimal(text))
    return lambda text: None


def _partition_values(bounds: pa.StructArray, rows: pa.Array, type_: DataType, column: str) -> pa.Array:
    """The one value each file of one partition holds in ``column``, as FileRef.partition records it."""
    stored = _stored_form(type_)
    values: list[str | None] = []
    reported = [pc.struct_field(bounds, [i]).to_pylist() for i in range(3)]
    for nulls, low, high, count in zip(*reported, rows.to_pylist(), strict=True):
        if nulls == count:
            values.append(None)
            continue
        least = None if low is None else stored(low)
        if nulls or least is None or least != (None if high is None else stored(high)):
            raise SchemaMismatchError(f"a file Spark wrote for one partition holds several values of {column!r}")
        # The stored form of a statistic (an ISO string for a date) prints as the partition value does.
        values.append(partition_value_to_string(least))
    return pa.array(values, pa.string())
