"""One local SparkSession for the Spark tests, and catalogs to run them against.

Catalogs come from ``catalog_factory``, parametrised by backend name: a backend is added by
adding its name to ``CATALOG_BACKENDS`` and a branch to ``_make_catalog`` (executors reach
the catalog through its options, so any backend they can reach works).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import sleeper_spark as ss

pyspark = pytest.importorskip("pyspark")

from pyspark.sql import SparkSession  # noqa: E402

CATALOG_BACKENDS = ["local"]
CatalogFactory = Callable[[], ss.Catalog]

_QUIET_LOG4J2 = """\
rootLogger.level = error
rootLogger.appenderRef.stdout.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n
logger.spark.name = org.apache.spark
logger.spark.level = error
"""


def quiet_log4j2(folder: Path) -> Path:
    path = folder / "log4j2.properties"
    path.write_text(_QUIET_LOG4J2)
    return path


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SparkSession]:
    # Python workers must run this interpreter (the one with sleeper_spark installed), and the
    # variable is read when the JVM starts its first worker: set it before the session exists.
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    folder = tmp_path_factory.mktemp("spark")
    log4j = quiet_log4j2(folder)
    session = (
        SparkSession.builder.master("local[2]")
        .appName("sleeper-spark-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.warehouse.dir", str(folder / "spark-warehouse"))
        .config("spark.driver.extraJavaOptions", f"-Dlog4j2.configurationFile=file:{log4j}")
        .getOrCreate()
    )
    ss.register(session)
    yield session
    session.stop()


@pytest.fixture(params=CATALOG_BACKENDS)
def catalog_factory(request: pytest.FixtureRequest, tmp_path: Path) -> CatalogFactory:
    """Makes catalogs over one fresh warehouse (each call opens it anew, as another process would)."""
    backend = str(request.param)
    warehouse = tmp_path / "warehouse"
    return lambda: make_catalog(backend, warehouse)


@pytest.fixture
def catalog(catalog_factory: CatalogFactory) -> ss.Catalog:
    return catalog_factory()


def make_catalog(backend: str, warehouse: Path) -> ss.Catalog:
    if backend == "local":
        return ss.Catalog.local(str(warehouse))
    raise AssertionError(f"unknown catalog backend {backend!r}")


def data_files(catalog: ss.Catalog, table: str) -> set[str]:
    """Every Parquet file stored under a table's folder (committed or not), relative to it."""
    prefix = f"{table}/"
    return {info.key[len(prefix):] for info in catalog.backend.store.list(prefix) if info.key.endswith(".parquet")}


def referenced_files(table: ss.Table) -> set[str]:
    """The data files some version of the table refers to."""
    return {f.path for snapshot in table.history() for f in table.files(snapshot.version)}
