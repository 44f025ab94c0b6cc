"""Compaction: the small files of each partition rewritten into files near a target size.

On a clustered table (``clustering.columns``, see :mod:`sleeper_spark.models.clustering`) a
compaction clusters instead: the files not yet clustered, with the runs they take in (see
:mod:`sleeper_spark.maintenance.clustering`), are rewritten per partition in Hilbert order over
the clustering columns, cut into files near the target size.

Three steps, each usable on its own (tests interleave them with other writers):

1. :func:`plan_compaction` picks the files on the current state (see
   :mod:`~sleeper_spark.maintenance.planning` for which, and how they are grouped). ``where``
   narrows the choice to files that may hold rows matching a ``pyarrow.compute.Expression``,
   judged by partition values and min/max statistics exactly as a scan prunes files: e.g.
   ``pc.field("day") == "2024-01-01"`` compacts one partition. The rows themselves are never
   filtered: a chosen file is rewritten whole.
2. :func:`rewrite_plan` writes the new files, in Spark tasks or driver threads.
3. :func:`commit_compaction` commits one ``ReplaceFiles`` with operation ``"compact"``.

Appends that commit while a compaction runs survive it; two compactions of the same files
cannot both land (the second gets :class:`~sleeper_spark.errors.CommitConflictError` and its
files are deleted).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow.compute as pc

from sleeper_spark.errors import ConfigError
from sleeper_spark.maintenance import rewrite
from sleeper_spark.maintenance.clustering import COMPACT_OPERATION, clustering_metadata, plan_clustering
from sleeper_spark.maintenance.planning import FileGroup, plan_groups
from sleeper_spark.maintenance.progress import Progress
from sleeper_spark.maintenance.replacement import commit_replacement
from sleeper_spark.models import FileRef, Snapshot
from sleeper_spark.models.clustering import CURVE, clustering_columns
from sleeper_spark.source_options import DEFAULT_TARGET_FILE_BYTES
from sleeper_spark.state import TableState

if TYPE_CHECKING:
    from sleeper_spark.table import Table

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class CompactionPlan:
    """What one compaction rewrites, chosen on the table state at ``version``."""

    version: int
    target_file_bytes: int
    groups: tuple[FileGroup, ...]
    clustering: tuple[str, ...] = ()  # the clustering columns of a clustering compaction

    @property
    def removed(self) -> tuple[str, ...]:
        return tuple(f.path for g in self.groups for f in g.files)

    @property
    def input_bytes(self) -> int:
        return sum(g.size_bytes for g in self.groups)


def compact(table: Table, spark: Any = None, target_file_bytes: int = DEFAULT_TARGET_FILE_BYTES,
            where: pc.Expression | None = None, *, executor: str = "auto",
            progress: Progress | None = None) -> Snapshot | None:
    """Compacts ``table``; returns the new snapshot, or ``None`` when there was nothing to do.

    ``spark`` (a SparkSession) runs the rewrite in Spark tasks when the work is big enough;
    ``executor`` forces the choice ("local" or "spark"); ``progress`` receives
    ``(phase, done, total)``.
    """
    rewrite.check_executor(executor)
    plan = plan_compaction(table, target_file_bytes, where)
    if not plan.groups:
        log.info("table %s: nothing to compact at version %d", table.name, plan.version)
        return None
    added = rewrite_plan(table, plan, spark, executor=executor, progress=progress)
    return commit_compaction(table, plan, added)


def plan_compaction(table: Table, target_file_bytes: int = DEFAULT_TARGET_FILE_BYTES,
                    where: pc.Expression | None = None) -> CompactionPlan:
    """The groups of small files to rewrite, on the table's current state."""
    if isinstance(target_file_bytes, bool) or not isinstance(target_file_bytes, int) or target_file_bytes <= 0:
        raise ConfigError(f"target_file_bytes must be a positive number of bytes, not {target_file_bytes!r}")
    if where is not None and not isinstance(where, pc.Expression):
        raise ConfigError(
            "where must be a pyarrow.compute.Expression, e.g. pc.field('day') == '2024-01-01', "
            f"not a {type(where).__name__}"
        )
    state = table.state()
    columns = compaction_clustering(state)
    if columns:
        return CompactionPlan(state.version, target_file_bytes, tuple(plan_clustering(state, columns, where)),
                              columns)
    groups = plan_groups(state, where, target_file_bytes)
    return CompactionPlan(state.version, target_file_bytes, tuple(groups))


def compaction_clustering(state: TableState) -> tuple[str, ...]:
    """The clustering columns a compaction of ``state`` lays files out by: a column dropped since
    (ALTER TABLE refuses that, a racing change may not) no longer clusters."""
    return tuple(c for c in clustering_columns(state.properties) if c in state.schema.names)


def rewrite_plan(table: Table, plan: CompactionPlan, spark: Any = None, *, executor: str = "auto",
                 progress: Progress | None = None, state: TableState | None = None) -> list[FileRef]:
    """Writes the compacted files of ``plan``; they are not part of the table until committed.
    ``state``: one at least as new as the plan's, whose schema the files are written in (default:
    the current state, which costs a read of the log)."""
    state = state if state is not None else table.state()
    job = rewrite.RewriteJob(
        catalog_options=table.catalog.options(), table_name=table.name, table_root=table.root,
        schema=state.schema, partition_by=state.partition_by, target_file_bytes=plan.target_file_bytes,
        cluster_by=plan.clustering,
    )
    results = rewrite.run(table.store, job, plan.groups, spark, executor, progress)
    return [f for r in results for f in r.added]


def commit_compaction(table: Table, plan: CompactionPlan, added: list[FileRef]) -> Snapshot:
    """Commits the compaction; on a conflict its files are deleted and the error raised."""
    metadata = clustering_metadata(plan.clustering, CURVE) if plan.clustering else None
    snapshot = commit_replacement(table, COMPACT_OPERATION, plan.removed, added, metadata)
    log.info("table %s: compacted %d file(s) (%d bytes) into %d at version %d", table.name,
             len(plan.removed), plan.input_bytes, len(added), snapshot.version)
    return snapshot
