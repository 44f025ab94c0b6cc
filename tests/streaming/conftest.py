"""The streaming tests share the SparkSession of ``tests.fixtures.spark``; they run on the local
disk and on the AWS test servers (DynamoDB Local + SeaweedFS)."""

from __future__ import annotations

import pytest

pytest.importorskip("pyspark")

from tests.fixtures.spark import catalog, catalog_factory_over, spark

STREAMING_BACKENDS = ["local", "aws"]
catalog_factory = catalog_factory_over(STREAMING_BACKENDS)

__all__ = ["STREAMING_BACKENDS", "catalog", "catalog_factory", "spark"]
