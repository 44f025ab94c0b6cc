"""Compaction, delete, vacuum, state snapshots and log truncation.

Importing this package registers the jobs with :class:`~sleeper_spark.table.Table` through
:mod:`sleeper_spark.table.extensions` (``table`` sits above this layer and cannot import it).
Nothing here imports pyspark: a Spark session is only ever used through the object passed in.
"""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING, Any

from sleeper_spark.maintenance.auto_compaction import compact_after_commits
from sleeper_spark.maintenance.compaction import (
    CompactionPlan,
    commit_compaction,
    compact,
    plan_compaction,
    rewrite_plan,
)
from sleeper_spark.maintenance.deletion import delete_where
from sleeper_spark.maintenance.progress import Progress
from sleeper_spark.maintenance.restore import restore
from sleeper_spark.maintenance.statistics_repair import repair_statistics
from sleeper_spark.maintenance.truncation import truncate_log
from sleeper_spark.maintenance.vacuum import vacuum
from sleeper_spark.models import Snapshot, TruncateReport, VacuumReport
from sleeper_spark.state import TableState
from sleeper_spark.table.extensions import register_maintenance

if TYPE_CHECKING:
    from sleeper_spark.table import Table


class _Jobs:
    """The :class:`~sleeper_spark.table.extensions.MaintenanceJobs` that ``Table`` calls."""

    def compact_behind(self, table: Table, state: TableState, since: int) -> None:
        compact_after_commits(table, state, since)

    def compact(self, table: Table, spark: Any, target_file_bytes: int, where: Any) -> Snapshot | None:
        return compact(table, spark, target_file_bytes, where)

    def delete_where(self, table: Table, spark: Any, predicate: Any) -> Snapshot:
        return delete_where(table, spark, predicate)

    def vacuum(self, table: Table, older_than: timedelta, dry_run: bool) -> VacuumReport:
        return vacuum(table, older_than, dry_run)

    def repair_statistics(self, table: Table, spark: Any) -> Snapshot | None:
        return repair_statistics(table, spark)

    def restore(self, table: Table, version: int) -> Snapshot:
        return restore(table, version)

    def truncate_log(self, table: Table, keep_versions_after: timedelta | int, safety_margin: int,
                     dry_run: bool) -> TruncateReport:
        return truncate_log(table, keep_versions_after, safety_margin, dry_run=dry_run)


register_maintenance(_Jobs())

__all__ = [
    "CompactionPlan",
    "Progress",
    "TruncateReport",
    "commit_compaction",
    "compact",
    "delete_where",
    "plan_compaction",
    "repair_statistics",
    "restore",
    "rewrite_plan",
    "truncate_log",
    "vacuum",
]
