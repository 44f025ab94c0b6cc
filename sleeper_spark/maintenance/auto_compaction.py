"""Automatic compaction: after a commit adds files, the process that committed compacts the
partitions it wrote once they hold too many small files.

Table properties (:mod:`sleeper_spark.models.clustering`): ``compaction.auto=true`` turns it on;
a partition the commit added files to is compacted when it holds more than
``compaction.auto.min_files`` (16) files under half of ``compaction.target_file_bytes`` (128 MiB).
A table appended to in small batches thus keeps about that many live files per partition.

It runs behind the commits, on a thread of the table's own in the process that committed
(:class:`~sleeper_spark.table.behind_commits.BehindCommits`; for a Spark write, the driver),
with Arrow and no Spark job: a commit returns as soon as it has landed, and several commits that
land while a compaction runs are looked at together in the next run. The commits stand whatever
happens here, so a failure is logged, never raised. Each run rewrites at most one target's worth
of small files, so a run stays short whatever the backlog: its own commit starts the next run,
which takes more while the partition is still due. On a clustered table the files are rewritten
in curve order, as a clustering compaction writes them.
``t.auto_compaction.flush(timeout)`` waits for the runs handed so far; at interpreter exit
Python waits for the one in progress.

Appends that land meanwhile survive it, as they survive any compaction. Two processes that
compact the same files at once cannot both land: the second's commit conflicts, its files are
deleted (:func:`~sleeper_spark.maintenance.compaction.commit_compaction`) and it says so in the log.
"""

from __future__ import annotations

import logging
from collections import Counter
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc

from sleeper_spark.errors import CommitConflictError
from sleeper_spark.maintenance.compaction import CompactionPlan, commit_compaction, compaction_clustering, rewrite_plan
from sleeper_spark.maintenance.planning import FileGroup, PartitionKey, pack, small_file_limit
from sleeper_spark.models import Snapshot
from sleeper_spark.models.clustering import AutoCompaction, auto_compaction
from sleeper_spark.source_options import DEFAULT_TARGET_FILE_BYTES
from sleeper_spark.state import TableState

if TYPE_CHECKING:
    from sleeper_spark.table import Table

log = logging.getLogger(__name__)


def compact_after_commits(table: Table, state: TableState, since: int) -> Snapshot | None:
    """Compacts what the commits after version ``since`` up to ``state`` made due, if the table
    asks for it; the snapshot of the compaction, or None. Never raises: the commits have landed."""
    settings = auto_compaction(state.properties, DEFAULT_TARGET_FILE_BYTES)
    if settings is None:
        return None
    try:
        # Planned on the newest state this process holds: the state handed may predate a compaction
        # that landed since (whose own commit hands nothing once the partition is no longer due),
        # and a plan on it would rewrite files that compaction already removed, only to conflict.
        state = max(state, table.head.known_state(), key=lambda s: s.version)
        groups = due_groups(state, settings, since)
        if not groups:
            return None
        plan = CompactionPlan(state.version, settings.target_file_bytes, tuple(groups), compaction_clustering(state))
        return commit_compaction(table, plan, rewrite_plan(table, plan, executor="local", state=state))
    except CommitConflictError as conflict:
        log.info("table %s: automatic compaction after version %d dropped, another commit took its files first "
                 "(%s)", table.name, state.version, conflict)
    except Exception as error:  # the commit has landed; compaction is an afterthought
        log.warning("table %s: automatic compaction after version %d failed (%s: %s); the commit stands, and the "
                    "next one tries again", table.name, state.version, type(error).__name__, error)
    return None


def due_groups(state: TableState, settings: AutoCompaction, since: int) -> list[FileGroup]:
    """The groups to compact after the commits after version ``since``: small files of the
    partitions they added files to that hold more than ``min_files`` of them; at most one target's
    worth of input."""
    if len(state.files) <= settings.min_files:
        return []  # no partition can be due: most commits stop here, before any Arrow work
    files = state.files.table()
    added = files.filter(pc.greater(files.column("added_version"), since))
    if not added.num_rows:
        return []
    touched = set(_partition_keys(added, state.partition_by))
    small = files.filter(pc.less(files.column("size_bytes"), small_file_limit(settings.target_file_bytes)))
    keys = _partition_keys(small, state.partition_by)
    counts = Counter(key for key in keys if key in touched)
    due = {key for key, count in counts.items() if count > settings.min_files}
    if not due:
        return []
    chosen = small.filter(pa.array([key in due for key in keys], pa.bool_()))
    groups = [g for g in pack(state.layout.file_refs(chosen), state.partition_by, settings.target_file_bytes)
              if len(g.files) > 1]
    bounded: list[FileGroup] = []
    total = 0
    for group in groups:
        if bounded and total + group.size_bytes > settings.target_file_bytes:
            break
        bounded.append(group)
        total += group.size_bytes
    return bounded


def _partition_keys(files: pa.Table, partition_by: tuple[str, ...]) -> list[PartitionKey]:
    """Each file's partition values, as :func:`~sleeper_spark.maintenance.planning.partition_key` gives them."""
    if not partition_by:
        return [()] * files.num_rows
    columns = [files.column(f"partition.{name}").to_pylist() for name in partition_by]
    return list(zip(*columns, strict=True))
