"""How the table layer reaches Spark and the maintenance jobs without importing them.

``spark`` and ``maintenance`` sit below ``table`` in the layers, so ``Table`` cannot import
them. Each registers its implementation here when it is imported (``import sleeper_spark``
imports both; pyspark itself is loaded only when a DataFrame is actually handled).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Protocol

from sleeper_spark.errors import ConfigError

if TYPE_CHECKING:
    from sleeper_spark.models import Snapshot, TruncateReport, VacuumReport
    from sleeper_spark.state import TableState
    from sleeper_spark.table.changes import ChangePlan
    from sleeper_spark.table.table import Table
    from sleeper_spark.table.writes import PartialOverwrite


class SparkBridge(Protocol):
    def is_dataframe(self, data: object) -> bool: ...

    def write(self, table: Table, df: Any, mode: str, metadata: Mapping[str, str],
              app_id: str | None, app_version: int | None, merge_schema: bool,
              partial: PartialOverwrite | None = None) -> Snapshot: ...

    def read(self, table: Table, spark: Any, version: int | None, timestamp: datetime | None) -> Any: ...

    def merge(self, table: Table, source: Any, condition: str) -> Any: ...

    def changes(self, table: Table, spark: Any, plan: ChangePlan) -> Any: ...

    def update(self, table: Table, spark: Any, set: Mapping[str, str], where: str | None) -> Snapshot: ...

    def delete(self, table: Table, spark: Any, where: str) -> Snapshot: ...


class MaintenanceJobs(Protocol):
    def compact(self, table: Table, spark: Any, target_file_bytes: int, where: Any) -> Snapshot | None: ...

    def delete_where(self, table: Table, spark: Any, predicate: Any) -> Snapshot: ...

    def vacuum(self, table: Table, older_than: timedelta, dry_run: bool) -> VacuumReport: ...

    def repair_statistics(self, table: Table, spark: Any) -> Snapshot | None: ...

    def restore(self, table: Table, version: int) -> Snapshot: ...

    def truncate_log(self, table: Table, keep_versions_after: timedelta | int, safety_margin: int,
                     dry_run: bool) -> TruncateReport: ...

    def compact_behind(self, table: Table, state: TableState, since: int) -> None: ...


_spark: SparkBridge | None = None
_maintenance: MaintenanceJobs | None = None


def register_spark_bridge(bridge: SparkBridge) -> None:
    global _spark
    _spark = bridge


def register_maintenance(jobs: MaintenanceJobs) -> None:
    global _maintenance
    _maintenance = jobs


def spark_bridge() -> SparkBridge:
    if _spark is None:
        raise ConfigError("Spark support is not loaded: pip install 'sleeper-spark[spark]' and import sleeper_spark")
    return _spark


def maintenance_jobs() -> MaintenanceJobs:
    if _maintenance is None:
        raise ConfigError("maintenance jobs are not loaded: import sleeper_spark")
    return _maintenance


def is_spark_dataframe(data: object) -> bool:
    return _spark is not None and _spark.is_dataframe(data)
