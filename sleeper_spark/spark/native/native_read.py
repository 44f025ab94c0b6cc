"""Reads a table version with Spark's own Parquet reader, the log standing in for a file listing.

The live files and their statistics come from :func:`files_for` as one Arrow table (the hand-over
format below); it is written to a temporary Arrow IPC stream that the JVM reads into its file
index (``sleeper.spark.index.SleeperFileIndex``) in one call. Arrow keeps the hand-over columnar and
typed, so the JVM parses nothing: 100,000 files go across in well under a second.

Hand-over columns, one row per file: ``path`` (relative to the table root), ``size``, ``mtime``
(milliseconds), ``rows``; ``part:<column>`` per partition column (the value as the log stores it,
a string or null); ``min:<column>`` / ``max:<column>`` (the column's type; timestamps in
microseconds) and ``nulls:<column>`` per column with statistics. A null statistic is unknown.
"""

from __future__ import annotations

import logging
import os
import tempfile
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from sleeper_spark.models import TableSchema
from sleeper_spark.spark.common.jvm import hadoop_location, native_entry

if TYPE_CHECKING:
    from sleeper_spark.table import Table

log = logging.getLogger(__name__)

# Column types whose statistics both sides order the same way (binary and nested ones have none).
_STAT_TYPES = frozenset({"bool", "int8", "int16", "int32", "int64", "float32", "float64", "string", "date",
                         "timestamp", "decimal"})



@dataclass(frozen=True)
class HandOver:
    """A version's files written for the JVM, and what the JVM needs besides to read them.

    ``manifest`` is a temporary file that whoever passes this to the JVM deletes afterwards.
    """

    description: str
    root: str
    manifest: str
    schema_json: str  # the table's columns as Spark's schema JSON
    partition_by: tuple[str, ...]


def read_native(table: Table, spark: Any, version: int | None) -> Any | None:
    """The table at ``version`` (None: now) as a DataFrame over Spark's Parquet reader, or None
    when this session cannot take the native path (the caller then uses the Python source)."""
    entry = native_entry(spark)
    if entry is None:
        return None
    files = hand_over(table, spark, entry, version)
    if files is None:
        return None
    try:
        jdf = open_data_frame(spark, entry, files)
    except Exception as error:  # e.g. a Spark build whose internals differ from the one the jar was built on
        log.warning("table %s: Spark's Parquet reader could not be set up (%s); reading through the Python "
                    "data source", table.name, str(error).splitlines()[0])
        return None
    from pyspark.sql import DataFrame

    return DataFrame(jdf, spark)


def hand_over(table: Table, spark: Any, entry: Any, version: int | None) -> HandOver | None:
    """The files of ``table`` at ``version`` (None: now) written for the JVM, or None when Spark's
    reader cannot read this table in this session (nanosecond timestamps, no file system for its
    location)."""
    state = table.state(version)
    root = native_root(table, spark, entry, state.schema)
    if root is None:
        return None
    started = time.perf_counter()
    files = files_for(table, state.version)
    manifest = write_manifest(files)
    log.debug("table %s version %d: %d files handed over in %.3f s", table.name, state.version, files.num_rows,
              time.perf_counter() - started)
    from sleeper_spark.spark.common.conversions import spark_schema

    return HandOver(description=f"sleeper:{table.name}@{state.version}", root=root.rstrip("/"), manifest=manifest,
                    schema_json=spark_schema(state.schema, guarded=False).json(), partition_by=state.partition_by)


def native_root(table: Table, spark: Any, entry: Any, schema: TableSchema) -> str | None:
    """The table's location as Spark's Hadoop names it, or None when Spark's reader cannot read it here."""
    if not native_types(schema):
        log.info("table %s has nanosecond timestamps, which Spark's Parquet reader cannot read: "
                 "reading through the Python data source", table.name)
        return None
    return hadoop_location(spark, entry, table.location, table.catalog.config.s3_endpoint)


