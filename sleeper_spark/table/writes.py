"""Turning staged data files into one committed snapshot.

Both write paths end here: the pyarrow path in this process, and Spark's ``commit()`` in a
Python worker of the driver. Staged files are deleted when the commit certainly failed
(conflict, retries exhausted) or was an idempotent repeat; they are kept when the outcome is
unknown, since they may be part of the table.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import pyarrow as pa

from sleeper_spark.commit import BuildTransaction, CommitResult, TableHead, utc_now
from sleeper_spark.errors import CommitConflictError, CommitFailedError, ConfigError, SchemaMismatchError
from sleeper_spark.models import AddFiles, FileRef, ReplaceFiles, TableSchema, Transaction
from sleeper_spark.models.schema_evolution import merged_schema
from sleeper_spark.models.stat_values import from_stat
from sleeper_spark.state import TableState
from sleeper_spark.storage import ObjectStore, join_key

log = logging.getLogger(__name__)

WRITE_MODES = ("append", "overwrite")
# The files a partial overwrite removes from the state it is committed on top of.
ReplacedFiles = Callable[[TableState], Sequence[FileRef]]
Partition = tuple[str | None, ...]  # a file's partition values, in partition column order
PARTITION_OVERWRITE_MODES = ("static", "dynamic")


def new_write_id() -> str:
    return uuid.uuid4().hex


def check_write_args(mode: str, metadata: object, app_id: object, app_version: object) -> dict[str, str]:
    """Validates the user's write arguments before anything is written; returns the metadata."""
    if mode not in WRITE_MODES:
        raise ConfigError(f"write mode must be 'append' or 'overwrite', not {mode!r}")
    if metadata is None:
        metadata = {}
    if not isinstance(metadata, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in metadata.items()
    ):
        raise ConfigError("metadata must map strings to strings, e.g. {'job': 'nightly'}; nothing was written")
    if (app_id is None) != (app_version is None):
        raise ConfigError("give app_id and app_version together (or neither) for an idempotent write")
    if app_id is not None and (not isinstance(app_id, str) or not app_id):
        raise ConfigError("app_id must be a non-empty string")
    if app_version is not None and (isinstance(app_version, bool) or not isinstance(app_version, int)
                                    or app_version < 0):
        raise ConfigError("app_version must be a non-negative integer")
    return dict(metadata)


@dataclass(frozen=True)
class PartialOverwrite:
    """The part of a table an overwrite replaces, when not all of it.

    ``replace_where``: a Spark SQL condition over partition columns; the files whose partition
    values make it true go, and every written file's must make it true. ``dynamic``
    (``partitionOverwriteMode=dynamic``): the partitions the written data has rows in go.
    """

    replace_where: str | None = None
    dynamic: bool = False


def check_partial_overwrite(mode: str, replace_where: object, partition_overwrite_mode: object
                            ) -> PartialOverwrite | None:
    """Validates the arguments that make an overwrite partial; None for a whole-table overwrite
    or an append (which ``partition_overwrite_mode`` does not apply to, as in Spark)."""
    if partition_overwrite_mode is not None and (
            not isinstance(partition_overwrite_mode, str)
            or partition_overwrite_mode.strip().lower() not in PARTITION_OVERWRITE_MODES):
        raise ConfigError(f"partition overwrite mode must be 'static' or 'dynamic', not {partition_overwrite_mode!r}; "
                          "nothing was written")
    dynamic = isinstance(partition_overwrite_mode, str) and partition_overwrite_mode.strip().lower() == "dynamic"
    if replace_where is None:
        return PartialOverwrite(dynamic=True) if dynamic and mode == "overwrite" else None
    if not isinstance(replace_where, str) or not replace_where.strip():
        raise ConfigError("replaceWhere must be a Spark SQL condition over partition columns, e.g. "
                          "\"day = '2024-05-01'\"; nothing was written")
    if mode != "overwrite":
        raise ConfigError("replaceWhere applies to an overwrite: write with mode 'overwrite'; nothing was written")
    if dynamic:
        raise ConfigError("give replaceWhere or partitionOverwriteMode=dynamic, not both: replaceWhere replaces "
                          "the partitions its condition selects, dynamic those the data has rows in; nothing "
                          "was written")
    return PartialOverwrite(replace_where=replace_where)


