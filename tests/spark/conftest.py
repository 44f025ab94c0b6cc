"""The Spark tests share one SparkSession and the catalogs of ``tests.fixtures.spark``."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("pyspark")

from pyspark.sql import SparkSession

from sleeper_spark.spark.common.jvm import NATIVE_CONF, native_entry
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
from tests.fixtures.sql_catalog import db, lake, session_catalog


@pytest.fixture(params=["native", "python"])
def io_path(request: pytest.FixtureRequest, spark: SparkSession) -> Iterator[str]:
    """Runs a test once on Spark's own Parquet reader and writer (the jar) and once on the Python
    data source, which is what a session without the jar gets."""
    if request.param == "native" and native_entry(spark) is None:
        pytest.fail("the package lacks its jar, which the repository keeps in sleeper_spark/jars: run scripts/build-jar.sh")
    if request.param == "python":
        spark.conf.set(NATIVE_CONF, "false")
    try:
        yield str(request.param)
    finally:
        spark.conf.unset(NATIVE_CONF)


__all__ = ["CATALOG_BACKENDS", "CatalogFactory", "catalog", "catalog_factory", "data_files", "db", "io_path", "lake",
           "make_catalog", "quiet_log4j2", "referenced_files", "session_catalog", "spark"]


@pytest.fixture
def entry(spark: SparkSession) -> Any:
    """The jar's entry point in the shared session; skips the test where the jar is not built."""
    found = native_entry(spark)
    if found is None:
        pytest.fail("the package lacks its jar, which the repository keeps in sleeper_spark/jars: run scripts/build-jar.sh")
    return found