def native_types(schema: TableSchema) -> bool:
    """Whether Spark's Parquet reader reads every column (it refuses nanosecond timestamps)."""
    return not any(t.name == "timestamp" and t.unit == "ns" for f in schema.fields for t in f.type.nested())


def files_for(table: Table, version: int) -> pa.Table:
    """The live files of ``version`` and their statistics, in the hand-over format.

    The one place that gets them from the table state: the state's files table, its columns
    renamed and cast, so no per-file Python object is made whatever the number of files.
    """
    state = table.state(version)
    return hand_over_columns(table.files_table(version), state.schema, state.partition_by)


def hand_over_columns(files: pa.Table, schema: TableSchema, partition_by: tuple[str, ...]) -> pa.Table:
    """A files table (see ``Table.files_table``) in the hand-over format."""
    columns: dict[str, pa.ChunkedArray | pa.Array] = {
        "path": files["path"],
        "size": files["size_bytes"].cast(pa.int64()),
        "mtime": pa.repeat(pa.scalar(0, pa.int64()), files.num_rows),
        "rows": files["row_count"].cast(pa.int64()),
    }
    for name in partition_by:
        columns[f"part:{name}"] = files[f"partition.{name}"].cast(pa.string())
    arrow_schema = schema.to_arrow()
    present = set(files.column_names)  # each call of column_names builds a list of them all
    for field in schema.fields:
        nulls = f"null_count.{field.name}"
        columns[f"nulls:{field.name}"] = (files[nulls].cast(pa.int64()) if nulls in present
                                          else pa.nulls(files.num_rows, pa.int64()))
        if field.type.name not in _STAT_TYPES:
            continue
        arrow_type = arrow_schema.field(field.name).type
        for bound in ("min", "max"):
            name = f"{bound}.{field.name}"
            values = files[name] if name in present else pa.nulls(files.num_rows, arrow_type)
            columns[f"{bound}:{field.name}"] = values.cast(arrow_type).cast(_stat_type(arrow_type))
    return pa.table(columns)


def _stat_type(type_: pa.DataType) -> pa.DataType:
    """The type the JVM reads a statistic as: timestamps in microseconds, the rest as they are."""
    if pa.types.is_timestamp(type_):
        return pa.timestamp("us", tz=type_.tz)
    return type_


def data_frame(spark: Any, entry: Any, description: str, root: str, files: pa.Table, schema: TableSchema,
                partition_by: tuple[str, ...]) -> Any:
    """The JVM's DataFrame (py4j) over the files in ``files`` (the hand-over format)."""
    from sleeper_spark.spark.common.conversions import spark_schema

    return open_data_frame(spark, entry, HandOver(
        description=description, root=root.rstrip("/"), manifest=write_manifest(files),
        schema_json=spark_schema(schema, guarded=False).json(), partition_by=partition_by))


def open_data_frame(spark: Any, entry: Any, files: HandOver) -> Any:
    """The JVM's DataFrame (py4j) over a hand-over; its manifest is deleted once the JVM has read it."""
    try:
        return entry.dataFrame(spark._jsparkSession, files.description, files.root, files.manifest,
                               files.schema_json, _string_array(spark, files.partition_by))
    finally:
        os.unlink(files.manifest)


def write_manifest(files: pa.Table) -> str:
    """``files`` as an Arrow IPC stream of one batch in a new temporary file; returns its path."""
    handle, manifest = tempfile.mkstemp(prefix="sleeper-files-", suffix=".arrows")
    try:
        with os.fdopen(handle, "wb") as sink, pa.ipc.new_stream(sink, files.schema) as writer:
            if files.num_rows:
                writer.write_batch(files.combine_chunks().to_batches()[0])  # the JVM reads one batch
    except BaseException:
        os.unlink(manifest)
        raise
    return manifest


def _string_array(spark: Any, values: tuple[str, ...]) -> Any:
    gateway = spark.sparkContext._gateway
    array = gateway.new_array(gateway.jvm.java.lang.String, len(values))
    for i, value in enumerate(values):
        array[i] = value
    return array
