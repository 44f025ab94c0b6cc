"""Compaction with its rewrite running in Spark tasks (the run's shared local[2] session)."""

from __future__ import annotations

import shutil
from typing import TYPE_CHECKING

import pytest

import sleeper_spark as ss
from sleeper_spark import maintenance
from tests.maintenance.tables import row_set, table_of_appends

pytest.importorskip("pyspark")

from tests.fixtures.spark import spark

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = [pytest.mark.spark, pytest.mark.slow,
              pytest.mark.skipif(shutil.which("java") is None, reason="Spark needs Java")]
__all__ = ["spark"]


def test_compaction_rewrites_in_spark_tasks_with_the_same_result(local_catalog: ss.Catalog,
                                                                 spark: SparkSession) -> None:
    # Given 16 small files over four partitions
    table = table_of_appends(local_catalog, 16, days=("d1", "d2", "d3", "d4"))
    before = row_set(table)
    # When a Spark session compacts it, one task per partition group
    snapshot = maintenance.compact(ss.Catalog(local_catalog.config).table("events"), spark, executor="spark")
    # Then the executors wrote one file per partition and the driver committed them
    assert snapshot is not None
    assert (snapshot.operation, snapshot.files_removed, snapshot.files_added) == ("compact", 16, 4)
    assert row_set(table) == before and len(table.files()) == 4
    assert table.verify().ok
