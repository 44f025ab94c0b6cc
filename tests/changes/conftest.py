"""MERGE and UPDATE share the SparkSession of ``tests.fixtures.spark``; they run on the local disk
and on the AWS test servers (DynamoDB Local + SeaweedFS), each on Spark's own reader and writer
and on the Python workers a session without the jar uses (``io_path``)."""

from __future__ import annotations

import pytest

pytest.importorskip("pyspark")

from tests.fixtures.spark import catalog, catalog_factory_over, spark
from tests.spark.conftest import io_path

CHANGE_BACKENDS = ["local", "aws"]
catalog_factory = catalog_factory_over(CHANGE_BACKENDS)

__all__ = ["CHANGE_BACKENDS", "catalog", "catalog_factory", "io_path", "spark"]
