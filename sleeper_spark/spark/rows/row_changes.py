"""MERGE, UPDATE and DELETE by a Spark SQL condition: copy on write, one snapshot each.

Both read the files that may hold affected rows (:func:`~sleeper_spark.spark.rows.file_frames.files_frame`),
work out every row of them in Spark, and rewrite only the files in which some row changes; the
rows those files keep are copied into the new files. The new files are staged, then committed as
one ``ReplaceFiles`` (operation ``merge`` or ``update``) whose ``operation_metrics`` say what
happened. The commit checks that nothing it read has changed
(:mod:`sleeper_spark.table.isolation`); if something has, the whole change runs again on the new
state, up to :data:`ATTEMPTS` times, then raises :class:`CommitConflictError`.

Which files may hold affected rows comes from the condition, resolved by Spark and turned into
the table's file pruning (:mod:`sleeper_spark.spark.conditions.row_conditions`): an UPDATE reads the files
its ``where`` may select, a MERGE those its condition may match (:mod:`sleeper_spark.spark.rows.merge_builder`).
The same filter is what the commit checks concurrent appends against, so an append of rows the
change would not have touched does not make it run again.

A DELETE (:func:`delete_rows`, operation ``delete``) whose condition names partition columns only
is answered per partition by Spark on the driver (:mod:`sleeper_spark.spark.conditions.partition_conditions`):
the files of the partitions it is TRUE for are dropped whole, and no data file is read. Any other
condition reads the files it may select; a file whose every row it is TRUE for is dropped whole,
one with some such rows is rewritten without them (rows where it is NULL stay, as in SQL), and
one with none is left as it is. Nothing matched still commits an empty ``delete`` snapshot, as
:func:`~sleeper_spark.maintenance.deletion.delete_where` does.

This module holds UPDATE, DELETE and what they share with MERGE: the retries and the commit.
"""

from __future__ import annotations

import logging
import math
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from sleeper_spark.commit import idempotent_repeat, utc_now
from sleeper_spark.errors import CommitConflictError, ConfigError, SchemaMismatchError
from sleeper_spark.models import FileRef, ReplaceFiles, Snapshot, Transaction
from sleeper_spark.source_options import DEFAULT_TARGET_FILE_BYTES
from sleeper_spark.spark.common.conversions import quoted_column, spark_schema
from sleeper_spark.spark.conditions.partition_conditions import files_where
from sleeper_spark.spark.conditions.row_conditions import update_rows
from sleeper_spark.spark.rows.file_frames import FILE_COLUMN, files_frame, files_named, stage_frame
from sleeper_spark.state import TableState
from sleeper_spark.table.isolation import ReadSet, check_unchanged
from sleeper_spark.table.reading import planned_files
from sleeper_spark.table.writes import commit_staged

if TYPE_CHECKING:
    from sleeper_spark.table import Table

log = logging.getLogger(__name__)

ATTEMPTS = 3  # runs of a merge or update whose commit found what it read changed
ACTION = "_sleeper_action"  # the column that says what happens to a row


def update(table: Table, spark: Any, set: Mapping[str, str], where: str | None = None) -> Snapshot:
    """``UPDATE table SET ... WHERE ...``: one snapshot, operation ``update`` (see the module doc)."""
    values = checked_values(set, "set")
    if not values:
        raise ConfigError("update needs set={'column': 'Spark SQL expression', ...}")
    if where is not None and (not isinstance(where, str) or not where.strip()):
        raise ConfigError("update's where is a Spark SQL condition, e.g. \"day = '2024-05-01'\"")

    def run(state: TableState) -> Snapshot:
        from pyspark.sql import functions as F

        unknown = [c for c in values if c not in state.schema.names]
        if unknown:
            raise SchemaMismatchError(f"table {table.name!r} has no column(s) {unknown}; its columns: "
                                      f"{state.schema.names}")
        rows = update_rows(spark, state.schema, where)
        files = planned_files(state, rows) if state.files else []
        read = ReadSet(state.version, frozenset(f.path for f in files), rows)
        if not files:
            return stage_and_commit(table, state, None, [], read, "update", {}, None, None,
                                    {"rows_updated": 0, "files_read": 0, "files_rewritten": 0})
        hit = when_holds(where)
        types = {f.name: f.dataType for f in spark_schema(state.schema, guarded=False).fields}
        result = files_frame(table, spark, state, files).select(
            F.col(FILE_COLUMN), hit.alias(ACTION),
            *[(F.when(hit, F.expr(values[c]).cast(types[c])).otherwise(F.col(quoted_column(c))) if c in values
               else F.col(quoted_column(c))).alias(c) for c in state.schema.names])
        counts = result.where(F.col(ACTION)).groupBy(FILE_COLUMN).count().collect()
        names = [row[FILE_COLUMN] for row in counts]
        changed = files_named(names, files)
        written = result.where(F.col(FILE_COLUMN).isin(names)).select(
            *[quoted_column(c) for c in state.schema.names])
        metrics = {"rows_updated": sum(row["count"] for row in counts), "files_read": len(files),
                   "files_rewritten": len(changed)}
        return stage_and_commit(table, state, written, changed, read, "update", {}, None, None, metrics)

    return with_retries(table, "update", None, None, run)


