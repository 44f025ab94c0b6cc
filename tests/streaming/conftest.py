"""The streaming tests share the SparkSession and catalogs of ``tests.fixtures.spark``."""

from __future__ import annotations

import pytest

pytest.importorskip("pyspark")

from tests.fixtures.spark import catalog, catalog_factory, spark

__all__ = ["catalog", "catalog_factory", "spark"]
