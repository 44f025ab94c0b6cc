"""``Table.write`` of Arrow data: the Python writer stages the files, then one commit.

Spark DataFrames take the Spark bridge instead (see :mod:`sleeper_spark.table.extensions`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from sleeper_spark.commit import CommitResult, idempotent_repeat
from sleeper_spark.datafiles.writer import DataFileWriter
from sleeper_spark.errors import ConfigError
from sleeper_spark.models import TableSchema
from sleeper_spark.models.schema import check_data_schema
from sleeper_spark.models.schema_evolution import merged_schema
from sleeper_spark.table.writes import PartialOverwrite, dynamic_overwrite, new_write_id

if TYPE_CHECKING:
    from sleeper_spark.table.table import Table

ArrowData = Any  # a pyarrow Table, RecordBatch or RecordBatchReader


def write_arrow(table: Table, data: ArrowData | Iterable[pa.RecordBatch], mode: str, metadata: dict[str, str],
                app_id: str | None, app_version: int | None, merge_schema: bool = False,
                partial: PartialOverwrite | None = None) -> CommitResult:
    """Writes Arrow data as one snapshot of ``table``: files by the Python writer, then one commit."""
    state = table.head.known_state()
    if app_id is not None:
        # An idempotent repeat is answered before any file is written (this costs a tail read).
        state = table.head.catch_up()
        earlier = idempotent_repeat(state, app_id, app_version)
        if earlier is not None:
            return CommitResult(earlier, committed=False, attempts=0)
    schema, merge = state.schema, None
    if isinstance(data, (pa.Table, pa.RecordBatch, pa.RecordBatchReader)):
        data_schema = TableSchema.from_arrow(data.schema)
        if merge_schema:
            schema = merged_schema(state.schema, data_schema, table.name)
            merge = data_schema
        check_data_schema(data_schema, schema, table.name, missing_ok=merge_schema)
        if merge_schema:
            data = _with_missing_columns(data, schema.to_arrow())
    elif merge_schema:
        raise ConfigError("merge_schema needs data with a schema (a pyarrow Table, RecordBatch or "
                          "RecordBatchReader, or a Spark DataFrame); nothing was written")
    batches = _batches(data)
    # The partitions' files are written side by side, on as many threads as pyarrow has cores.
    writer = DataFileWriter(table.store, table.root, schema, state.partition_by, table.name, threads=pa.cpu_count())
    files = writer.write_all(batches)
    replaced = dynamic_overwrite(files, state.partition_by) if partial is not None and partial.dynamic else None
    return table.commit_files(files, mode, metadata, new_write_id(), app_id, app_version, merge=merge,
                              replaced=replaced)


def _with_missing_columns(data: ArrowData, schema: pa.Schema) -> ArrowData | Iterable[pa.RecordBatch]:
    """``data`` with a column of nulls for each column of ``schema`` it lacks (a merge_schema write)."""
    missing = [f for f in schema if f.name not in data.schema.names]
    if not missing:
        return data

    def filled(batch: pa.RecordBatch) -> pa.RecordBatch:
        columns = [*batch.columns, *(pa.nulls(batch.num_rows, f.type) for f in missing)]
        return pa.RecordBatch.from_arrays(columns, names=[*batch.schema.names, *(f.name for f in missing)])

    if isinstance(data, pa.RecordBatch):
        return filled(data)
    if isinstance(data, pa.Table):
        return pa.Table.from_batches([filled(b) for b in data.to_batches()],
                                     schema=pa.schema([*data.schema, *missing]))
    return (filled(batch) for batch in data)


def _batches(data: Any) -> Iterable[pa.RecordBatch | pa.Table]:
    if isinstance(data, pa.Table):
        batches: list[pa.RecordBatch | pa.Table] = data.to_batches() or [data]
        return batches
    if isinstance(data, pa.RecordBatch):
        return [data]
    if isinstance(data, (pa.RecordBatchReader, Iterable)):
        return iter(data)
    raise ConfigError(
        f"cannot write a {type(data).__name__}: give a Spark DataFrame, "
        "a pyarrow.Table, RecordBatch or RecordBatchReader"
    )
