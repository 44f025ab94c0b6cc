"""MERGE and UPDATE share the SparkSession of ``tests.fixtures.spark``; they run on the local disk
and on the AWS test servers (DynamoDB Local + SeaweedFS), each on Spark's own reader and writer
and on the Python workers a session without the jar uses (``io_path``).

A merge reaches a table through its API, whose commits every backend's contract suite checks:
by default the AWS servers run the tests in ``ON_AWS_BY_DEFAULT`` (a merge's rows against the
SQL semantics, reading and rewriting files on S3 from Spark's tasks), and a long run
(``SLEEPER_LONG_RUN=1``) all."""

from __future__ import annotations

import pytest

pytest.importorskip("pyspark")

from tests.fixtures.spark import catalog, catalog_factory_over, spark
from tests.reliability.budget import backend_repeats_in_long_run
from tests.spark.conftest import io_path

CHANGE_BACKENDS = ["local", "aws"]
catalog_factory = catalog_factory_over(CHANGE_BACKENDS)
ON_AWS_BY_DEFAULT = frozenset({"test_merge_matches_the_sql_semantics"})


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    backend_repeats_in_long_run(items, "tests/changes/", ("aws",), ON_AWS_BY_DEFAULT)


__all__ = ["CHANGE_BACKENDS", "catalog", "catalog_factory", "io_path", "spark"]
