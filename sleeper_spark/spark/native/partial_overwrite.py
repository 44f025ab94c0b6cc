"""Overwrites that replace part of a table: ``partitionOverwriteMode=dynamic`` and ``replaceWhere``.

Both commit one ``overwrite`` whose removed files are picked from each state the commit loop
tries (:func:`sleeper_spark.table.writes.build_write`), so a write that lands meanwhile in a
partition the overwrite replaces is replaced too, as it would be had it landed first; one in
another partition stays.

``replaceWhere`` is a Spark SQL condition over partition columns, evaluated by Spark on the
files' partition values (:func:`sleeper_spark.spark.conditions.partition_conditions.files_where`): the
removed files are those whose values make it true, and every written file's values must make it
true too. The written files' partition values are checked by the same evaluation
(:func:`~sleeper_spark.spark.conditions.partition_conditions.selected_tuples`), so the check and the
removal cannot disagree on a value. A condition that names another column is refused before
anything is written; written files outside the condition are deleted and nothing is committed.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import pyarrow as pa

from sleeper_spark.errors import ConfigError
from sleeper_spark.models import FileRef, Snapshot
from sleeper_spark.state import TableState
from sleeper_spark.table.writes import (
    PartialOverwrite,
    ReplacedFiles,
    delete_staged,
    dynamic_overwrite,
    partition_of,
)

if TYPE_CHECKING:
    from sleeper_spark.table import Table

T = TypeVar("T")


def check_before_staging(spark: Any, table_name: str, state: TableState, partial: PartialOverwrite | None) -> None:
    """Refuses a replaceWhere condition that names a column other than the partition columns,
    before any file is written."""
    if partial is not None and partial.replace_where is not None:
        _matching(spark, table_name, state, partial.replace_where)


def staged_replacement(spark: Any, table: Table, state: TableState, partial: PartialOverwrite | None,
                       written: Sequence[FileRef]) -> ReplacedFiles | None:
    """What the overwrite of the staged ``written`` files removes from each state it is tried on;
    None for a whole-table overwrite. Deletes the staged files when the write is refused."""
    if partial is None:
        return None
    if partial.dynamic:
        return dynamic_overwrite(written, state.partition_by)
    condition = partial.replace_where
    assert condition is not None
    try:
        _check_written(spark, table.name, state, condition, written)
    except ConfigError:
        delete_staged(table.store, table.root, written)
        raise
    return lambda tried: _matching(spark, table.name, tried, condition)


def _matching(spark: Any, table_name: str, state: TableState, condition: str) -> list[FileRef]:
    from sleeper_spark.spark.conditions.partition_conditions import files_where

    return _over_partitions(files_where(spark, state, condition), table_name, state, condition)


def _check_written(spark: Any, table_name: str, state: TableState, condition: str,
                   written: Sequence[FileRef]) -> None:
    from sleeper_spark.spark.conditions.partition_conditions import in_order, selected_tuples

    tuples = in_order({partition_of(f, state.partition_by) for f in written})
    inside = _over_partitions(selected_tuples(spark, state, tuples, condition), table_name, state, condition)
    outside = [values for values in tuples if values not in inside]
    if outside:
        shown = ", ".join(f"{name}={'null' if value is None else value}"
                          for name, value in zip(state.partition_by, outside[0], strict=True))
        raise ConfigError(
            f"the data has rows in partition {shown}, for which replaceWhere {condition!r} is not true: an "
            "overwrite with replaceWhere writes only rows of the partitions it replaces. Filter the data by "
            f"the same condition, or widen it; nothing was committed to table {table_name!r}")


def _over_partitions(selected: T | None, table_name: str, state: TableState, condition: str) -> T:
    """``selected``, or the error for a condition that is not over the partition columns alone."""
    if selected is None:
        columns = ", ".join(state.partition_by) or "none: the table is not partitioned"
        raise ConfigError(
            f"replaceWhere takes a deterministic condition over partition columns only, and {condition!r} is not "
            f"one for table {table_name!r} (partition columns: {columns}). To replace rows by other columns, "
            "delete them (DELETE FROM, or t.delete_where) and then append; nothing was written")
    return selected


def write_in_driver(table: Table, df: Any, state: TableState, partial: PartialOverwrite, options: Mapping[str, str],
                    write_id: str, metadata: dict[str, str], app_id: str | None, app_version: int | None) -> Snapshot:
    """A replaceWhere overwrite in a session without Spark's own writer (the jar).

    The Python data source commits in a Python worker, which has no SparkSession to evaluate
    the condition with; so the tasks of a ``mapInArrow`` job stage the files, as the data
    source's tasks do, and send their descriptions back, and this driver checks and commits
    them. ``options``: the data source options of the write (without ``replaceWhere``). Files
    staged by the tasks of a job that then fails are left to vacuum.
    """
    from sleeper_spark.spark.source.writer import plan_write, stage_files

    spark = df.sparkSession
    check_before_staging(spark, table.name, state, partial)
    target = plan_write({**options, "path": table.name}, df.schema, overwrite=True).target

    def stage(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        files = stage_files(target, batches).files
        yield pa.RecordBatch.from_pydict({"files": [json.dumps([f.model_dump(mode="json") for f in files])]})

    rows = df.mapInArrow(stage, "files string").collect()
    written = [FileRef.model_validate(file) for row in rows for file in json.loads(row.files)]
    replaced = staged_replacement(spark, table, state, partial, written)
    merge = target.schema if target.merge_schema else None
    # commit_files deletes the staged files when the commit certainly failed.
    return table.commit_files(written, "overwrite", metadata, write_id, app_id, app_version, merge=merge,
                              replaced=replaced).snapshot
