"""Deleting rows by predicate: whole files where statistics prove it, rewrites elsewhere.

The predicate here is a ``pyarrow.compute.Expression`` (e.g. ``pc.field("day") == "2024-01-01"``).
A Spark SQL condition is not translated into one (a translation that silently meant something
else would delete the wrong rows): ``Table.delete_where`` hands a string to Spark instead
(:func:`sleeper_spark.spark.rows.row_changes.delete_rows`), which evaluates it itself. A row is
deleted when the predicate is *true* for it; rows where it is false or null stay, as in SQL's
``DELETE ... WHERE``.

Each file falls in one of three cases:

* its partition values and min/max statistics prove that no row can match: untouched, unread;
* they prove every row matches (Arrow simplifies ``not p or p is null`` to false under the
  file's guarantee — e.g. a predicate on partition columns naming the file's partition): the
  file is dropped without being read;
* otherwise it is read; if some rows match, the rest are written to a new file and the old one
  is dropped; if none match after all, it is left as it is.

The result is one ``ReplaceFiles`` snapshot with operation ``"delete"`` (an empty one when
nothing matched, so every call leaves a record). It conflicts like a compaction, and also with a
concurrent append that may hold rows the predicate matches (``CommitConflictError``: run it again).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from sleeper_spark.datafiles.pruning import prune_files
from sleeper_spark.errors import ConfigError
from sleeper_spark.maintenance import rewrite
from sleeper_spark.maintenance.planning import pack
from sleeper_spark.maintenance.progress import Progress
from sleeper_spark.maintenance.replacement import commit_replacement
from sleeper_spark.models import FileRef, Snapshot, TableSchema
from sleeper_spark.source_options import DEFAULT_TARGET_FILE_BYTES
from sleeper_spark.table.isolation import ReadSet
from sleeper_spark.table.reading import planned_files

if TYPE_CHECKING:
    from sleeper_spark.table import Table

log = logging.getLogger(__name__)


def delete_where(table: Table, spark: Any, predicate: pc.Expression, *, executor: str = "auto",
                 progress: Progress | None = None) -> Snapshot:
    """Deletes the rows for which ``predicate`` is true; one snapshot (see the module doc)."""
    rewrite.check_executor(executor)
    state = table.state()
    check_predicate(predicate, state.schema)
    candidates = planned_files(state, predicate)
    whole = wholly_matched(candidates, state.schema, predicate, state.partition_by)
    partial = [f for f in candidates if f.path not in whole]
    results: list[rewrite.RewriteResult] = []
    if partial:
        job = rewrite.RewriteJob(
            catalog_options=table.catalog.options(), table_name=table.name, table_root=table.root,
            schema=state.schema, partition_by=state.partition_by, target_file_bytes=DEFAULT_TARGET_FILE_BYTES,
            keep=rows_to_keep(predicate),
        )
        # Rewritten files of one partition are packed together, so a delete leaves fewer files.
        groups = pack(partial, state.partition_by, DEFAULT_TARGET_FILE_BYTES)
        results = rewrite.run(table.store, job, groups, spark, executor, progress)
    removed = sorted(whole) + [path for r in results for path in r.removed]
    added = [f for r in results for f in r.added]
    read = ReadSet(state.version, frozenset(f.path for f in candidates), predicate)
    snapshot = commit_replacement(table, "delete", removed, added, read=read)
    log.info("table %s: delete dropped %d file(s) whole, rewrote %d, at version %d", table.name,
             len(whole), len(removed) - len(whole), snapshot.version)
    return snapshot


def check_predicate(predicate: object, schema: TableSchema) -> None:
    """Refuses anything but an Expression over the table's columns, before any work."""
    if isinstance(predicate, str):
        raise ConfigError(
            "this delete_where takes a pyarrow.compute.Expression, e.g. pc.field('day') == '2024-01-01'; "
            "for a Spark SQL condition call table.delete_where(spark, \"day = '2024-01-01'\")"
        )
    if not isinstance(predicate, pc.Expression):
        raise ConfigError(f"delete_where takes a pyarrow.compute.Expression, not a {type(predicate).__name__}")
    try:
        # Binding against an empty table catches unknown columns and type errors cheaply.
        schema.to_arrow().empty_table().filter(predicate)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as error:
        raise ConfigError(f"the delete predicate {predicate} does not fit the table: {error}") from None


def rows_to_keep(predicate: pc.Expression) -> pc.Expression:
    """The rows a delete keeps: those where ``predicate`` is false *or null*."""
    return ~predicate | predicate.is_null()


def wholly_matched(files: list[FileRef], schema: TableSchema, predicate: pc.Expression,
                   partition_by: Sequence[str] = ()) -> set[str]:
    """Paths of files whose statistics prove every row matches ``predicate``.

    A file is pruned for the filter "keep" exactly when its guarantee makes "keep" false (or
    null) for every row, i.e. when no row would survive the delete.
    """
    survivors = {f.path for f in prune_files(files, schema, rows_to_keep(predicate), partition_by)}
    return {f.path for f in files if f.path not in survivors}