def build_write(files: Sequence[FileRef], mode: str, metadata: dict[str, str], write_id: str,
                app_id: str | None, app_version: int | None, event_time_column: str | None,
                schema_state: TableState, merge: TableSchema | None = None,
                replaced: ReplacedFiles | None = None) -> BuildTransaction:
    """The transaction of a write, rebuilt against each state the commit loop tries.

    An append adds its files. An overwrite removes every file of the state it is committed on
    top of: it never conflicts, and serialises after whatever committed before it. A partial
    overwrite (``replaced``: the files of a state it replaces, e.g. those of some partitions)
    removes the files ``replaced`` picks from that state, and records in ``operation_metrics``
    how many partitions they were in (``partitions_replaced``). With
    ``merge`` (the data's schema, for a write with ``merge_schema``), the transaction also sets
    the state's schema with the columns only the data has, in the same commit; a racing change
    that gave one of them another type fails the write with ``SchemaMismatchError``.
    """
    snapshot_id = uuid.uuid4().hex
    low, high = _event_time_range(files, event_time_column, schema_state)

    def build(state: TableState) -> Transaction:
        common: dict[str, Any] = dict(
            snapshot_id=snapshot_id, committed_at=utc_now(), metadata=metadata, write_id=write_id,
            app_id=app_id, app_version=app_version, min_event_time=low, max_event_time=high,
        )
        if merge is not None:
            merged = merged_schema(state.schema, merge, state.name)
            if merged != state.schema:
                common["schema"] = merged
        if mode == "append":
            return AddFiles(operation="append", files=tuple(files), **common)
        if replaced is None:
            return ReplaceFiles(operation="overwrite", removed=tuple(state.files), added=tuple(files), **common)
        removed = replaced(state)
        metrics = {"partitions_replaced": len({partition_of(f, state.partition_by) for f in removed})}
        return ReplaceFiles(operation="overwrite", removed=tuple(f.path for f in removed), added=tuple(files),
                            operation_metrics=metrics, **common)

    return build


def partition_of(file: FileRef, partition_by: Sequence[str]) -> Partition:
    return tuple(file.partition.get(name) for name in partition_by)


def dynamic_overwrite(files: Sequence[FileRef], partition_by: Sequence[str]) -> ReplacedFiles | None:
    """What an overwrite with ``partitionOverwriteMode=dynamic`` replaces: the files of the
    partitions ``files`` (the written ones) are in; None (the whole table) when it has no partitions."""
    if not partition_by:
        return None
    written = {partition_of(f, partition_by) for f in files}
    return lambda state: files_in_partitions(state, written)


def file_partitions(state: TableState) -> list[Partition]:
    """Each file's partition values, in the order of ``state.files.table()`` (read from its columns:
    no FileRef is built)."""
    stored = state.files.table()
    columns = [stored.column(f"partition.{name}").to_pylist() for name in state.partition_by]
    return list(zip(*columns, strict=True))


def files_in_partitions(state: TableState, partitions: set[Partition]) -> list[FileRef]:
    """The files of ``state`` whose partition values are one of ``partitions``."""
    if not partitions or not len(state.files):
        return []
    marks = pa.array([values in partitions for values in file_partitions(state)], pa.bool_())
    return state.files.layout.file_refs(state.files.table().filter(marks))


def commit_staged(head: TableHead, store: ObjectStore, table_root: str, files: Sequence[FileRef],
                  build: BuildTransaction) -> CommitResult:
    return settle_staged(store, table_root, files, lambda: head.commit(build))


def settle_staged(store: ObjectStore, table_root: str, files: Sequence[FileRef] | Sequence[str],
                  commit: Callable[[], CommitResult]) -> CommitResult:
    """Runs ``commit``; deletes the staged files (FileRefs or paths) when it certainly failed or
    repeated an earlier write."""
    try:
        result = commit()
    except (CommitConflictError, CommitFailedError, SchemaMismatchError):
        delete_staged(store, table_root, files)
        raise
    if not result.committed:
        delete_staged(store, table_root, files)
    return result


def delete_staged(store: ObjectStore, table_root: str, files: Sequence[FileRef] | Sequence[str]) -> None:
    try:
        store.delete_many([join_key(table_root, f if isinstance(f, str) else f.path) for f in files])
    except Exception as error:
        log.warning("could not delete %d staged file(s): %s; vacuum will remove them", len(files), error)


def _event_time_range(files: Sequence[FileRef], column: str | None,
                      state: TableState) -> tuple[datetime | None, datetime | None]:
    if column is None or column not in state.schema.names:
        return None, None
    type_ = state.schema.field(column).type
    lows = [from_stat(f.column_stats[column].min, type_) for f in files if column in f.column_stats]
    highs = [from_stat(f.column_stats[column].max, type_) for f in files if column in f.column_stats]
    lows = [v for v in lows if isinstance(v, datetime)]
    highs = [v for v in highs if isinstance(v, datetime)]
    return (min(lows) if lows else None), (max(highs) if highs else None)