def delete_rows(table: Table, spark: Any, where: str) -> Snapshot:
    """``DELETE FROM table WHERE ...``: one snapshot, operation ``delete`` (see the module doc).

    ``operation_metrics``: ``rows_deleted``, ``files_removed`` (dropped whole), ``files_rewritten``,
    ``files_read`` (data files whose rows were read) and ``rows_copied`` (kept rows of rewritten files).
    """
    if not isinstance(where, str) or not where.strip():
        raise ConfigError("delete's where is a Spark SQL condition, e.g. \"day = '2024-05-01'\"")

    def run(state: TableState) -> Snapshot:
        from pyspark.sql import functions as F

        # Spark's own error for a condition it cannot resolve, before anything is read or written.
        spark.createDataFrame([], spark_schema(state.schema, guarded=False)).where(when_holds(where))
        rows = update_rows(spark, state.schema, where)
        whole = files_where(spark, state, where)
        if whole is not None:
            read = ReadSet(state.version, frozenset(f.path for f in whole), rows)
            return stage_and_commit(table, state, None, whole, read, "delete", {}, None, None,
                                    _delete_metrics(sum(f.row_count for f in whole), len(whole), 0, 0))
        files = planned_files(state, rows) if state.files else []
        read = ReadSet(state.version, frozenset(f.path for f in files), rows)
        if not files:
            return stage_and_commit(table, state, None, [], read, "delete", {}, None, None, _delete_metrics(0, 0, 0, 0))
        hit = when_holds(where)
        frame = files_frame(table, spark, state, files)
        per_file = frame.groupBy(FILE_COLUMN).agg(F.count(F.lit(1)).alias("rows"),
                                                  F.sum(hit.cast("long")).alias("hits"))
        counts = per_file.where(F.col("hits") > 0).collect()
        dropped = files_named([row[FILE_COLUMN] for row in counts if row["hits"] == row["rows"]], files)
        partial = [row[FILE_COLUMN] for row in counts if row["hits"] < row["rows"]]
        kept = frame.where(F.col(FILE_COLUMN).isin(partial) & ~hit).select(
            *[quoted_column(c) for c in state.schema.names]) if partial else None
        metrics = _delete_metrics(sum(row["hits"] for row in counts), len(dropped), len(partial), len(files))
        return stage_and_commit(table, state, kept, [*dropped, *files_named(partial, files)], read, "delete", {},
                                None, None, metrics)

    return with_retries(table, "delete", None, None, run)


def _delete_metrics(rows_deleted: int, files_removed: int, files_rewritten: int, files_read: int) -> dict[str, int]:
    return {"rows_deleted": rows_deleted, "files_removed": files_removed, "files_rewritten": files_rewritten,
            "files_read": files_read}


def with_retries(table: Table, operation: str, app_id: str | None, app_version: int | None,
                 run: Callable[[TableState], Snapshot]) -> Snapshot:
    """``run`` on the newest state, again while its commit finds what it read changed (:data:`ATTEMPTS`)."""
    for attempt in range(1, ATTEMPTS + 1):
        state = table.head.catch_up()
        earlier = idempotent_repeat(state, app_id, app_version)
        if earlier is not None:
            return earlier
        try:
            return run(state)
        except CommitConflictError as conflict:
            if attempt == ATTEMPTS:
                raise CommitConflictError(f"{conflict} ({operation} ran {ATTEMPTS} times, and each time a concurrent "
                                          "commit changed what it read)") from None
            log.warning("%s; running the %s again on the new state", conflict, operation)
    raise AssertionError("unreachable")


def stage_and_commit(table: Table, state: TableState, rows: Any, changed: Sequence[FileRef], read: ReadSet,
                     operation: str, metadata: dict[str, str], app_id: str | None, app_version: int | None,
                     metrics: dict[str, int]) -> Snapshot:
    """Stages ``rows`` as new files and commits them in place of ``changed``, if ``read`` still stands."""
    added: list[FileRef] = []
    write_id = uuid.uuid4().hex
    if rows is not None and (changed or metrics.get("rows_inserted")):
        added, write_id = stage_frame(table, _spread(rows, changed, state.partition_by), state.schema,
                                      state.partition_by)
    metrics = {**metrics, "rows_copied": sum(f.row_count for f in added) - metrics.get("rows_inserted", 0)
               - metrics.get("rows_updated", 0)}
    snapshot_id = uuid.uuid4().hex
    removed = tuple(f.path for f in changed)

    def build(current: TableState) -> Transaction:
        check_unchanged(read, current, operation)
        return ReplaceFiles(snapshot_id=snapshot_id, committed_at=utc_now(), operation=operation, metadata=metadata,
                            write_id=write_id, app_id=app_id, app_version=app_version, removed=removed,
                            added=tuple(added), operation_metrics=metrics)

    snapshot = commit_staged(table.head, table.store, table.root, added, build).snapshot
    log.info("table %s: %s at version %d: %s", table.name, operation, snapshot.version, metrics)
    return snapshot


def _spread(rows: Any, changed: Sequence[FileRef], partition_by: tuple[str, ...]) -> Any:
    """The rows in about as many tasks as files of the target size they fill, each partition value in
    one task: a join's hundreds of shuffle partitions would otherwise write as many tiny files."""
    tasks = max(1, math.ceil(sum(f.size_bytes for f in changed) / DEFAULT_TARGET_FILE_BYTES))
    if partition_by:
        return rows.repartition(tasks, *[quoted_column(c) for c in partition_by])
    return rows.repartition(tasks)


def when_holds(condition: str | None) -> Any:
    """A Spark SQL condition as a column that is true where it is TRUE (not NULL); none: everywhere."""
    from pyspark.sql import functions as F

    return F.coalesce(F.expr(condition), F.lit(False)) if condition else F.lit(True)


def checked_values(values: Mapping[str, str] | None, name: str) -> dict[str, str] | None:
    """A clause's ``{column: Spark SQL expression}`` (``name`` is its argument), checked."""
    if values is None:
        return None
    if not isinstance(values, Mapping) or not all(isinstance(k, str) and isinstance(v, str) for k, v in values.items()):
        raise ConfigError(f"{name} maps column names to Spark SQL expressions, e.g. {{'total': 'source.total'}}")
    return dict(values)
