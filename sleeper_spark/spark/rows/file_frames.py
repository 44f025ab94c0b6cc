"""Spark DataFrames over chosen data files of a table, and new files staged from DataFrames.

The two halves of a copy-on-write change (``MERGE``, ``UPDATE``): read exactly the files that
may hold affected rows, each row tagged with the name of its file, so that only the files whose
rows change are rewritten; and write the new rows as files that no version holds until the
change commits.

Reading uses the jar's file index where the session has it and Hadoop can open the table's
location (the same reader as ``catalog.read``), else Python workers that read the files through
the table's store, checksums checked (``mapInArrow``). Writing likewise uses Spark's own writer,
else Python workers with the table's own writer.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

import pyarrow as pa
import pyarrow.compute as pc

from sleeper_spark.errors import ConfigError
from sleeper_spark.models import FileRef, TableSchema
from sleeper_spark.source_options import DEFAULT_ROW_GROUP_ROWS, DEFAULT_TARGET_FILE_BYTES
from sleeper_spark.spark.common.conversions import conform, quoted_column, spark_schema
from sleeper_spark.spark.common.jvm import hadoop_location, native_entry
from sleeper_spark.spark.common.options import open_catalog
from sleeper_spark.spark.common.session import session_parallelism
from sleeper_spark.spark.native.native_read import data_frame, hand_over_columns, native_types
from sleeper_spark.spark.native.native_write import stage_native
from sleeper_spark.spark.source.writer import WriteTarget, stage_files
from sleeper_spark.state import TableState
from sleeper_spark.table.reading import read_file
from sleeper_spark.table.writes import new_write_id

if TYPE_CHECKING:
    from sleeper_spark.table import Table

FILE_COLUMN = "_sleeper_file"  # the column that says which data file each row is in (see files_named)


def files_frame(table: Table, spark: Any, state: TableState, files: Sequence[FileRef]) -> Any:
    """The rows of exactly ``files`` under ``state``'s schema, with :data:`FILE_COLUMN`: the file's
    path as the reader reports it, which :func:`files_named` turns back into the FileRefs."""
    from pyspark.sql import functions as F

    if not native_types(state.schema):
        raise ConfigError(f"table {table.name!r} has nanosecond timestamps; Spark holds microseconds, so the rows a "
                          "merge or update copies would lose precision. Nothing was changed")
    entry = native_entry(spark)
    root = hadoop_location(spark, entry, table.location, table.catalog.config.s3_endpoint) \
        if entry is not None else None
    if entry is None or root is None:
        return _read_in_python_workers(table, spark, state, files)
    chosen = table.files_table(state.version).filter(pc.is_in(pc.field("path"), pa.array([f.path for f in files])))
    hand_over = hand_over_columns(chosen, state.schema, state.partition_by)
    jdf = data_frame(spark, entry, f"sleeper:{table.name}@{state.version} (rewrite)", root.rstrip("/"), hand_over,
                     state.schema, state.partition_by)
    from pyspark.sql import DataFrame

    return DataFrame(jdf, spark).withColumn(FILE_COLUMN, F.col("_metadata.file_path"))


@dataclass(frozen=True)
class _FilesToRead:
    """What a Python worker needs to read some files of a table: plain data, pickled to the workers."""

    options: tuple[tuple[str, str], ...]
    root: str
    files: tuple[str, ...]  # FileRef JSON, by index
    stored: pa.Schema
    expected: pa.Schema  # Spark's Arrow types of the table's columns


def _read_in_python_workers(table: Table, spark: Any, state: TableState, files: Sequence[FileRef]) -> Any:
    """The same rows read by Python workers through the table's store, checksums checked: for
    sessions without the jar, or whose Hadoop cannot open the table's location (S3 without hadoop-aws)."""
    from pyspark.sql.pandas.types import to_arrow_schema
    from pyspark.sql.types import StringType

    columns = spark_schema(state.schema, guarded=False)
    job = _FilesToRead(options=tuple(sorted(table.catalog.options().items())), root=table.root,
                       files=tuple(f.model_dump_json() for f in files), stored=state.schema.to_arrow(),
                       expected=to_arrow_schema(columns, timezone="UTC"))
    tasks = max(1, min(len(files), 2 * (session_parallelism(spark) or 2)))
    return spark.range(len(files), numPartitions=tasks).mapInArrow(
        functools.partial(_read_files, job), columns.add(FILE_COLUMN, StringType()))


def _read_files(job: _FilesToRead, indexes: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """In a Python worker: the files whose indexes arrive, each row with its file's path."""
    store = open_catalog(dict(job.options)).backend.store
    for batch in indexes:
        for index in batch.column(0).to_pylist():
            file = FileRef.model_validate_json(job.files[index])
            data = conform(read_file(store, job.root, file, job.stored, None, None), job.expected)
            paths = pa.array([file.path] * data.num_rows, pa.string())
            yield from data.append_column(FILE_COLUMN, paths).to_batches()


def files_named(reported: Iterable[str], files: Sequence[FileRef]) -> list[FileRef]:
    """The FileRefs of the paths :data:`FILE_COLUMN` reported: Spark's reader gives each file's URI,
    percent-encoded and absolute, which ends with its path relative to the table root; the Python
    workers give the path itself."""
    by_path = {f.path: f for f in files}
    found = []
    for path in reported:
        match = None
        # Paths hold percent-encoded partition values (tag=it%27s): the Python workers report
        # them as they are, Spark's reader as a URI, encoded once more.
        for text in (path, unquote(path)):
            match = match or by_path.get(text) or next((f for p, f in by_path.items() if text.endswith("/" + p)), None)
        if match is None:
            raise ConfigError(f"Spark read {path}, which is none of the files it was given")
        found.append(match)
    return found


def stage_frame(table: Table, df: Any, schema: TableSchema, partition_by: tuple[str, ...]) -> tuple[list[FileRef], str]:
    """``df``'s rows as new files of ``table`` (``schema``'s columns), in no version yet; and the write id."""
    staged = stage_native(table, df, schema, partition_by)
    if staged is not None:
        return staged
    target = WriteTarget(options=tuple(sorted(table.catalog.options().items())), table=table.name,
                         table_id=table.table_id, root=table.root, schema=schema, partition_by=partition_by,
                         target_file_bytes=DEFAULT_TARGET_FILE_BYTES, row_group_rows=DEFAULT_ROW_GROUP_ROWS)
    columns = df.select(*[quoted_column(name) for name in schema.names])
    described = [row["file"] for row in columns.mapInArrow(functools.partial(_stage, target), "file string").collect()]
    return [FileRef.model_validate(json.loads(text)) for text in described], new_write_id()


def _stage(target: WriteTarget, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """In a Python worker: one task's rows as staged files, described as FileRef JSON."""
    staged = stage_files(target, batches).files
    yield pa.RecordBatch.from_pydict({"file": [f.model_dump_json() for f in staged]},
                                     schema=pa.schema([("file", pa.string())]))
