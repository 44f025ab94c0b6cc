"""The Spark tests share one SparkSession and the catalogs of ``tests.fixtures.spark``."""

from __future__ import annotations

import pytest

pytest.importorskip("pyspark")

from tests.fixtures.spark import (
    CATALOG_BACKENDS,
    CatalogFactory,
    catalog,
    catalog_factory,
    data_files,
    make_catalog,
    quiet_log4j2,
    referenced_files,
    spark,
)

__all__ = ["CATALOG_BACKENDS", "CatalogFactory", "catalog", "catalog_factory", "data_files", "make_catalog",
           "quiet_log4j2", "referenced_files", "spark"]
