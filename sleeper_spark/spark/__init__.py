"""Spark integration: the ``sleeper`` Python data source and the helper API.

This is the only package that imports pyspark, and it does so lazily: importing it (which
``import sleeper_spark`` does) only registers the bridge through which ``Table`` hands Spark
DataFrames over, so the rest of the library works without pyspark installed.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from sleeper_spark.errors import ConfigError
from sleeper_spark.table.extensions import register_spark_bridge

if TYPE_CHECKING:
    from collections.abc import Mapping

    from sleeper_spark.errors import SleeperSparkError
    from sleeper_spark.models import Snapshot
    from sleeper_spark.table import Table
    from sleeper_spark.table.changes import ChangePlan
    from sleeper_spark.table.writes import PartialOverwrite


def register(spark: Any) -> None:
    """Registers the ``sleeper`` data source with ``spark`` and enables filter pushdown.

    Nothing else changes in the process: pyspark's classes are left as they are.

    Idempotent. The ``spark.sleeper.*`` session settings are read now for the
    ``format("sleeper")`` route (Spark's Python workers cannot see the session conf): call it
    again after changing them. ``cat.write`` / ``cat.read`` call it themselves.
    """
    from sleeper_spark.spark.bridge.datasource import register_source
    from sleeper_spark.spark.bridge.format_bridge import connect

    register_source(spark, connect)


def sleeper_error(error: BaseException) -> SleeperSparkError | None:
    """The sleeper_spark error that a Spark exception of ``format("sleeper")`` carries, if any.

    ``load()`` and ``save()`` raise Spark's exceptions as Spark raises them (this package patches
    none of pyspark's classes); the error they wrap is on their last sleeper_spark line. This
    gives it back, message first::

        try:
            spark.read.format("sleeper").options(**cat.options()).load("events")
        except Exception as error:
            raise ss.sleeper_error(error) or error from error

    The helper API (``cat.read``, ``cat.write``) raises the sleeper_spark error itself.
    """
    from sleeper_spark.spark.common.messages import sleeper_error as recover

    return recover(error)


class SparkDataFrames:
    """The :class:`~sleeper_spark.table.extensions.SparkBridge` that ``Table`` uses for Spark."""

    def is_dataframe(self, data: object) -> bool:
        # Duck-typed so that neither a check nor an import needs pyspark; covers Spark Connect too.
        return type(data).__module__.startswith("pyspark") and hasattr(data, "write") and hasattr(data, "schema")

    def write(self, table: Table, df: Any, mode: str, metadata: Mapping[str, str],
              app_id: str | None, app_version: int | None, merge_schema: bool = False,
              partial: PartialOverwrite | None = None) -> Snapshot:
        from sleeper_spark.spark import helper

        register(df.sparkSession)  # every helper call leaves format("sleeper") usable in the session
        return helper.write(table, df, mode, metadata, app_id, app_version, merge_schema, partial)

    def read(self, table: Table, spark: Any, version: int | None, timestamp: datetime | None) -> Any:
        from sleeper_spark.spark import helper

        register(spark)  # every helper call leaves format("sleeper") usable in the session
        return helper.read(table, spark, version, timestamp)

    def changes(self, table: Table, spark: Any, plan: ChangePlan) -> Any:
        from sleeper_spark.spark.changes import changes_frame

        return changes_frame(table, spark, plan)

    def merge(self, table: Table, source: Any, condition: str) -> Any:
        from sleeper_spark.spark.rows.merge_builder import MergeBuilder

        if not self.is_dataframe(source):
            raise ConfigError(f"merge takes a Spark DataFrame as its source, not a {type(source).__name__}")
        return MergeBuilder(table, source, condition)

    def update(self, table: Table, spark: Any, set: Mapping[str, str], where: str | None) -> Snapshot:
        from sleeper_spark.spark.rows.row_changes import update

        return update(table, spark, set, where)

    def delete(self, table: Table, spark: Any, where: str) -> Snapshot:
        if spark is None:
            raise ConfigError("a Spark SQL condition needs a SparkSession: table.delete_where(spark, \"day = 'd1'\"); "
                              "without one, pass a pyarrow.compute.Expression such as pc.field('day') == 'd1'")
        from sleeper_spark.spark.rows.row_changes import delete_rows

        return delete_rows(table, spark, where)


register_spark_bridge(SparkDataFrames())

__all__ = ["SparkDataFrames", "register", "sleeper_error"]
